"""What gitwatch currently believes about every repo, and the events a change makes (pure).

The shell feeds it fresh readings (a listing of one repo, the dirty counts of one
worktree, "this repo vanished") and publishes the events it returns. Nothing here
touches the disk, so the ordering rules are tested without git or sockets.

Invariants:
* a row is keyed by its path inside its repo; the same path never appears twice;
* an event is returned only when a published fact changed (a rescan that finds the
  same facts is silent: no event storms from harmless git activity);
* a repo marked unavailable has no rows; when it comes back its rows are "added" again;
* a worktree whose path cannot be published (``wiretext``: not UTF-8, a NUL) is never a
  row: it is kept in ``unrepresentable`` (path → reason), reported, and has no events.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from actors.gitwatch.records import DirtyCounts, WorktreeFacts
from actors.gitwatch.wiretext import unrepresentable_reason

RepoKind = Literal["git", "folder"]


@dataclass(frozen=True, slots=True)
class WorktreeAdded:
    repo_id: str
    facts: WorktreeFacts


@dataclass(frozen=True, slots=True)
class WorktreeRemoved:
    repo_id: str
    path: str


@dataclass(frozen=True, slots=True)
class WorktreeChanged:
    repo_id: str
    facts: WorktreeFacts
    dirty: DirtyCounts | None


@dataclass(frozen=True, slots=True)
class RepoWentUnavailable:
    repo_id: str
    path: str
    reason: str


FactEvent = WorktreeAdded | WorktreeRemoved | WorktreeChanged | RepoWentUnavailable


@dataclass(slots=True)
class RepoFacts:
    """One repo's rows, their dirty counts (once known) and its availability."""

    repo_id: str
    path: str
    kind: RepoKind = "git"
    rows: dict[str, WorktreeFacts] = field(default_factory=dict)
    dirty: dict[str, DirtyCounts] = field(default_factory=dict)
    unavailable: str | None = None  # the reason, while the repo cannot be read
    # Worktrees git lists whose path cannot cross the wire: path (surrogate-escaped) → why.
    unrepresentable: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ListingUpdate:
    events: list[FactEvent]
    added: list[WorktreeFacts]  # need watches and a first status
    removed: list[str]  # paths whose watches should go
    status_needed: list[str]  # paths whose dirty counts must be (re)computed
    newly_unrepresentable: list[str] = field(default_factory=list)  # to warn about once


def apply_listing(repo: RepoFacts, listing: list[WorktreeFacts]) -> ListingUpdate:
    """Replace a repo's rows with a fresh listing; return what changed."""
    events: list[FactEvent] = []
    fresh: dict[str, WorktreeFacts] = {}
    withheld: dict[str, str] = {}
    for row in listing:
        reason = unrepresentable_reason(row.path)
        if reason is None:
            fresh[row.path] = row
        else:
            withheld[row.path] = reason
    newly = [path for path in withheld if path not in repo.unrepresentable]
    repo.unrepresentable = withheld
    removed = [path for path in repo.rows if path not in fresh]
    for path in removed:
        del repo.rows[path]
        repo.dirty.pop(path, None)
        events.append(WorktreeRemoved(repo.repo_id, path))
    added: list[WorktreeFacts] = []
    status_needed: list[str] = []
    for path, row in fresh.items():
        old = repo.rows.get(path)
        repo.rows[path] = row
        if old is None:
            added.append(row)
            status_needed.append(path)
            events.append(WorktreeAdded(repo.repo_id, row))
        elif old != row:
            if old.head != row.head or old.branch != row.branch:
                # The index is compared against HEAD: a moved HEAD changes the counts
                # even when no file in the worktree was touched.
                status_needed.append(path)
            events.append(WorktreeChanged(repo.repo_id, row, repo.dirty.get(path)))
    repo.unavailable = None
    return ListingUpdate(events, added, removed, status_needed, newly)


def apply_row(repo: RepoFacts, row: WorktreeFacts) -> ListingUpdate:
    """One worktree re-read on its own (a create knows which one it made): its row is
    added or updated as :func:`apply_listing` would, and every other row stands but one
    read of the same admin dir under another path. (A scan that ran while git was still
    filling the admin dir in lists it at the admin dir's own path, with no gitdir yet:
    that is this worktree, half made, and goes.)"""
    stale = [p for p, r in repo.rows.items() if r.admin_dir == row.admin_dir and p != row.path]
    events: list[FactEvent] = []
    for path in stale:
        del repo.rows[path]
        repo.dirty.pop(path, None)
        events.append(WorktreeRemoved(repo.repo_id, path))
    reason = unrepresentable_reason(row.path)
    if reason is not None:
        newly = [] if row.path in repo.unrepresentable else [row.path]
        repo.unrepresentable[row.path] = reason
        return ListingUpdate(events, [], stale, [], newly)
    old = repo.rows.get(row.path)
    repo.rows[row.path] = row
    if old is None:
        events.append(WorktreeAdded(repo.repo_id, row))
        return ListingUpdate(events, [row], stale, [row.path])
    if old == row:
        return ListingUpdate(events, [], stale, [])
    moved = old.head != row.head or old.branch != row.branch
    events.append(WorktreeChanged(repo.repo_id, row, repo.dirty.get(row.path)))
    return ListingUpdate(events, [], stale, [row.path] if moved else [])


def apply_dirty(repo: RepoFacts, path: str, counts: DirtyCounts) -> list[FactEvent]:
    """Record a worktree's dirty counts; an event only when they changed."""
    row = repo.rows.get(path)
    if row is None or repo.dirty.get(path) == counts:
        return []
    repo.dirty[path] = counts
    return [WorktreeChanged(repo.repo_id, row, counts)]


def apply_unavailable(repo: RepoFacts, reason: str) -> list[FactEvent]:
    """The repo cannot be read: drop its rows, report it once (not on every rescan)."""
    if repo.unavailable is not None:
        return []
    events: list[FactEvent] = [WorktreeRemoved(repo.repo_id, path) for path in repo.rows]
    repo.rows.clear()
    repo.dirty.clear()
    repo.unrepresentable.clear()
    repo.unavailable = reason
    events.append(RepoWentUnavailable(repo.repo_id, repo.path, reason))
    return events


def apply_move(repo: RepoFacts, old_path: str, new_path: str) -> WorktreeFacts | None:
    """Re-key a row after ``git worktree move`` so the next rescan sees no add/remove.

    Returns the moved row, or None when the old path was not known.
    """
    row = repo.rows.pop(old_path, None)
    if row is None:
        return None
    moved = replace(row, path=new_path)
    repo.rows[new_path] = moved
    counts = repo.dirty.pop(old_path, None)
    if counts is not None:
        repo.dirty[new_path] = counts
    return moved
