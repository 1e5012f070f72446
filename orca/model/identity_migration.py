"""Re-keying a worktree after its folder moved (seed 01 §4.3; docs/protocols.md §1).

A worktree's id embeds its path, so ``git worktree move`` changes its identity.
The order is fixed: move on disk (the point of no return), then migrate the
identity synchronously, then notify -- nothing may run in between. The store
actor calls :func:`migrate_worktree_identity` for the middle step; it is pure.

What it does to a :class:`~orca.model.state.PersistedState`:

1. moves every record keyed by the old id to the new id: ``worktreeMeta``,
   ``worktreeLineageById``, ``workspaceLineageByChildKey`` and, in the session
   of *every* host, each map in ``WORKTREE_ID_KEYED_SESSION_FIELDS`` (bare,
   ``worktree:`` and host-qualified keys alike);
2. appends the old id to the new meta's ``priorWorktreeIds`` -- PTY sessions
   were minted under the old id, and without this record the session GC would
   take them for orphans and kill the user's running agent;
3. fixes back-references: ``worktreeId`` fields of tabs, groups and open files,
   lineage parents naming the old id, active pointers, and absolute paths under
   the old folder (terminal ``startupCwd``, open-file paths) so a reopened
   terminal does not spawn in a directory that no longer exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import msgspec

from orca.model.ids import parse_worktree_id, split_worktree_id_for_filesystem
from orca.model.session import WORKTREE_ID_KEYED_SESSION_FIELDS, WorkspaceSessionState
from orca.model.session_keys import rekey_session_key
from orca.model.state import PersistedState
from orca.model.tabs import PersistedOpenFile, Tab, TabGroup, TerminalTab
from orca.model.worktree import WorkspaceLineage, WorktreeLineage, WorktreeMeta

__all__ = [
    "WORKTREE_ID_KEYED_SESSION_FIELDS",
    "migrate_session_identity",
    "migrate_worktree_identity",
]

V = TypeVar("V")


class _Rename(msgspec.Struct, frozen=True):
    old_id: str
    new_id: str
    old_path: str
    new_path: str

    def key(self, key: str) -> str:
        return rekey_session_key(key, self.old_id, self.new_id) or key

    def path(self, path: str | None) -> str | None:
        """``path`` moved from under the old folder to the new one; other paths unchanged."""
        if path is None or path == self.old_path:
            return self.new_path if path is not None else None
        # Remote hosts may be Windows: use the separator the old path uses.
        sep = "\\" if "\\" in self.old_path and "/" not in self.old_path else "/"
        prefix = self.old_path.rstrip(sep) + sep
        if not path.startswith(prefix):
            return path
        return self.new_path.rstrip(sep) + sep + path[len(prefix) :]

    def wid(self, worktree_id: str) -> str:
        return self.new_id if worktree_id == self.old_id else worktree_id


def _rekey(rows: Mapping[str, V], rename: _Rename) -> dict[str, V]:
    return {rename.key(k): v for k, v in rows.items()}


def _fix_value(value: Any, rename: _Rename) -> Any:
    """Rewrite worktree ids and paths inside one session row value."""
    if isinstance(value, tuple):
        return tuple(_fix_value(v, rename) for v in value)
    if isinstance(value, (Tab, TabGroup)):
        return msgspec.structs.replace(value, worktree_id=rename.wid(value.worktree_id))
    if isinstance(value, TerminalTab):
        return msgspec.structs.replace(
            value,
            worktree_id=rename.wid(value.worktree_id),
            startup_cwd=rename.path(value.startup_cwd),
        )
    if isinstance(value, PersistedOpenFile):
        return msgspec.structs.replace(
            value, worktree_id=rename.wid(value.worktree_id), file_path=rename.path(value.file_path)
        )
    return value


def _migrate_session(session: WorkspaceSessionState, rename: _Rename) -> WorkspaceSessionState:
    changes: dict[str, Any] = {}
    for field in WORKTREE_ID_KEYED_SESSION_FIELDS:
        rows = getattr(session, field)
        if rows is not None:
            changes[field] = {k: _fix_value(v, rename) for k, v in _rekey(rows, rename).items()}
    if session.active_worktree_id is not None:
        changes["active_worktree_id"] = rename.key(session.active_worktree_id)
    if session.active_workspace_key is not None:
        changes["active_workspace_key"] = rename.key(session.active_workspace_key)
    changes["active_worktree_ids_on_shutdown"] = tuple(
        rename.wid(w) for w in session.active_worktree_ids_on_shutdown
    )
    return msgspec.structs.replace(session, **changes)


def _filesystem_path(worktree_id: str) -> str:
    parts = split_worktree_id_for_filesystem(worktree_id)
    if parts is None:
        parse_worktree_id(worktree_id)  # raises BadWorktreeId naming the bad input
        raise AssertionError("unreachable: parse_worktree_id accepted what split refused")
    return parts.path


def _rename_for(old_id: str, new_id: str) -> _Rename:
    return _Rename(old_id, new_id, _filesystem_path(old_id), _filesystem_path(new_id))


def migrate_session_identity(
    session: WorkspaceSessionState, old_id: str, new_id: str
) -> WorkspaceSessionState:
    """Re-key one session from ``old_id`` to ``new_id`` (step 1 and 3 for sessions)."""
    if old_id == new_id:
        return session
    return _migrate_session(session, _rename_for(old_id, new_id))


def _migrate_meta(metas: Mapping[str, WorktreeMeta], rename: _Rename) -> dict[str, WorktreeMeta]:
    out = dict(metas)
    meta = out.pop(rename.old_id, None) or out.get(rename.new_id) or WorktreeMeta()
    prior = [p for p in meta.prior_worktree_ids if p not in (rename.old_id, rename.new_id)]
    prior.append(rename.old_id)
    out[rename.new_id] = msgspec.structs.replace(meta, prior_worktree_ids=tuple(prior))
    return out


def _migrate_lineage(
    rows: Mapping[str, WorktreeLineage], rename: _Rename
) -> dict[str, WorktreeLineage]:
    return {
        rename.wid(k): msgspec.structs.replace(
            v,
            worktree_id=rename.wid(v.worktree_id),
            parent_worktree_id=rename.wid(v.parent_worktree_id),
        )
        for k, v in rows.items()
    }


def _migrate_workspace_lineage(
    rows: Mapping[str, WorkspaceLineage], rename: _Rename
) -> dict[str, WorkspaceLineage]:
    return {
        rename.key(k): msgspec.structs.replace(
            v,
            child_workspace_key=rename.key(v.child_workspace_key),
            parent_workspace_key=rename.key(v.parent_workspace_key),
        )
        for k, v in rows.items()
    }


def migrate_worktree_identity(state: PersistedState, old_id: str, new_id: str) -> PersistedState:
    """Move every worktree-keyed record from ``old_id`` to ``new_id`` (see module docstring).

    Raises BadWorktreeId when either id is malformed. Returns ``state`` itself when
    the ids are equal. The new meta always exists afterwards and lists ``old_id``
    in ``priorWorktreeIds``.
    """
    if old_id == new_id:
        return state
    rename = _rename_for(old_id, new_id)
    return msgspec.structs.replace(
        state,
        worktree_meta=_migrate_meta(state.worktree_meta, rename),
        worktree_lineage_by_id=_migrate_lineage(state.worktree_lineage_by_id, rename),
        workspace_lineage_by_child_key=_migrate_workspace_lineage(
            state.workspace_lineage_by_child_key, rename
        ),
        workspace_session=_migrate_session(state.workspace_session, rename),
        workspace_sessions_by_host_id={
            host: _migrate_session(s, rename)
            for host, s in state.workspace_sessions_by_host_id.items()
        },
    )
