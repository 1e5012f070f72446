"""What the UI mirrors of each actor: pure ``load``/``apply`` pairs for ``orca.actor.Mirror``.

The UI owns nothing (docs/architecture.md §1): each actor's state reaches it as a Clone-pattern
mirror (snapshot over RPC, then that actor's events), folded here into small frozen
views. hooks rows use the contract's own ``load_mirror``/``apply_to_mirror`` (the one
fold every reader shares); the fates of exited panes come with the snapshot only.
Each function is pure and returns a new value, so a render never sees half an update.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from orca.contracts import gitwatch, hooks, ptyd
from orca.contracts import store as store_contract
from orca.contracts import supervisor as sup
from orca.model.agent_status import AgentStatusRow, PaneFate
from orca.model.codec import from_builtins, to_builtins
from orca.model.ids import make_worktree_id
from orca.model.types_repo import FolderWorkspace, ProjectGroup, Repo
from orca.wire.envelope import Event

LOCAL_HOST = "local"


# -- store ---------------------------------------------------------------------------
@dataclass(frozen=True)
class StoreView:
    """Repos, worktree display names and the local host's workspace session (builtins)."""

    repos: dict[str, Repo] = field(default_factory=dict)
    display_names: dict[str, str] = field(default_factory=dict)
    session: dict[str, Any] = field(default_factory=dict)  # wire names → builtins
    revision: int = 0  # the local host's topology revision
    # Folder workspaces (route A, seed 01 §5.1: non-git folders hung on a project
    # group) and the groups' names, for the sidebar.
    folders: dict[str, FolderWorkspace] = field(default_factory=dict)
    group_names: dict[str, str] = field(default_factory=dict)


def load_store(snap: store_contract.StateSnapshot) -> StoreView:
    state = snap.state
    repos = {}
    for raw in state.get("repos") or ():
        repo = from_builtins(Repo, raw)
        repos[repo.id] = repo
    names = {
        wt: str(meta.get("displayName") or "")
        for wt, meta in (state.get("worktreeMeta") or {}).items()
        if isinstance(meta, dict)
    }
    revisions = state.get("topologyRevisionByHostId") or {}
    folders = {}
    for raw in state.get("folderWorkspaces") or ():
        folder = from_builtins(FolderWorkspace, raw)
        folders[folder.id] = folder
    groups = {}
    for raw in state.get("projectGroups") or ():
        group = from_builtins(ProjectGroup, raw)
        groups[group.id] = group.name
    return StoreView(
        repos=repos,
        display_names=names,
        session=dict(state.get("workspaceSession") or {}),
        revision=int(revisions.get(LOCAL_HOST, 0)),
        folders=folders,
        group_names=groups,
    )


def apply_store(view: StoreView, _event: Event, data: Any) -> StoreView:
    if isinstance(data, store_contract.RepoAdded | store_contract.RepoUpdated):
        return replace(view, repos={**view.repos, data.repo.id: data.repo})
    if isinstance(data, store_contract.RepoRemoved):
        return replace(view, repos={k: v for k, v in view.repos.items() if k != data.id})
    if isinstance(data, store_contract.WorktreeMetaChanged):
        names = {**view.display_names, data.worktree_id: data.meta.display_name}
        return replace(view, display_names=names)
    if isinstance(data, store_contract.WorktreeMetaRemoved):
        gone = set(data.worktree_ids)
        return replace(
            view, display_names={k: v for k, v in view.display_names.items() if k not in gone}
        )
    if isinstance(data, store_contract.FolderWorkspaceUpserted):
        folder = data.folder_workspace
        return replace(view, folders={**view.folders, folder.id: folder})
    if isinstance(data, store_contract.FolderWorkspaceRemoved):
        return replace(view, folders={k: v for k, v in view.folders.items() if k != data.id})
    if isinstance(data, store_contract.ProjectGroupUpserted):
        group = data.project_group
        return replace(view, group_names={**view.group_names, group.id: group.name})
    if isinstance(data, store_contract.ProjectGroupRemoved):
        names = {k: v for k, v in view.group_names.items() if k != data.id}
        return replace(view, group_names=names)
    if isinstance(data, store_contract.SessionChanged) and data.host_id == LOCAL_HOST:
        kept = {k: v for k, v in view.session.items() if k not in data.removed}
        return replace(view, session={**kept, **data.fields}, revision=data.revision)
    if isinstance(data, store_contract.PaneRetired) and data.host_id == LOCAL_HOST:
        return replace(view, revision=max(view.revision, data.revision))
    return view


# -- hooks ---------------------------------------------------------------------------
@dataclass(frozen=True)
class StatusView:
    rows: dict[str, AgentStatusRow] = field(default_factory=dict)
    fates: tuple[PaneFate, ...] = ()


def load_status(snap: hooks.Snapshot) -> StatusView:
    return StatusView(rows=hooks.load_mirror(snap), fates=tuple(snap.fates))


def apply_status(view: StatusView, event: Event, data: Any) -> StatusView:
    rows = hooks.apply_to_mirror(view.rows, event, data)
    if isinstance(data, hooks.StatusSet):
        # A new row for a pane supersedes its recorded fate (the contract's rule).
        fates = tuple(f for f in view.fates if f.pane_key != data.row.pane_key)
        return StatusView(rows=rows, fates=fates)
    if isinstance(data, hooks.StatusCleared) and data.reason != "pty_exited":
        # A row cleared for another reason than its PTY's exit (the pane retired, its
        # worktree removed) takes the pane's fate with it, as hooks does.
        fates = tuple(f for f in view.fates if f.pane_key != data.pane_key)
        return StatusView(rows=rows, fates=fates)
    return StatusView(rows=rows, fates=view.fates)


# -- ptyd ----------------------------------------------------------------------------
def load_sessions(snap: ptyd.Snapshot) -> dict[str, ptyd.SessionRow]:
    return {s.session_id: s for s in snap.sessions}


def apply_sessions(
    sessions: dict[str, ptyd.SessionRow], _event: Event, data: Any
) -> dict[str, ptyd.SessionRow]:
    if isinstance(data, ptyd.SessionSpawned):
        row = ptyd.SessionRow(**{f: getattr(data, f) for f in ptyd.SessionRow.__struct_fields__})
        return {**sessions, row.session_id: row}
    if isinstance(data, ptyd.SessionClosed):
        return {k: v for k, v in sessions.items() if k != data.session_id}
    if isinstance(data, ptyd.SessionExited) and data.session_id in sessions:
        old = sessions[data.session_id]
        row = ptyd.SessionRow(
            **{
                **{f: getattr(old, f) for f in ptyd.SessionRow.__struct_fields__},
                "running": False,
                "exit_code": data.exit_code,
                "end_offset": data.end_offset,
            }
        )
        return {**sessions, row.session_id: row}
    if isinstance(data, ptyd.SessionResized) and data.session_id in sessions:
        old = sessions[data.session_id]
        fields = {f: getattr(old, f) for f in ptyd.SessionRow.__struct_fields__}
        row = ptyd.SessionRow(**{**fields, "cols": data.cols, "rows": data.rows})
        return {**sessions, row.session_id: row}
    if isinstance(data, ptyd.SessionRekeyed) and data.old in sessions:
        old = sessions[data.old]
        worktree_id = data.new.rsplit("@@", 1)[0]
        fields = {f: getattr(old, f) for f in ptyd.SessionRow.__struct_fields__}
        row = ptyd.SessionRow(**{**fields, "session_id": data.new, "worktree_id": worktree_id})
        moved = {k: v for k, v in sessions.items() if k != data.old}
        return {**moved, data.new: row}
    return sessions


# -- gitwatch ------------------------------------------------------------------------
@dataclass(frozen=True)
class WorktreeFacts:
    worktree_id: str
    repo_id: str
    path: str
    branch: str  # short name; "" when detached
    head: str
    is_main: bool
    dirty: int | None  # changed files (None: not computed yet)
    # commits ahead of / behind the comparison ref (gitwatch's AheadBehind); None when
    # there is no comparison ref or the counts are not known
    ahead_behind: tuple[int, int] | None = None


def _short_branch(ref: str) -> str:
    return ref.removeprefix("refs/heads/")


def _facts(repo_id: str, worktree_id: str, git: gitwatch.WorktreeGit, status: Any) -> WorktreeFacts:
    return WorktreeFacts(
        worktree_id=worktree_id,
        repo_id=repo_id,
        path=git.path,
        branch=_short_branch(git.branch),
        head=git.head,
        is_main=git.is_main_worktree,
        dirty=None if status is None else int(status.total),
        ahead_behind=None
        if git.ahead_behind is None
        else (git.ahead_behind.ahead, git.ahead_behind.behind),
    )


def load_git(snap: gitwatch.GitwatchSnapshot) -> dict[str, WorktreeFacts]:
    out: dict[str, WorktreeFacts] = {}
    for repo_id, repo in snap.repos.items():
        for path, wt in repo.worktrees.items():
            worktree_id = make_worktree_id(repo_id, path)
            out[worktree_id] = _facts(repo_id, worktree_id, wt.git, wt.git_status)
    return out


def apply_git(
    facts: dict[str, WorktreeFacts], _event: Event, data: Any
) -> dict[str, WorktreeFacts]:
    if isinstance(data, gitwatch.WorktreeAdded):
        old = facts.get(data.worktree_id)
        new = _facts(data.repo_id, data.worktree_id, data.git, None)
        if old is not None:
            new = replace(new, dirty=old.dirty)
        return {**facts, data.worktree_id: new}
    if isinstance(data, gitwatch.WorktreeChanged):
        new = _facts(data.repo_id, data.worktree_id, data.git, data.git_status)
        return {**facts, data.worktree_id: new}
    if isinstance(data, gitwatch.WorktreeRemoved):
        return {k: v for k, v in facts.items() if k != data.worktree_id}
    if isinstance(data, gitwatch.WorktreeRenamed):
        moved = {k: v for k, v in facts.items() if k != data.old_worktree_id}
        old = facts.get(data.old_worktree_id)
        if old is not None:
            moved[data.new_worktree_id] = replace(
                old, worktree_id=data.new_worktree_id, path=data.new_path
            )
        return moved
    return facts


# -- supervisor ----------------------------------------------------------------------
@dataclass(frozen=True)
class ServiceView:
    """orcad's children by name, in its order (``sup.status``'s list), and the fd
    keeper's pid. No event reports the keeper: its pid is as of the last snapshot."""

    actors: dict[str, sup.ActorStatus] = field(default_factory=dict)
    keeper_pid: int | None = None
    supervisor_pid: int | None = None  # orcad's own (its liveness is watched by pidfd)


def load_actors(snap: sup.Snapshot) -> ServiceView:
    return ServiceView(
        {a.name: a for a in snap.actors}, snap.supervisor.keeper_pid, snap.supervisor.pid
    )


def apply_actors(view: ServiceView, _event: Event, data: Any) -> ServiceView:
    actors = view.actors
    name = getattr(data, "name", None)
    if name is None or name not in actors:
        return view
    old = actors[name]
    if isinstance(data, sup.ActorStarted):
        new = replace_status(old, state="running", pid=data.pid)
    elif isinstance(data, sup.ActorExited):
        new = replace_status(old, state="backoff", pid=None)
    elif isinstance(data, sup.ActorRestarting):
        new = replace_status(old, state="backoff", restarts=data.restarts)
    elif isinstance(data, sup.ActorFailed):
        new = replace_status(old, state="failed", pid=None)
    else:
        return view
    return replace(view, actors={**actors, name: new})


def replace_status(old: sup.ActorStatus, **changes: Any) -> sup.ActorStatus:
    fields = {f: getattr(old, f) for f in sup.ActorStatus.__struct_fields__}
    return sup.ActorStatus(**{**fields, **changes})


def session_builtins(record: Any) -> dict[str, Any]:
    """A model record as the wire's builtins (for a session patch)."""
    return to_builtins(record)
