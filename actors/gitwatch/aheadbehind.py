"""How far each worktree's HEAD is ahead of / behind its comparison ref (blocking, libgit2).

Run by the tracker in the same worker thread as a listing rescan, right after
``gitfacts.scan_worktrees``: a listing rescan is exactly when HEAD or a ref may have
moved (the watcher's HEAD, refs/heads/**, refs/remotes/**, packed-refs and config
events), so the counts are recomputed then and never on a timer.

The comparison ref of one worktree, first that exists and is not its own branch:

1. the branch's configured upstream (``branch.<name>.remote`` / ``.merge``, as
   ``git status`` reads it; remote ``.`` names a local branch);
2. its base: the ``baseRef`` recorded at ``worktree.create`` (Orca-made worktrees),
   then the repo's ``worktreeBaseRef`` setting, each only when it names a branch
   (``HEAD`` or a commit id is not a base that can move);
3. the repo's default branch: ``origin/HEAD``'s target, else a local ``main``, else
   ``master``.

None of these (or an unborn/bare HEAD): no counts. A detached HEAD has no upstream and
starts at 2.

Cost: resolving refs is a few microseconds per worktree; ``Repository.ahead_behind`` is
a graph walk over the commits the two sides do not share. It runs off the trio loop
(this is called in a worker thread) and its result is memoized per (HEAD, comparison
target) pair in :class:`AheadBehindCache`, so each pair is walked once: a rescan that
moved one ref walks only for the worktrees that compare against it, and every later
rescan of unchanged refs walks nothing. The cache is bounded (:data:`CACHE_ENTRIES`).

Repositories libgit2 cannot open (``clifacts``' SHA-256 and newer-extension repos) get
no counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import pygit2

from actors.gitwatch.errors import RepoUnavailable
from actors.gitwatch.gitfacts import open_repository
from actors.gitwatch.records import AheadBehind, WorktreeFacts

__all__ = ["AheadBehindCache", "Bases", "with_ahead_behind"]

_HEADS = "refs/heads/"
_REMOTES = "refs/remotes/"
_DEFAULT_CANDIDATES = ("refs/remotes/origin/HEAD", "refs/heads/main", "refs/heads/master")
# (HEAD, comparison target) pairs remembered per repo; a full cache is simply dropped.
CACHE_ENTRIES = 4096


@dataclass(frozen=True, slots=True)
class Bases:
    """What the store knows of a repo's bases: ``baseRef`` of each worktree (by path)
    from its meta, and the repo's ``worktreeBaseRef``."""

    by_path: Mapping[str, str] = field(default_factory=dict)
    repo_base: str | None = None


@dataclass(slots=True)
class AheadBehindCache:
    """Memoized graph walks of one repo: (head, target) → (ahead, behind)."""

    counts: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    walks: int = 0  # graph walks actually run (what a test and the bench can count)

    def get(self, repo: pygit2.Repository, head: str, target: str) -> tuple[int, int] | None:
        key = (head, target)
        found = self.counts.get(key)
        if found is not None:
            return found
        try:
            ahead, behind = repo.ahead_behind(head, target)
        except (pygit2.GitError, KeyError, ValueError):
            return None  # an object missing from a shallow or damaged clone
        self.walks += 1
        if len(self.counts) >= CACHE_ENTRIES:
            self.counts.clear()
        self.counts[key] = (ahead, behind)
        return ahead, behind


def with_ahead_behind(
    repo_path: str, listing: list[WorktreeFacts], bases: Bases, cache: AheadBehindCache
) -> list[WorktreeFacts]:
    """``listing`` with each row's ``ahead_behind`` filled in (None where it has none).

    Never raises for what it reads: a ref or config it cannot read means no counts.
    """
    try:
        repo = open_repository(repo_path)
    except RepoUnavailable:
        return listing  # gone since the scan: the next rescan reports it
    if repo is None:
        return listing
    try:
        upstreams = _configured_upstreams(repo)
    except (pygit2.GitError, OSError, ValueError):
        upstreams = frozenset()
    default = _first_branch(repo, _DEFAULT_CANDIDATES, own=None)
    out: list[WorktreeFacts] = []
    for row in listing:
        counts = _counts(repo, row, bases, upstreams, default, cache)
        out.append(row if counts == row.ahead_behind else replace(row, ahead_behind=counts))
    return out


def _counts(
    repo: pygit2.Repository,
    row: WorktreeFacts,
    bases: Bases,
    upstreams: frozenset[str],
    default: tuple[str, str, str] | None,
    cache: AheadBehindCache,
) -> AheadBehind | None:
    if row.head is None or row.is_bare or "\0" in row.head:
        return None
    against = _comparison(repo, row, bases, upstreams, default)
    if against is None:
        return None
    short, target = against
    counts = cache.get(repo, row.head, target)
    if counts is None:
        return None
    return AheadBehind(ahead=counts[0], behind=counts[1], against=short)


def _comparison(
    repo: pygit2.Repository,
    row: WorktreeFacts,
    bases: Bases,
    upstreams: frozenset[str],
    default: tuple[str, str, str] | None,
) -> tuple[str, str] | None:
    """(short name, target commit hex) of the row's comparison ref, or None."""
    own = row.branch if row.branch and not row.is_detached else None
    if own is not None and own.startswith(_HEADS) and own[len(_HEADS) :] in upstreams:
        found = _upstream(repo, own[len(_HEADS) :])
        if found is not None:
            return found
    for base in (bases.by_path.get(row.path), bases.repo_base):
        if base:
            named = _first_branch(repo, _base_candidates(base), own=own)
            if named is not None:
                return named[1], named[2]
    if default is not None and default[0] == own:
        # The default branch is this worktree's own branch: the next candidate, if any.
        default = _first_branch(repo, _DEFAULT_CANDIDATES, own=own)
    return None if default is None else (default[1], default[2])


def _configured_upstreams(repo: pygit2.Repository) -> frozenset[str]:
    """Local branch names with ``branch.<name>.merge`` set (one config read per scan)."""
    names: set[str] = set()
    for entry in repo.config.snapshot():
        key = entry.name
        if key.startswith("branch.") and key.endswith(".merge"):
            names.add(key[len("branch.") : -len(".merge")])
    return frozenset(names)


def _upstream(repo: pygit2.Repository, branch_name: str) -> tuple[str, str] | None:
    try:
        branch = repo.branches.local.get(branch_name)
        upstream = branch.upstream if branch is not None else None
        if upstream is None:
            return None  # configured, but the remote-tracking ref is gone or not fetched
        return upstream.shorthand, _commit_hex(repo, upstream)
    except (pygit2.GitError, KeyError, ValueError):
        return None


def _base_candidates(base: str) -> tuple[str, ...]:
    """The full ref names a recorded base may mean, in git's own lookup order."""
    if base == "HEAD" or base.startswith("-") or "\0" in base:
        return ()
    if base.startswith("refs/"):
        return (base,)
    return (_HEADS + base, _REMOTES + base)


def _first_branch(
    repo: pygit2.Repository, names: tuple[str, ...], *, own: str | None
) -> tuple[str, str, str] | None:
    """(full name, short name, target hex) of the first ref in ``names`` that resolves to
    a commit and is not ``own`` (symbolic refs, like origin/HEAD, resolved first)."""
    for name in names:
        try:
            ref = repo.references.get(name)
            if ref is None:
                continue
            ref = ref.resolve()
            if ref.name == own:
                continue
            return ref.name, ref.shorthand, _commit_hex(repo, ref)
        except (pygit2.GitError, KeyError, ValueError):
            continue
    return None


def _commit_hex(repo: pygit2.Repository, ref: pygit2.Reference) -> str:
    """The commit a branch ref names (an annotated tag is peeled); KeyError if none."""
    obj = repo[ref.target]
    return str(obj.peel(pygit2.Commit).id)
