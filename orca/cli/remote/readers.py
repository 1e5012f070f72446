"""Remote hosts' rows next to local ones in ``worktree ps``, ``worktree ls``, ``term ls``.

Mirror, never merge (seed 03): the rows come from the local gateway's mirrors
(``gateway.mirrors``), are projected with the same model rules as local rows
(``orca.model.agent_status``), and are printed in their own rows, each labelled with
its host (``HOST`` column: ``local`` or the host's name; JSON: ``host`` and
``hostId``). Rows of a host whose link is down are printed as *unverifiable since
HH:MM:SS* (never as live) and never dropped. Nothing here writes any state.

Each ``*_with_remotes`` returns False when no remote host is followed (the command then
prints exactly what it printed before), True when it printed the combined listing.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only; the gateway contract imports every other contract
    from orca.contracts.gateway import HostLink, HostMirror

LOCAL_LABEL = "local"


def _mirrors() -> list[HostMirror]:
    from orca.remote.client import local_mirrors

    return local_mirrors() or []


def _unverifiable(link: HostLink) -> str | None:
    if link.reachable:
        return None
    if link.unverifiable_since is None:
        return "unverifiable (never reached)"
    return "unverifiable since " + time.strftime(
        "%H:%M:%S", time.localtime(link.unverifiable_since)
    )


def _label(link: HostLink) -> dict[str, Any]:
    return {
        "host": link.name,
        "hostId": link.host_id,
        "verifiable": link.reachable,
        "unverifiableSince": link.unverifiable_since,
    }


def _local_label() -> dict[str, Any]:
    from orca.host import current_host_id

    return {
        "host": LOCAL_LABEL,
        "hostId": current_host_id(),
        "verifiable": True,
        "unverifiableSince": None,
    }


def _print_table(columns: Sequence[str], rows: list[list[object]]) -> None:
    from orca.cli.output import print_table

    print_table(columns, rows)


# -- worktree ps ---------------------------------------------------------------------
def ps_with_remotes(
    local: list[dict[str, Any]], args: argparse.Namespace, sessions: list[Any] | None
) -> bool:
    """``worktree ps`` with every followed host's rows; ``sessions``: local ptyd's."""
    mirrors = _mirrors()
    if not mirrors:
        return False
    from orca.cli.output import print_json
    from orca.cli.tables import PS_COLUMNS, PS_STATE_COLUMN, ps_rows
    from orca.views.agent_handles import PsHandles, ps_handles, with_ps_handles
    from orca.views.ps import remote_ps

    now_ms = time.time_ns() // 1_000_000
    sections: list[tuple[dict[str, Any], str | None, list[dict[str, Any]], PsHandles]] = [
        (_local_label(), None, local, ps_handles(local, sessions))
    ]
    for mirror in mirrors:
        rows = remote_ps(mirror, now_ms, args.needs_me)
        host = mirror.link.name  # its terminals as `term read HOST:HANDLE` takes them
        paths = [(str(w.get("id", "")), str(w.get("path", ""))) for w in mirror.worktrees]
        found = ps_handles(rows, mirror.sessions, paths)
        handles = PsHandles(
            {k: f"{host}:{v}" for k, v in found.terminals.items()},
            {k: f"{host}:{v}" for k, v in found.worktrees.items()},
            {k: f"{host}:{v}" for k, v in found.sessions.items()},
        )
        sections.append((_label(mirror.link), _unverifiable(mirror.link), rows, handles))
    if args.json:
        print_json(
            "worktrees",
            [
                {**label, **w}
                for label, _, rows, handles in sections
                for w in with_ps_handles(rows, handles)
            ],
        )
        return True
    table: list[list[object]] = []
    for label, stale, rows, handles in sections:
        for row in ps_rows(rows, handles.terminals):
            if stale is not None:  # never shown as live: the last known state, labelled
                row[PS_STATE_COLUMN] = f"{stale} (last seen {row[PS_STATE_COLUMN]})"
            table.append([label["host"], *row])
    if not table:
        print("nothing needs you" if args.needs_me else "no agents reporting")
    else:
        _print_table(["HOST", *PS_COLUMNS], table)
    for label, stale, _, _ in sections[1:]:
        if stale is not None:
            print(
                f"orca: host {label['host']}: {stale}; its rows are its last known state",
                file=sys.stderr,
            )
    return True


# -- worktree ls ---------------------------------------------------------------------
# The remote store's notes shown over the (possibly older) gitwatch row: gitwatch
# re-lists on its own events, the mirror's store copy on every note change.
META_LABELS = ("displayName", "comment", "isPinned", "isArchived", "linkedIssue", "linkedPR")


def _local_repo_names() -> dict[str, str]:
    from orca.client.sync import invoke
    from orca.contracts import store
    from orca.wire.errors import OrcaError

    try:
        return {r.id: r.display_name for r in invoke(store.REPO_LIST, timeout=2.0).repos}
    except OrcaError:
        return {}


def remote_repo_names(mirror: HostMirror) -> dict[str, str]:
    """Repo id -> display name on that host (its store, mirrored)."""
    names: dict[str, str] = {}
    for repo in mirror.repos:
        rid, name = repo.get("id"), repo.get("displayName")
        if isinstance(rid, str) and isinstance(name, str):
            names[rid] = name
    return names


def meta_labels(mirror: HostMirror, worktree_id: str) -> dict[str, Any]:
    meta = mirror.worktree_meta.get(worktree_id) or {}
    return {k: meta[k] for k in META_LABELS if k in meta}


def worktrees_with_remotes(
    args: argparse.Namespace, shown: list[Any], handles: dict[str, str]
) -> bool:
    mirrors = _mirrors()
    if not mirrors:
        return False
    from orca.cli.output import print_json
    from orca.cli.tables import WORKTREE_COLUMNS, worktree_cells
    from orca.contracts.gitwatch import WorktreeRow
    from orca.model.codec import from_builtins, to_builtins
    from orca.views.handles import worktree_handles

    local_repos = _local_repo_names()
    local = [
        (
            {
                **_local_label(),
                "handle": handles[r.id],
                "repoName": local_repos.get(r.repo_id),
                **to_builtins(r),
            },
            r,
        )
        for r in shown
    ]
    entries: list[tuple[dict[str, Any], Any, str | None]] = [(d, r, None) for d, r in local]
    if getattr(args, "repo", None):
        mirrors = []  # --repo names a local repo: the listing is that repo's
    for mirror in mirrors:
        rows = []
        for raw in mirror.worktrees:
            try:
                rows.append(from_builtins(WorktreeRow, raw))
            except Exception:  # a row this build cannot read: the peer's, skipped
                continue
        remote_handles = worktree_handles((r.id, r.path) for r in rows)
        repo_names = remote_repo_names(mirror)
        stale = _unverifiable(mirror.link)
        for r in rows:
            if not args.all and not r.visible:
                continue
            handle = f"{mirror.link.name}:{remote_handles[r.id]}"
            entry = {
                **_label(mirror.link),
                "handle": handle,
                "repoName": repo_names.get(r.repo_id),
                **to_builtins(r),
                **meta_labels(mirror, r.id),
            }
            entries.append((entry, r, stale))
    if args.json:
        print_json("worktrees", [d for d, _, _ in entries])
        return True
    table: list[list[object]] = []
    for d, r, stale in entries:
        cells = worktree_cells(r, d["handle"], stale)
        table.append([d["host"], cells[0], d["repoName"], *cells[1:]])
    _print_table(["HOST", WORKTREE_COLUMNS[0], "REPO", *WORKTREE_COLUMNS[1:]], table)
    return True


# -- term ls ---------------------------------------------------------------------------
def remote_session_handles(mirror: HostMirror) -> dict[str, str]:
    """``HOST:<handle>`` per session of a mirrored host (what ``term read`` accepts)."""
    from orca.views.handles import session_handles

    paths = [(str(w.get("id", "")), str(w.get("path", ""))) for w in mirror.worktrees]
    handles = session_handles([(s.session_id, s.worktree_id) for s in mirror.sessions], paths)
    return {sid: f"{mirror.link.name}:{h}" for sid, h in handles.items()}


def sessions_with_remotes(
    args: argparse.Namespace, sessions: list[Any], handles: dict[str, str]
) -> bool:
    mirrors = _mirrors()
    if not mirrors:
        return False
    from orca.cli.output import human_bytes, print_json
    from orca.model.codec import to_builtins

    def shown(s: Any) -> bool:  # as the local listing: --json all but archived, else running
        if args.all:
            return True
        return not getattr(s, "archived", False) if args.json else bool(s.running)

    entries: list[tuple[dict[str, Any], Any, str, str | None]] = [
        (_local_label(), s, handles[s.session_id], None) for s in sessions if shown(s)
    ]
    for mirror in mirrors:
        remote = remote_session_handles(mirror)
        stale = _unverifiable(mirror.link)
        entries.extend(
            (_label(mirror.link), s, remote[s.session_id], stale)
            for s in mirror.sessions
            if shown(s)
        )
    if args.json:
        print_json(
            "sessions", [{**label, "handle": h, **to_builtins(s)} for label, s, h, _ in entries]
        )
        return True
    table: list[list[object]] = []
    for label, s, handle, stale in entries:
        state = "running" if s.running else f"exited {s.exit_code}"
        if stale is not None:
            state = f"{stale} (last seen {state})"
        table.append(
            [label["host"], handle, state, s.pid, human_bytes(s.end_offset), " ".join(s.argv)]
        )
    _print_table(["HOST", "TERMINAL", "STATE", "PID", "OUTPUT", "COMMAND"], table)
    return True
