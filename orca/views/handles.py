"""Short handles for worktrees, terminals and repos, and resolving what a person types.

Pure (ids and names in, labels out; the one system call is ``realpath`` on a typed
path), so every listing computes the same handle: ``orca worktree ls``, ``orca term
ls``, ``orca worktree ps`` and shell completion call these functions.

Worktree handle: the last component of the worktree's folder (``fix-login``). When
several worktrees share it, as many trailing components as make it unique
(``proj/fix-login`` and ``other/fix-login``); the full id as a last resort.

Terminal handle: ``<worktree handle>:<hex>``, ``hex`` the shortest prefix (at least
:data:`MIN_HEX`) of the session id's random suffix that no other terminal of that
worktree shares. ptyd keeps the suffix when a worktree is renamed, so the handle
follows the rename. A running number (``fix-login:2``) would shift when an earlier
terminal is closed, and a ``kill`` typed from an old listing would hit another one.

Invariant: handles are unique within the set they were computed over. They are stable
while no new name collides with them; every longer form (more path components, more
hex digits, the full id) keeps resolving, so a script can use the id.

:func:`resolve` accepts, in this order: an exact id; an exact handle; an exact alias
(display name, branch, folder, any trailing part of the path, the path itself; for a
terminal also its bare hex or ``<any worktree alias>:<hex prefix>``, or the worktree
alone when it has one terminal); a unique prefix of a handle or id. Nothing or several
matching is :class:`AmbiguousReference` (a bad request: exit 2) naming the candidates;
nothing is its :class:`NothingMatches`. :func:`resolve_terminal` looks among running
terminals before ended ones, so ended terminals (their history kept) never make a
worktree's name ambiguous.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from orca.wire.errors import BadRequest

if TYPE_CHECKING:
    from orca.contracts.gitwatch import WorktreeRow
    from orca.contracts.ptyd import SessionRow
    from orca.model.types_repo import Repo

# Four hex digits tell ~65k terminals of one worktree apart; shorter looks like a number.
MIN_HEX = 4
SESSION_SEP = ":"
_HEADS = "refs/heads/"
# How many candidates an ambiguity message names before "...".
_NAMED_AT_MOST = 8


class AmbiguousReference(BadRequest):
    """The name given matches no, or several, worktrees/terminals/repos."""


class NothingMatches(AmbiguousReference):
    """The name given matches nothing (so a caller may look among other things)."""


class Target(NamedTuple):
    """One thing a person may name: its full id, its handle, and its other names.

    A NamedTuple, not a dataclass: ``dataclasses`` (with ``inspect``) would be the
    largest import of ``orca term ls`` (bench/cli.py)."""

    id: str
    handle: str
    aliases: frozenset[str] = frozenset()


# -- worktrees ------------------------------------------------------------------------


def folder_of(worktree_id: str) -> str:
    """The directory a worktree id names (``<repoId>::<path>[::workspace:<id>]``), or ""."""
    from orca.model.ids import split_worktree_id_for_filesystem

    parts = split_worktree_id_for_filesystem(worktree_id)
    return parts.path if parts is not None else ""


def _path_labels(path: str) -> list[str]:
    """``/a/b/c`` → ``["c", "b/c", "a/b/c"]``: the trailing parts, shortest first."""
    parts = [p for p in path.split("/") if p]
    return ["/".join(parts[-k:]) for k in range(1, len(parts) + 1)]


def worktree_handles(worktrees: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Handle by id for ``(id, path)`` pairs (``path`` "" to derive it from the id).

    Depth by depth: the last component of every path is counted, each worktree whose
    label is unique at that depth is done, and only the rest are compared one
    component deeper (against every path that deep). Listings run this on every
    call (``orca worktree ps``: 100 worktrees in ~0.3 ms, against ~2 ms when every
    path's every label was counted first).
    """
    parts = {
        wid: [p for p in (path or folder_of(wid)).split("/") if p]
        for wid, path in dict(worktrees).items()
    }
    handles: dict[str, str] = {}
    pending = list(parts)
    depth = 1
    while pending:
        counts: dict[str, int] = defaultdict(int)
        for ps in parts.values():
            if len(ps) >= depth:
                counts["/".join(ps[-depth:])] += 1
        left = []
        for wid in pending:
            ps = parts[wid]
            if len(ps) < depth:
                handles[wid] = wid  # every label is shared: the full id
                continue
            label = "/".join(ps[-depth:])
            # Invariant: labels of different depths differ (their number of "/"
            # differs), and the id (with "::") is no label, so they are unique.
            if counts[label] == 1:
                handles[wid] = label
            else:
                left.append(wid)
        pending = left
        depth += 1
    return handles


def short_branch(branch: str) -> str:
    return branch[len(_HEADS) :] if branch.startswith(_HEADS) else branch


def worktree_aliases(path: str, display_name: str = "", branch: str = "") -> frozenset[str]:
    """Every exact name of a worktree besides its id and handle."""
    names = {*_path_labels(path), path, display_name, short_branch(branch)}
    if path:
        names.add(os.path.realpath(path))
    names.discard("")
    return frozenset(names)


def worktree_target(
    worktree_id: str, handle: str, path: str = "", display_name: str = "", branch: str = ""
) -> Target:
    aliases = worktree_aliases(path or folder_of(worktree_id), display_name, branch)
    return Target(id=worktree_id, handle=handle, aliases=aliases)


# -- terminals ------------------------------------------------------------------------


def session_suffix(session_id: str) -> str:
    """The random hex of ``<worktreeId>@@<hex>``, or "" for another shape."""
    from orca.model.panes import parse_pty_session_id

    parts = parse_pty_session_id(session_id)
    return parts.suffix if parts is not None else ""


def session_handles(
    sessions: Iterable[tuple[str, str]], worktrees: Iterable[tuple[str, str]] = ()
) -> dict[str, str]:
    """Handle by session id for ``(session id, worktree id)`` pairs.

    ``worktrees`` (``(id, path)``, e.g. every row of ``orca worktree ls``) are the other
    worktrees the worktree handles must be unique against, so both listings agree.
    """
    pairs = list(sessions)
    known = dict(worktrees)
    for _sid, wid in pairs:
        known.setdefault(wid, "")
    wt_handles = worktree_handles(known.items())
    by_worktree: dict[str, list[str]] = defaultdict(list)
    for sid, wid in pairs:
        by_worktree[wid].append(sid)
    handles: dict[str, str] = {}
    for wid, sids in by_worktree.items():
        suffixes = {sid: session_suffix(sid) for sid in sids}
        for sid, hexes in suffixes.items():
            if not hexes:
                handles[sid] = sid
                continue
            others = [h for s, h in suffixes.items() if s != sid]
            n = next(
                (
                    n
                    for n in range(MIN_HEX, len(hexes))
                    if not any(o.startswith(hexes[:n]) for o in others)
                ),
                len(hexes),
            )
            handles[sid] = f"{wt_handles[wid]}{SESSION_SEP}{hexes[:n]}"
    return handles


def session_target(
    session_id: str, handle: str, worktree: Target | None = None, worktree_id: str = ""
) -> Target:
    """A terminal as a Target: named by its hex, or by ``<worktree name>:<hex prefix>``,
    or by its worktree's names alone (unique when the worktree has one terminal)."""
    hexes = session_suffix(session_id)
    if worktree is None:
        worktree = worktree_target(worktree_id, handle.rpartition(SESSION_SEP)[0])
    worktree_names = {worktree.handle, worktree.id, *worktree.aliases}
    names = set(worktree_names)
    names.update(hexes[:n] for n in range(MIN_HEX, len(hexes) + 1))
    for name in worktree_names:
        names.update(f"{name}{SESSION_SEP}{hexes[:n]}" for n in range(1, len(hexes) + 1))
    names.discard("")
    return Target(id=session_id, handle=handle, aliases=frozenset(names))


# -- repos ----------------------------------------------------------------------------


def repo_handles(repos: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Handle by repo id for ``(id, display name)``: the name, or ``name#<id prefix>``
    when names collide (the shortest prefix that tells them apart)."""
    pairs = dict(repos)
    by_name: dict[str, list[str]] = defaultdict(list)
    for rid, name in pairs.items():
        by_name[name or rid].append(rid)
    handles: dict[str, str] = {}
    for name, rids in by_name.items():
        for rid in rids:
            if len(rids) == 1:
                handles[rid] = name
                continue
            n = next(
                (
                    n
                    for n in range(MIN_HEX, len(rid))
                    if sum(o.startswith(rid[:n]) for o in rids) == 1
                ),
                len(rid),
            )
            handles[rid] = f"{name}#{rid[:n]}"
    return handles


def repo_target(repo_id: str, handle: str, path: str, display_name: str) -> Target:
    names = {display_name, path, os.path.basename(path.rstrip("/"))}
    if path:
        names.add(os.path.realpath(path))
    names.discard("")
    return Target(id=repo_id, handle=handle, aliases=frozenset(names))


# -- resolution -----------------------------------------------------------------------


def looks_like_path(ref: str) -> bool:
    return os.sep in ref or ref.startswith(("~", "."))


def resolve(targets: Sequence[Target], ref: str, what: str, *, prefixes: bool = True) -> Target:
    """The one target ``ref`` names (see the module docstring for the order); without
    ``prefixes``, only by a whole id, handle or alias."""
    if not ref:
        raise NothingMatches(f"an empty {what} name matches nothing")
    for target in targets:
        if ref == target.id:
            return target
    for target in targets:
        if ref == target.handle:
            return target
    names = {ref}
    if looks_like_path(ref):
        names.add(os.path.realpath(os.path.expanduser(ref)))
    matches = [t for t in targets if names & t.aliases]
    if not matches and prefixes:
        matches = [t for t in targets if t.handle.startswith(ref) or t.id.startswith(ref)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise NothingMatches(f"no {what} matches {ref!r}")
    raise AmbiguousReference(f"{ref!r} matches {len(matches)} {what}s: {describe(matches)}")


def describe(targets: Sequence[Target]) -> str:
    shown = [t.handle for t in targets[:_NAMED_AT_MOST]]
    return ", ".join(shown) + (", ..." if len(targets) > _NAMED_AT_MOST else "")


def by_id(targets: Iterable[Target]) -> Mapping[str, Target]:
    return {t.id: t for t in targets}


def resolve_worktree(
    rows: Sequence[WorktreeRow], ref: str, *, prefixes: bool = True
) -> WorktreeRow:
    """The gitwatch row ``ref`` names (:func:`resolve`'s rules)."""
    handles = worktree_handles((r.id, r.path) for r in rows)
    targets = [worktree_target(r.id, handles[r.id], r.path, r.display_name, r.branch) for r in rows]
    try:
        chosen = resolve(targets, ref, "worktree", prefixes=prefixes)
    except NothingMatches:
        # The name as it was typed at `worktree create` ("fix login" made fix-login).
        made = _made_name(ref)
        if made is None or made == ref:
            raise
        try:
            chosen = resolve(targets, made, "worktree", prefixes=False)
        except NothingMatches:
            raise NothingMatches(f"no worktree matches {ref!r} (nor {made!r})") from None
    return next(r for r in rows if r.id == chosen.id)


def _made_name(ref: str) -> str | None:
    """The name `worktree create` made of ``ref``, or None if it makes none."""
    from orca.model.naming import InvalidWorktreeName, sanitize_worktree_name

    try:
        return sanitize_worktree_name(ref)
    except InvalidWorktreeName:
        return None


def resolve_repo(repos: Sequence[Repo], ref: str) -> Repo:
    """The repo ``ref`` names: its id, handle, a unique display name, folder or path."""
    handles = repo_handles((r.id, r.display_name) for r in repos)
    targets = [repo_target(r.id, handles[r.id], r.path, r.display_name) for r in repos]
    chosen = resolve(targets, ref, "repo")
    return next(r for r in repos if r.id == chosen.id)


def resolve_terminal(
    sessions: Sequence[SessionRow], handles: Mapping[str, str], ref: str
) -> SessionRow:
    """The session ``ref`` names among ptyd's ``sessions`` (``handles``: their handles).

    An exact id or handle names its terminal, whatever its state. Any other name is
    looked up among the running terminals first, then among those that ended since
    ptyd's start, then among those from before it (``archived``): a worktree with one
    running terminal names it, however many ended ones kept their history there (those
    are named by their own handle, or by the worktree once nothing runs in it). Several
    matches within the first group that has any is :class:`AmbiguousReference`.
    """
    for session in sessions:
        if ref in (session.session_id, handles[session.session_id]):
            return session
    groups = (
        [s for s in sessions if s.running],
        [s for s in sessions if not s.running and not s.archived],
        [s for s in sessions if s.archived],
    )
    for group in groups:
        targets = [
            session_target(s.session_id, handles[s.session_id], worktree_id=s.worktree_id)
            for s in group
        ]
        try:
            chosen = resolve(targets, ref, "terminal")
        except NothingMatches:
            continue
        return next(s for s in group if s.session_id == chosen.id)
    raise NothingMatches(f"no terminal matches {ref!r}")
