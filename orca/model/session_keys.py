"""The three spellings of a worktree in session-map keys (seed 01 §4.5).

Session maps listed in ``WORKTREE_ID_KEYED_SESSION_FIELDS`` key rows by a worktree
in one of three forms, because the WorkspaceKey migration is unfinished and
``lastVisitedAtByWorktreeId`` is host-qualified:

* ``<worktreeId>``                     legacy bare id
* ``worktree:<worktreeId>``            canonical WorkspaceKey
* ``<executionHostId>|<worktreeId>``   host-qualified (bare id after the bar)

``folder:<id>`` keys name folder workspaces, not worktrees. Every reader and
rewriter of those keys goes through this module so the forms stay in step.
"""

from __future__ import annotations

import msgspec

from orca.model.hosts import is_execution_host_id
from orca.model.ids import WORKTREE_KEY_PREFIX, parse_workspace_key, split_worktree_id
from orca.model.session import HOST_QUALIFIED_KEY_SEPARATOR

__all__ = ["SessionKeyRef", "parse_session_key", "rekey_session_key"]


class SessionKeyRef(msgspec.Struct, frozen=True):
    """What a session-map key refers to.

    ``kind`` is ``"worktree"`` (``id`` is a worktree id) or ``"folder"`` (``id`` is a
    folder-workspace id); ``host_prefix`` is the ``<hostId>|`` part when present.
    """

    kind: str
    id: str
    host_prefix: str = ""


def parse_session_key(key: str) -> SessionKeyRef | None:
    """Interpret one session-map key; None when it is none of the known forms."""
    scope = parse_workspace_key(key)
    if scope is not None:
        return SessionKeyRef(scope.kind, scope.id)
    if split_worktree_id(key) is not None:
        return SessionKeyRef("worktree", key)
    host, sep, rest = key.partition(HOST_QUALIFIED_KEY_SEPARATOR)
    if sep and is_execution_host_id(host) and split_worktree_id(rest) is not None:
        return SessionKeyRef("worktree", rest, host + sep)
    return None


def rekey_session_key(key: str, old_worktree_id: str, new_worktree_id: str) -> str | None:
    """The same key spelled for ``new_worktree_id`` if ``key`` refers to the old id, else None."""
    if key == old_worktree_id:
        return new_worktree_id
    if key == WORKTREE_KEY_PREFIX + old_worktree_id:
        return WORKTREE_KEY_PREFIX + new_worktree_id
    ref = parse_session_key(key)
    if ref is not None and ref.host_prefix and ref.id == old_worktree_id:
        return ref.host_prefix + new_worktree_id
    return None
