"""Pure ops on worktree-keyed records: sticky notes, lineage, GC, identity (seed 01 §4, §7.5).

``identity.resolve`` serves ptyd's session-GC protocol (docs/protocols.md §1): a PTY session
minted under a worktree id may only be reaped when the store calls that id unknown.
An id is *current* when the store holds anything under it (meta, a session row in any
host partition, or it is a repo's main checkout; ``folder:<id>`` when that folder
workspace exists); an *alias* when it is listed in some
meta's ``priorWorktreeIds`` (the folder was renamed: the session belongs to the new id);
otherwise *unknown*. Removing a worktree's meta (``orca worktree rm``, the meta GC) hydrates
every session partition without it (``orca.model.hydrate``), so a removed worktree stops
being current and ptyd may reap its terminals.

GC of ``worktreeMeta`` (seed 01 §7.5 ②) is deliberately narrow. Only entries that are
local (their repo and the meta both on this machine: an existence check cannot see a
remote path), absolute, not a folder-repo workspace instance (``::workspace:``; that
record *is* the workspace), not owned by a project, and idle for 30 days are
candidates; the shell checks the filesystem in a worker thread and ``remove_stale_meta``
re-checks eligibility against the state of that moment.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from typing import Any, Final

import msgspec

from actors.store.change import Change, decode_record, patch_record
from actors.store.entities import repo_host
from actors.store.sessions import session_changed_event
from orca.contracts import store as contract
from orca.model.hosts import LOCAL_HOST_ID
from orca.model.hydrate import hydrate_workspace_session
from orca.model.identity_migration import migrate_worktree_identity
from orca.model.ids import (
    BadWorktreeId,
    is_folder_workspace_instance_id,
    make_worktree_id,
    parse_workspace_key,
    split_worktree_id,
)
from orca.model.lineage import current_parent, lineage_mismatch
from orca.model.session import WORKTREE_ID_KEYED_SESSION_FIELDS, WorkspaceSessionState
from orca.model.session_keys import parse_session_key
from orca.model.state import PersistedState, session_for_host, with_session_for_host
from orca.model.worktree import WorkspaceLineage, WorktreeLineage, WorktreeMeta
from orca.wire.errors import BadRequest, Conflict, NotFound

replace = msgspec.structs.replace

# Upstream found 63% of worktreeMeta entries dead on a heavy machine; a path can vanish
# for a while (unmounted disk, branch switch scripts), so wait 30 idle days.
WORKTREE_META_GC_GRACE_MS: Final = 30 * 24 * 3600 * 1000


def _require_worktree_id(worktree_id: str) -> None:
    if split_worktree_id(worktree_id) is None:
        raise BadRequest(f"not a worktree id ('<repoId>::<path>'): {worktree_id!r}")


def _meta_changed(state: PersistedState, worktree_id: str, meta: WorktreeMeta) -> Change:
    if state.worktree_meta.get(worktree_id) == meta:
        return Change(state, meta)
    metas = dict(state.worktree_meta)
    metas[worktree_id] = meta
    event = contract.WorktreeMetaChanged(worktree_id=worktree_id, meta=meta)
    return Change(replace(state, worktree_meta=metas), meta, (event,))


def set_meta(state: PersistedState, worktree_id: str, raw: dict[str, Any]) -> Change:
    _require_worktree_id(worktree_id)
    return _meta_changed(state, worktree_id, decode_record(WorktreeMeta, raw, "worktree meta"))


def patch_meta(state: PersistedState, worktree_id: str, patch: dict[str, Any]) -> Change:
    """Merge ``patch`` into the meta (created from defaults when absent)."""
    _require_worktree_id(worktree_id)
    current = state.worktree_meta.get(worktree_id) or WorktreeMeta()
    return _meta_changed(state, worktree_id, patch_record(current, patch, "worktree meta"))


def _remove_metas(state: PersistedState, worktree_ids: list[str]) -> Change:
    """Drop the metas and, with them, their lineage rows (the instance is gone, and a new
    worktree at the same path must not inherit its parent, seed 01 §4.4) and every
    session row naming them (``_drop_session_rows_of``)."""
    gone = [w for w in worktree_ids if w in state.worktree_meta]
    if not gone:
        return Change(state, contract.MetasRemoved(removed=[]))
    metas = {k: v for k, v in state.worktree_meta.items() if k not in gone}
    events: list[msgspec.Struct] = [contract.WorktreeMetaRemoved(worktree_ids=gone)]
    lineage = dict(state.worktree_lineage_by_id)
    for worktree_id in gone:
        if lineage.pop(worktree_id, None) is not None:
            events.append(contract.LineageChanged(worktree_id=worktree_id, lineage=None))
    new_state = replace(state, worktree_meta=metas, worktree_lineage_by_id=lineage)
    new_state, session_events = _drop_session_rows_of(new_state, gone)
    events.extend(session_events)
    return Change(new_state, contract.MetasRemoved(removed=gone), tuple(events))


def remove_meta(state: PersistedState, worktree_id: str) -> Change:
    """``worktreeMeta.remove``: gitwatch removed the worktree (``orca worktree rm``).

    A worktree made outside Orca has no meta, yet session rows may name it: those
    still go (the result lists no meta); ``not_found`` only when nothing names it."""
    if worktree_id not in state.worktree_meta:
        new_state, events = _drop_session_rows_of(state, [worktree_id])
        if not events:
            raise NotFound(f"no worktree meta for {worktree_id!r}")
        return Change(new_state, contract.MetasRemoved(removed=[]), tuple(events))
    return _remove_metas(state, [worktree_id])


def _drop_session_rows_of(
    state: PersistedState, gone: Collection[str]
) -> tuple[PersistedState, list[msgspec.Struct]]:
    """Every host's session hydrated without the workspaces in ``gone`` (seed 01 §3 step
    3, §7.3), and a ``session.changed`` for each partition that changed.

    The store cannot list the worktrees that exist (gitwatch can), but it is told when
    one stops existing: its meta is removed (``orca worktree rm``, the meta GC). So the
    valid set handed to ``hydrate_workspace_session`` is every workspace the partition
    names except ``gone``. Until then a dead worktree's rows made ``resolve_identity``
    answer ``current`` for it, so ptyd's GC never reaped its terminals. A partition that
    names none of ``gone`` is left exactly as it is (no incidental repair).

    Known limit: the topology revision is not bumped (each revision is one logged pane
    retirement, ``retired_log``), so a writer holding an older copy of the session can
    still write the rows back with a full ``session.set``.
    """
    dead = set(gone)
    events: list[msgspec.Struct] = []
    for host in [LOCAL_HOST_ID, *state.workspace_sessions_by_host_id]:
        before = session_for_host(state, host)
        named = _session_worktree_ids(before) | set(before.active_worktree_ids_on_shutdown)
        for pointer in (before.active_worktree_id, before.active_workspace_key):
            ref = parse_session_key(pointer) if pointer else None
            if ref is not None and ref.kind == "worktree":
                named.add(ref.id)
        if named.isdisjoint(dead):
            continue
        after = _keep_other_terminal_layouts(
            before, hydrate_workspace_session(before, named - dead), dead
        )
        if after != before:
            state = with_session_for_host(state, host, after)
            events.append(session_changed_event(state, host, before))
    return state, events


def _last_touched_ms(meta: WorktreeMeta) -> int:
    return max(meta.last_activity_at, meta.created_at or 0, meta.orca_created_at or 0)


def gc_candidates(state: PersistedState, now_ms: int) -> list[tuple[str, str]]:
    """``(worktree id, path)`` of entries that GC removes if their path is gone."""
    repos = {r.id: r for r in state.repos}
    out: list[tuple[str, str]] = []
    for worktree_id, meta in state.worktree_meta.items():
        parts = split_worktree_id(worktree_id)
        if parts is None or is_folder_workspace_instance_id(worktree_id):
            continue
        repo = repos.get(parts.repo_id)
        if repo is None or repo_host(repo) != LOCAL_HOST_ID:
            continue
        if meta.host_id not in (None, LOCAL_HOST_ID) or meta.project_id is not None:
            continue
        if not os.path.isabs(parts.path) or parts.path.startswith("\\\\"):
            continue
        if now_ms - _last_touched_ms(meta) < WORKTREE_META_GC_GRACE_MS:
            continue
        out.append((worktree_id, parts.path))
    return out


def remove_stale_meta(state: PersistedState, gone: list[str], now_ms: int) -> Change:
    """Remove the ``gone`` entries that are still GC candidates now."""
    eligible = {w for w, _ in gc_candidates(state, now_ms)}
    return _remove_metas(state, [w for w in gone if w in eligible])


def set_lineage(state: PersistedState, worktree_id: str, raw: dict[str, Any] | None) -> Change:
    """Set (or with ``None`` clear) who spawned ``worktree_id``."""
    _require_worktree_id(worktree_id)
    rows = dict(state.worktree_lineage_by_id)
    if raw is None:
        if rows.pop(worktree_id, None) is None:
            return Change(state, None)
        lineage: WorktreeLineage | None = None
    else:
        lineage = decode_record(WorktreeLineage, raw, "worktree lineage")
        if lineage.worktree_id != worktree_id:
            raise BadRequest("lineage.worktreeId must equal the worktree id it is stored under")
        mismatch = lineage_mismatch(state.worktree_meta, lineage)
        if mismatch == "stale_child":
            meta = state.worktree_meta[worktree_id]
            raise Conflict(
                f"worktreeInstanceId {lineage.worktree_instance_id!r} is not the instance at"
                f" {worktree_id!r} ({meta.instance_id!r}): the path was reused"
            )
        if mismatch == "stale_parent":
            parent = state.worktree_meta[lineage.parent_worktree_id]
            raise Conflict(
                f"parentWorktreeInstanceId {lineage.parent_worktree_instance_id!r} is not the"
                f" instance at {lineage.parent_worktree_id!r} ({parent.instance_id!r})"
            )
        if rows.get(worktree_id) == lineage:
            return Change(state, lineage)
        rows[worktree_id] = lineage
    event = contract.LineageChanged(worktree_id=worktree_id, lineage=lineage)
    return Change(replace(state, worktree_lineage_by_id=rows), lineage, (event,))


def lineage_view(state: PersistedState, worktree_id: str) -> contract.LineageView:
    """``lineage.get``: the row only while the instance ids agree (``orca.model.lineage``)."""
    _require_worktree_id(worktree_id)
    row, verdict = current_parent(state.worktree_meta, state.worktree_lineage_by_id, worktree_id)
    return contract.LineageView(worktree_id=worktree_id, lineage=row, verdict=verdict)


def set_workspace_lineage(
    state: PersistedState, child_key: str, raw: dict[str, Any] | None
) -> Change:
    """Set (or with ``None`` clear) the lineage of a WorkspaceKey (folders included)."""
    rows = dict(state.workspace_lineage_by_child_key)
    if raw is None:
        if rows.pop(child_key, None) is None:
            return Change(state, None)
        lineage: WorkspaceLineage | None = None
    else:
        lineage = decode_record(WorkspaceLineage, raw, "workspace lineage")
        if lineage.child_workspace_key != child_key:
            raise BadRequest("childWorkspaceKey must equal the key it is stored under")
        if rows.get(child_key) == lineage:
            return Change(state, lineage)
        rows[child_key] = lineage
    event = contract.WorkspaceLineageChanged(child_workspace_key=child_key, lineage=lineage)
    return Change(replace(state, workspace_lineage_by_child_key=rows), lineage, (event,))


def migrate_identity(state: PersistedState, old_id: str, new_id: str) -> Change:
    """Re-key everything from ``old_id`` to ``new_id`` after a folder move; flushed at once."""
    try:
        migrated = migrate_worktree_identity(state, old_id, new_id)
    except BadWorktreeId as exc:
        raise BadRequest(str(exc)) from exc
    result = contract.IdentityMigrated(old_id=old_id, new_id=new_id)
    if migrated is state:
        return Change(state, result)
    # The rename first (ptyd re-keys its sessions on it), then the exact record changes
    # so any mirror of metas or sessions converges without re-deriving the migration.
    events: list[msgspec.Struct] = [contract.WorktreeRenamed(old_id=old_id, new_id=new_id)]
    if old_id in state.worktree_meta:
        events.append(contract.WorktreeMetaRemoved(worktree_ids=[old_id]))
    new_meta = migrated.worktree_meta[new_id]
    events.append(contract.WorktreeMetaChanged(worktree_id=new_id, meta=new_meta))
    hosts = [LOCAL_HOST_ID, *migrated.workspace_sessions_by_host_id]
    for host in hosts:
        before = session_for_host(state, host)
        if session_for_host(migrated, host) != before:
            events.append(session_changed_event(migrated, host, before))
    return Change(migrated, result, tuple(events), durability="flush")


def _keep_other_terminal_layouts(
    before: WorkspaceSessionState, after: WorkspaceSessionState, dead: set[str]
) -> WorkspaceSessionState:
    """``after`` with the terminal layouts (and unsupported-PTY marks) of ``before`` that no
    tab of a ``dead`` workspace refers to put back: the hydrate keeps a layout only while
    a tab refers to it, but a layout saved on its own (a client that saves panes, not
    tabs) binds live PTYs and is no row of the removed worktree."""
    dead_tabs: set[str] = set()
    for field in ("tabs_by_worktree", "unified_tabs"):
        for key, tabs in (getattr(before, field) or {}).items():
            ref = parse_session_key(key)
            if ref is not None and ref.kind == "worktree" and ref.id in dead:
                dead_tabs.update(t.id for t in tabs)
                dead_tabs.update(getattr(t, "entity_id", t.id) for t in tabs)
    layouts = {
        k: v
        for k, v in before.terminal_layouts_by_tab_id.items()
        if k in after.terminal_layouts_by_tab_id or k not in dead_tabs
    }
    marks = {
        k: v
        for k, v in before.unsupported_pty_ids_by_tab_id.items()
        if k in after.unsupported_pty_ids_by_tab_id or k not in dead_tabs
    }
    return replace(after, terminal_layouts_by_tab_id=layouts, unsupported_pty_ids_by_tab_id=marks)


def _session_worktree_ids(session: WorkspaceSessionState) -> set[str]:
    ids: set[str] = set()
    for name in WORKTREE_ID_KEYED_SESSION_FIELDS:
        rows = getattr(session, name)
        for key in rows or ():
            ref = parse_session_key(key)
            if ref is not None and ref.kind == "worktree":
                ids.add(ref.id)
    return ids


def resolve_identity(state: PersistedState, worktree_id: str) -> contract.IdentityResolved:
    """current (with ``worktree_id`` itself), alias (with the current id) or unknown."""
    current = contract.IdentityResolved(status="current", worktree_id=worktree_id)
    unknown = contract.IdentityResolved(status="unknown", worktree_id=None)
    if worktree_id in state.worktree_meta:
        return current
    scope = parse_workspace_key(worktree_id)
    if scope is not None and scope.kind == "folder":
        return current if any(f.id == scope.id for f in state.folder_workspaces) else unknown
    for repo in state.repos:
        if make_worktree_id(repo.id, repo.path) == worktree_id:
            return current
    sessions = [state.workspace_session, *state.workspace_sessions_by_host_id.values()]
    if any(worktree_id in _session_worktree_ids(s) for s in sessions):
        return current
    for current_id, meta in state.worktree_meta.items():
        if worktree_id in meta.prior_worktree_ids:
            return contract.IdentityResolved(status="alias", worktree_id=current_id)
    return unknown
