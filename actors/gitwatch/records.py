"""The records gitwatch reads from git: one worktree's facts, its dirty counts."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DirtyCounts:
    """How many paths differ, by kind (ignored files never count)."""

    staged: int = 0
    unstaged: int = 0
    untracked: int = 0
    conflicted: int = 0

    @property
    def total(self) -> int:
        return self.staged + self.unstaged + self.untracked + self.conflicted


@dataclass(frozen=True, slots=True)
class AheadBehind:
    """Commits HEAD has that ``against`` lacks (``ahead``), and the reverse (``behind``)."""

    ahead: int
    behind: int
    against: str  # the comparison ref's short name: "origin/feature", "main"


@dataclass(frozen=True, slots=True)
class WorktreeFacts:
    """The hard git facts of one worktree (no dirty counts: those cost a status)."""

    path: str
    head: str | None  # hex commit id; None when bare, unborn or a folder
    branch: str | None  # full ref, e.g. "refs/heads/main"; None when detached
    is_main: bool
    admin_dir: str  # where this worktree's HEAD and index live ("" for a folder)
    is_bare: bool = False
    is_detached: bool = False
    is_locked: bool = False
    lock_reason: str | None = None
    is_prunable: bool = False
    prune_reason: str | None = None
    # Filled in by ``aheadbehind`` after a scan (None: no comparison ref, unborn, unknown).
    ahead_behind: AheadBehind | None = None
