"""Worktree ids, folder-workspace ids and WorkspaceKeys (seed 01 §4.2, §4.5, §5.1).

A worktree id is ``${repoId}::${path}``: the path *is* the identity, so no
registry is needed and a directory created outside Orca is claimed on the next
refresh. The separator is defined here once; every parser in every actor calls
these functions (a second, looser parser is how the upstream "REMOTE mislabel"
bug started, seed 01 §8.1).

Shapes
------
* worktree id:                ``<repoId>::<path>``
* folder-repo session id:     ``<repoId>::<path>::workspace:<instanceId>`` (route B)
* folder workspace (route A): the record id is an opaque ``<uuid>``; its key and
  its projected worktree id are both ``folder:<uuid>``
* WorkspaceKey:               ``worktree:<worktreeId>`` or ``folder:<folderWorkspaceId>``
* terminal owner id:          a worktree id or a projected folder worktree id
  ``folder:<id>``: what a PTY session id embeds (:func:`is_terminal_owner_id`)

Invariants that make every shape parse back unambiguously: a repo id contains
no ``:`` or ``|`` (repo ids are UUIDs; ``|`` separates host-qualified
session keys, see ``orca.model.session_keys``), a folder-workspace id and an instance id contain
no ``:`` or ``/``, and paths are non-empty.

Two splitters, by purpose: :func:`split_worktree_id` returns the identity (the
``::workspace:<id>`` suffix stays on the path); :func:`split_worktree_id_for_filesystem`
returns the real directory to use as cwd. Using the wrong one points a terminal
at a directory named ``.../foo::workspace:abc`` that does not exist.

Terminals live in both workspace forms (seed 01 §5.1: a folder is dressed up as a
worktree so tabs and terminals share one code path). The two owner shapes cannot be
confused: a worktree id contains ``::`` and a folder-workspace id contains no ``:``,
so ``folder:<id>`` is never a ``<repoId>::<path>``. A folder-workspace id that owns
terminals also contains no ``@@`` (the PTY session separator, ``orca.model.panes``):
the store mints UUIDs, and this keeps an owner ``folder:<id>`` from also reading as
a session id (a folder record with such an id is listed, but holds no terminal).
"""

from __future__ import annotations

from typing import Final, Literal

import msgspec

__all__ = [
    "FOLDER_WORKSPACE_INSTANCE_SEPARATOR",
    "FOLDER_WORKSPACE_KEY_PREFIX",
    "WORKTREE_ID_SEPARATOR",
    "WORKTREE_KEY_PREFIX",
    "BadWorkspaceKey",
    "BadWorktreeId",
    "WorkspaceScope",
    "WorktreeIdParts",
    "folder_workspace_id_of_worktree_id",
    "folder_workspace_key",
    "is_folder_workspace_instance_id",
    "is_terminal_owner_id",
    "make_folder_workspace_instance_id",
    "make_worktree_id",
    "parse_workspace_key",
    "parse_worktree_id",
    "repo_id_of_worktree_id",
    "split_worktree_id",
    "split_worktree_id_for_filesystem",
    "worktree_id_of_session_key",
    "worktree_workspace_key",
]

WORKTREE_ID_SEPARATOR: Final = "::"
FOLDER_WORKSPACE_INSTANCE_SEPARATOR: Final = "::workspace:"
WORKTREE_KEY_PREFIX: Final = "worktree:"
FOLDER_WORKSPACE_KEY_PREFIX: Final = "folder:"
# orca.model.panes.PTY_SESSION_ID_SEPARATOR (panes imports this module, not back).
_PTY_SESSION_SEPARATOR: Final = "@@"


class BadWorktreeId(ValueError):
    """A string that should be a worktree id is not one (the caller is at fault)."""


class BadWorkspaceKey(ValueError):
    """A string that should be a WorkspaceKey is not one (the caller is at fault)."""


class WorktreeIdParts(msgspec.Struct, frozen=True):
    """A worktree id split into its repo id and its (identity) path."""

    repo_id: str
    path: str


class WorkspaceScope(msgspec.Struct, frozen=True):
    """What a WorkspaceKey points at: a worktree id or a folder-workspace id."""

    kind: Literal["worktree", "folder"]
    id: str


def _valid_repo_id(repo_id: str) -> bool:
    # ':' would make the id split ambiguous; '|' separates host-qualified session keys.
    return bool(repo_id) and ":" not in repo_id and "|" not in repo_id


def _valid_token(token: str) -> bool:
    return bool(token) and ":" not in token and "/" not in token


def make_worktree_id(repo_id: str, path: str) -> str:
    """Build ``<repoId>::<path>``; raises BadWorktreeId for an empty path or a repo id with ':'."""
    if not _valid_repo_id(repo_id):
        raise BadWorktreeId(
            f"repo id must be non-empty and contain no ':' or '|' (got {repo_id!r})"
        )
    if not path:
        raise BadWorktreeId("worktree path must be non-empty")
    return f"{repo_id}{WORKTREE_ID_SEPARATOR}{path}"


def split_worktree_id(worktree_id: str) -> WorktreeIdParts | None:
    """Split into (repo id, identity path), keeping any ``::workspace:`` suffix; None if malformed."""
    repo_id, sep, path = worktree_id.partition(WORKTREE_ID_SEPARATOR)
    if not sep or not path or not _valid_repo_id(repo_id):
        return None
    return WorktreeIdParts(repo_id, path)


def parse_worktree_id(worktree_id: str) -> WorktreeIdParts:
    """Like :func:`split_worktree_id` but raises BadWorktreeId naming the problem."""
    parts = split_worktree_id(worktree_id)
    if parts is None:
        raise BadWorktreeId(
            f"not a worktree id (expected '<repoId>{WORKTREE_ID_SEPARATOR}<path>' with a"
            f" non-empty repo id without ':' or '|' and a non-empty path): {worktree_id!r}"
        )
    return parts


def repo_id_of_worktree_id(worktree_id: str) -> str | None:
    """The repo id part of a worktree id, or None if malformed."""
    parts = split_worktree_id(worktree_id)
    return None if parts is None else parts.repo_id


def make_folder_workspace_instance_id(repo_id: str, repo_path: str, instance_id: str) -> str:
    """Build a folder-repo session id ``<repoId>::<path>::workspace:<instanceId>`` (route B)."""
    if not _valid_token(instance_id):
        raise BadWorktreeId(f"instance id must be non-empty without ':' or '/': {instance_id!r}")
    return (
        f"{make_worktree_id(repo_id, repo_path)}{FOLDER_WORKSPACE_INSTANCE_SEPARATOR}{instance_id}"
    )


def _instance_suffix_start(path: str) -> int:
    """Index of the instance separator in ``path`` if it ends in a valid instance suffix, else -1."""
    idx = path.rfind(FOLDER_WORKSPACE_INSTANCE_SEPARATOR)
    if idx <= 0:
        return -1
    if not _valid_token(path[idx + len(FOLDER_WORKSPACE_INSTANCE_SEPARATOR) :]):
        return -1
    return idx


def is_folder_workspace_instance_id(worktree_id: str) -> bool:
    """True for route-B ids (a folder repo's parallel session sharing one directory)."""
    parts = split_worktree_id(worktree_id)
    return parts is not None and _instance_suffix_start(parts.path) > 0


def split_worktree_id_for_filesystem(worktree_id: str) -> WorktreeIdParts | None:
    """Split into (repo id, real directory): the ``::workspace:<id>`` suffix is removed."""
    parts = split_worktree_id(worktree_id)
    if parts is None:
        return None
    idx = _instance_suffix_start(parts.path)
    return parts if idx < 0 else WorktreeIdParts(parts.repo_id, parts.path[:idx])


def worktree_workspace_key(worktree_id: str) -> str:
    """``worktree:<id>``; raises BadWorktreeId if ``worktree_id`` is malformed."""
    parse_worktree_id(worktree_id)
    return WORKTREE_KEY_PREFIX + worktree_id


def folder_workspace_key(folder_workspace_id: str) -> str:
    """``folder:<id>``; raises BadWorkspaceKey unless the id is non-empty without ':' or '/'."""
    if not _valid_token(folder_workspace_id):
        raise BadWorkspaceKey(
            f"folder workspace id must be non-empty without ':' or '/': {folder_workspace_id!r}"
        )
    return FOLDER_WORKSPACE_KEY_PREFIX + folder_workspace_id


def folder_workspace_id_of_worktree_id(worktree_id: str) -> str | None:
    """The folder-workspace id of a projected route-A worktree id ``folder:<id>`` that
    may own terminals (``<id>`` non-empty without ``:``, ``/`` or ``@@``); else None."""
    if not worktree_id.startswith(FOLDER_WORKSPACE_KEY_PREFIX):
        return None
    folder_id = worktree_id[len(FOLDER_WORKSPACE_KEY_PREFIX) :]
    if not _valid_token(folder_id) or _PTY_SESSION_SEPARATOR in folder_id:
        return None
    return folder_id


def is_terminal_owner_id(worktree_id: str) -> bool:
    """True for the ids a PTY session may be filed under: a worktree id
    ``<repoId>::<path>`` (route B instances included) or a folder workspace's
    projected id ``folder:<id>`` (route A)."""
    return (
        split_worktree_id(worktree_id) is not None
        or folder_workspace_id_of_worktree_id(worktree_id) is not None
    )


def parse_workspace_key(key: str) -> WorkspaceScope | None:
    """Parse a WorkspaceKey; None when it is not one (e.g. a legacy bare worktree id)."""
    if key.startswith(WORKTREE_KEY_PREFIX):
        rest = key[len(WORKTREE_KEY_PREFIX) :]
        return WorkspaceScope("worktree", rest) if split_worktree_id(rest) else None
    if key.startswith(FOLDER_WORKSPACE_KEY_PREFIX):
        rest = key[len(FOLDER_WORKSPACE_KEY_PREFIX) :]
        return WorkspaceScope("folder", rest) if _valid_token(rest) else None
    return None


def worktree_id_of_session_key(key: str) -> str | None:
    """Worktree id behind a session-map key that is a bare id or a ``worktree:`` key.

    Session maps are keyed by either form during the unfinished WorkspaceKey
    migration (seed 01 §4.5). Returns None for folder keys and malformed keys.
    """
    scope = parse_workspace_key(key)
    if scope is not None:
        return scope.id if scope.kind == "worktree" else None
    return key if split_worktree_id(key) is not None else None
