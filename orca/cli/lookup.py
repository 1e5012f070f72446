"""What a name typed on the command line refers to: the actors' listings, resolved.

The one place commands list worktrees, repos and terminals to resolve a name or to show
a handle (``orca.views.handles`` holds the rules): ``term``, ``worktree``, ``ack``,
``watch``, ``down`` and shell completion compute the same handle for a thing from the
same listings, so what one prints another takes.

Import-light, like every CLI module: each listing imports its contract when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from orca.views.handles import AmbiguousReference
from orca.wire.errors import BadRequest, OrcaError

if TYPE_CHECKING:
    from orca.contracts.gitwatch import WorktreeList, WorktreeRow
    from orca.contracts.ptyd import SessionRow
    from orca.model.types_repo import Repo
    from orca.paths import OrcaPaths

# Listings are served from memory: five seconds keeps a wedged actor from hanging the shell.
LIST_TIMEOUT_S = 5.0
# Worktree rows only refine the terminals' handles (their worktree part): a slow
# gitwatch must not stall `term ls`.
WORKTREES_TIMEOUT_S = 2.0


# -- worktrees and repos ----------------------------------------------------------------


def list_worktrees(repo_id: str | None = None, *, timeout: float = LIST_TIMEOUT_S) -> WorktreeList:
    """gitwatch's rows (of one repo, or every repo); raises OrcaError when it is down."""
    from orca.client.sync import invoke
    from orca.contracts import gitwatch

    return invoke(gitwatch.WORKTREE_LIST, gitwatch.ListArgs(repo_id=repo_id), timeout=timeout)


def list_repos(timeout: float = LIST_TIMEOUT_S) -> list[Repo]:
    from orca.client.sync import invoke
    from orca.contracts import store

    return invoke(store.REPO_LIST, timeout=timeout).repos


def find_worktree(ref: str) -> WorktreeRow:
    """The worktree ``ref`` names (a handle, name, path or id; ``orca worktree ls``)."""
    from orca.views.handles import resolve_worktree

    try:
        return resolve_worktree(list_worktrees().worktrees, ref)
    except AmbiguousReference as exc:
        raise type(exc)(f"{exc.message} (see `orca worktree ls`)") from None


def worktree_and_cwd(ref: str) -> tuple[str, str]:
    """(worktree id, cwd) of what ``ref`` names: a worktree id as it is, or anything
    :func:`find_worktree` takes. A folder workspace (``folder:<id>``, its name or
    folder) is one of gitwatch's rows: its cwd is the folder of the store's record."""
    from orca.model.ids import split_worktree_id_for_filesystem

    if "::" in ref:
        parts = split_worktree_id_for_filesystem(ref)
        if parts is None:
            raise BadRequest(f"not a worktree id: {ref!r}")
        return ref, parts.path
    row = find_worktree(ref)
    if row.prunable and not row.is_bare:
        from orca.wire.errors import Conflict

        raise Conflict(
            f"the folder of worktree {ref!r} is missing ({row.path}; deleted?):"
            f" `orca worktree rm {ref}` forgets it"
        )
    parts = split_worktree_id_for_filesystem(row.id)
    return row.id, parts.path if parts is not None else row.path


# -- terminals ------------------------------------------------------------------------


class Terminals(NamedTuple):
    """ptyd's sessions, each one's handle, and each worktree's handle (every worktree
    gitwatch lists and every session's)."""

    sessions: list[SessionRow]
    handles: dict[str, str]
    worktrees: dict[str, str]


def list_terminals(paths: OrcaPaths | None = None, timeout: float = LIST_TIMEOUT_S) -> Terminals:
    """Every session ptyd knows and their handles: the running ones, those that ended
    since its start and those from before it, known from their history on disk
    (``archived``). Handles are made unique over all of them (so ``term ls`` and ``term
    ls --all`` show the same handle for each) and against every worktree gitwatch lists
    (so ``term ls`` and ``worktree ls`` show the same worktree part); without gitwatch,
    against the sessions' own worktrees."""
    from orca.client.sync import begin
    from orca.contracts import gitwatch_core, ptyd  # not the full gitwatch contract
    from orca.views.handles import session_handles, worktree_handles

    # ptyd and gitwatch are asked at once: their replies overlap (bench/cli.py).
    with (
        begin(
            ptyd.LIST, ptyd.ListArgs(history=True), timeout=timeout, paths=paths
        ) as asked_sessions,
        begin(
            gitwatch_core.WORKTREE_PATHS, timeout=min(timeout, WORKTREES_TIMEOUT_S), paths=paths
        ) as asked_worktrees,
    ):
        sessions = asked_sessions.result().sessions
        try:
            known = [(r.id, r.path) for r in asked_worktrees.result().worktrees]
        except OrcaError:
            known = []  # gitwatch down: handles from the sessions' own worktree ids
    pairs = [(s.session_id, s.worktree_id) for s in sessions]
    every = dict(known)
    for s in sessions:
        every.setdefault(s.worktree_id, "")  # not listed: its path from its id
    return Terminals(sessions, session_handles(pairs, known), worktree_handles(every.items()))


def find_terminal(ref: str, terminals: Terminals | None = None) -> SessionRow:
    """The session ``ref`` names: an id, a handle, ``<worktree>:<hex prefix>``, a bare
    hex prefix, or a worktree's name - its running terminal before ended ones
    (``orca.views.handles.resolve_terminal``); raises AmbiguousReference."""
    from orca.views.handles import resolve_terminal

    found = terminals or list_terminals()
    try:
        return resolve_terminal(found.sessions, found.handles, ref)
    except AmbiguousReference as exc:
        raise type(exc)(f"{exc.message} (see `orca term ls --all`)") from None


def resolve_session(ref: str) -> str:
    """The full session id ``ref`` names (:func:`find_terminal`)."""
    from orca.views.handles import session_suffix

    if session_suffix(ref):
        return ref  # a full id: ptyd itself says whether it exists
    return find_terminal(ref).session_id
