"""The sidebar's rows: repos → worktrees → panes, projected from the mirrors (pure).

Agent lights come from ``orca.model.agent_status.project_worktrees`` with ptyd's facts,
the same projection ``orca worktree ps`` prints, so the UI and the CLI never read a
pane differently; "needs me" is the model's ``needs_user``. Nothing here re-decides a
state: the only ordering added is the sidebar's (worktrees with an agent that needs
the user first, when asked), and a text filter.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from actors.ui.mirrors import WorktreeFacts
from orca.contracts import ptyd
from orca.contracts.gateway import HostMirror
from orca.model.agent_status import (
    AgentStatusRow,
    PaneFate,
    needs_user,
    project_worktrees,
    terminal_facts,
)
from orca.model.ids import split_worktree_id
from orca.model.types_repo import FolderWorkspace, Repo
from orca.remote.client import link_text

# A folder workspace's projected worktree id (seed 01 §4.5): ``folder:<id>``.
FOLDER_PREFIX = "folder:"
# The sidebar group of folder workspaces whose project group is not known.
FOLDERS_GROUP = "folders"

# One character per light (and a word for screen readers and tests).
LIGHT_GLYPHS: Mapping[str, str] = {
    "working": "●",
    "blocked": "■",
    "waiting": "◆",
    "done": "✓",
    "idle": "○",
    "exited": "✗",
    "gone": "✗",
    "unverifiable": "?",
}
LIGHT_COLOURS: Mapping[str, str] = {
    "working": "green",
    "blocked": "red",
    "waiting": "yellow",
    "done": "cyan",
    "idle": "grey50",
    "exited": "grey50",
    "gone": "grey50",
    "unverifiable": "grey50",
}
# A remote host's sidebar group (issue 18): ``remote:<host>``, titled ``<host> (remote)``.
REMOTE_PREFIX = "remote:"


@dataclass(frozen=True)
class PaneLight:
    pane_key: str
    agent: str
    state: str  # the projection's displayState
    unread: bool
    needs_me: bool
    detail: str


@dataclass(frozen=True)
class WorktreeItem:
    worktree_id: str
    repo_id: str
    name: str
    branch: str
    dirty: int | None
    summary: str  # the shared summary's state ("idle" with no agents)
    lights: tuple[PaneLight, ...]
    sessions: int  # running terminals in this worktree
    # A remote host's row (read-only): its host name, and why it is not live (the link
    # is down: "unverifiable since HH:MM:SS"), None when it is.
    host: str = ""
    unverifiable: str | None = None
    ahead_behind: tuple[int, int] | None = None  # commits (ahead, behind); see gitwatch

    @property
    def needs_me(self) -> bool:
        return any(light.needs_me for light in self.lights)

    def matches(self, text: str) -> bool:
        needle = text.casefold()
        return not needle or any(
            needle in value.casefold() for value in (self.name, self.branch, self.worktree_id)
        )


@dataclass(frozen=True)
class RepoGroup:
    repo_id: str
    name: str
    worktrees: tuple[WorktreeItem, ...]


def build_sidebar(
    *,
    repos: Mapping[str, Repo],
    git: Mapping[str, WorktreeFacts],
    display_names: Mapping[str, str],
    rows: Mapping[str, AgentStatusRow],
    fates: Iterable[PaneFate],
    sessions: Mapping[str, ptyd.SessionRow] | None,
    now_ms: int,
    filter_text: str = "",
    needs_me_first: bool = False,
    folders: Mapping[str, FolderWorkspace] | None = None,
    group_names: Mapping[str, str] | None = None,
) -> list[RepoGroup]:
    """The sidebar, repo by repo, then folder workspaces by project group (``folders``,
    archived ones left out); ``sessions`` None means ptyd's facts are unknown."""
    facts = None if sessions is None else terminal_facts(sessions.values())
    projected = {
        str(w["worktreeId"]): w for w in project_worktrees(rows.values(), now_ms, facts, fates)
    }
    running: dict[str, int] = {}
    for s in (sessions or {}).values():
        if s.running:
            running[s.worktree_id] = running.get(s.worktree_id, 0) + 1
    folder_ids = {FOLDER_PREFIX + f.id: f for f in (folders or {}).values()}
    known = (set(git) | set(projected)) - {k for k in projected if k.startswith(FOLDER_PREFIX)}
    by_repo: dict[str, list[WorktreeItem]] = {}

    def lights_of(worktree_id: str) -> tuple[str, tuple[PaneLight, ...]]:
        entry = projected.get(worktree_id)
        if entry is None:
            return "idle", ()
        return str(entry["summary"]["state"]), tuple(  # type: ignore[index]
            PaneLight(
                pane_key=str(a["paneKey"]),
                agent=str(a["agent"]),
                state=str(a["displayState"]),
                unread=bool(a["unread"]),
                needs_me=needs_user(a),
                detail=str(a["detail"] or ""),
            )
            for a in entry["agents"]  # type: ignore[attr-defined]
        )

    folder_groups: dict[str, list[WorktreeItem]] = {}
    for worktree_id, folder in folder_ids.items():
        if folder.is_archived:
            continue
        summary, lights = lights_of(worktree_id)
        group = FOLDERS_GROUP + ":" + folder.project_group_id
        item = WorktreeItem(
            worktree_id=worktree_id,
            repo_id=group,
            name=folder.name or os.path.basename(folder.folder_path.rstrip("/")),
            branch="",
            dirty=None,
            summary=summary,
            lights=lights,
            sessions=running.get(worktree_id, 0),
        )
        if item.matches(filter_text):
            folder_groups.setdefault(group, []).append(item)
    for worktree_id in known:
        facts_row = git.get(worktree_id)
        parts = split_worktree_id(worktree_id)
        repo_id = facts_row.repo_id if facts_row else (parts.repo_id if parts else "?")
        path = facts_row.path if facts_row else (parts.path if parts else worktree_id)
        summary, lights = lights_of(worktree_id)
        item = WorktreeItem(
            worktree_id=worktree_id,
            repo_id=repo_id,
            name=display_names.get(worktree_id) or os.path.basename(path.rstrip("/")) or path,
            branch=facts_row.branch if facts_row else "",
            dirty=facts_row.dirty if facts_row else None,
            ahead_behind=facts_row.ahead_behind if facts_row else None,
            summary=summary,
            lights=lights,
            sessions=running.get(worktree_id, 0),
        )
        if item.matches(filter_text):
            by_repo.setdefault(repo_id, []).append(item)
    groups = []
    for repo_id, items in by_repo.items():
        if needs_me_first:
            items.sort(key=lambda i: (not i.needs_me, i.name, i.worktree_id))
        else:
            items.sort(key=lambda i: (not _is_main(git.get(i.worktree_id)), i.name, i.worktree_id))
        repo = repos.get(repo_id)
        groups.append(RepoGroup(repo_id, repo.display_name if repo else repo_id, tuple(items)))
    groups.sort(
        key=lambda g: (not (needs_me_first and any(i.needs_me for i in g.worktrees)), g.name)
    )
    names = group_names or {}
    folder_list = []
    for group_key, items in folder_groups.items():
        items.sort(key=lambda i: (not (needs_me_first and i.needs_me), i.name, i.worktree_id))
        group_id = group_key.split(":", 1)[1]
        title = f"{names.get(group_id) or FOLDERS_GROUP} (folders)"
        folder_list.append(RepoGroup(group_key, title, tuple(items)))
    folder_list.sort(key=lambda g: g.name)
    return groups + folder_list


def _is_main(facts: WorktreeFacts | None) -> bool:
    return facts is not None and facts.is_main


def next_needing_me(groups: Iterable[RepoGroup], after: str | None) -> PaneLight | None:
    """The next pane (cycling past ``after``, a pane key) whose agent needs the user."""
    lights = [light for g in groups for w in g.worktrees for light in w.lights if light.needs_me]
    if not lights:
        return None
    keys = [light.pane_key for light in lights]
    if after in keys:
        return lights[(keys.index(after) + 1) % len(lights)]
    return lights[0]


def build_remote_groups(
    mirrors: Iterable[HostMirror], now_ms: int, filter_text: str = ""
) -> list[RepoGroup]:
    """One read-only group per remote host the local gateway mirrors (issue 18), its
    rows projected by the same rules as ``orca worktree ps`` (``orca.views.ps.remote_ps``).
    A host whose link is down keeps its rows, each light shown ``unverifiable``."""
    from orca.views.ps import remote_ps

    groups = []
    for mirror in mirrors:
        link = mirror.link
        stale = link_text(link)
        stale_text = None if link.reachable else stale
        names = {str(w.get("id", "")): str(w.get("path", "")) for w in mirror.worktrees}
        items = []
        for entry in remote_ps(mirror, now_ms, needs_me=False):
            worktree_id = str(entry["worktreeId"])
            path = names.get(worktree_id) or worktree_id
            meta = mirror.worktree_meta.get(worktree_id) or {}
            lights = tuple(
                PaneLight(
                    pane_key=str(a["paneKey"]),
                    agent=str(a["agent"]),
                    state=str(a["displayState"]) if stale_text is None else "unverifiable",
                    unread=bool(a["unread"]),
                    needs_me=stale_text is None and needs_user(a),
                    detail=str(a["detail"] or "")
                    if stale_text is None
                    else f"{stale_text} (last seen {a['displayState']})",
                )
                for a in entry["agents"]  # type: ignore[attr-defined]
            )
            item = WorktreeItem(
                worktree_id=f"{REMOTE_PREFIX}{link.name}:{worktree_id}",
                repo_id=REMOTE_PREFIX + link.name,
                name=str(meta.get("displayName") or "")
                or os.path.basename(path.rstrip("/"))
                or path,
                branch="",
                dirty=None,
                summary="unverifiable" if stale_text else str(entry["summary"]["state"]),  # type: ignore[index]
                lights=lights,
                sessions=sum(
                    1 for s in mirror.sessions if s.running and s.worktree_id == worktree_id
                ),
                host=link.name,
                unverifiable=stale_text,
            )
            if item.matches(filter_text):
                items.append(item)
        items.sort(key=lambda i: (i.name, i.worktree_id))
        title = f"{link.name} (remote)" + ("" if stale_text is None else f" - {stale_text}")
        groups.append(RepoGroup(REMOTE_PREFIX + link.name, title, tuple(items)))
    return groups
