"""What can go wrong in gitwatch, named by who is at fault.

::

    GitwatchError
    ├── CallerError            the request is wrong          → wire BadRequest
    │   ├── InvalidWorktreeName
    │   └── PathOutsideWorkspace
    ├── MissingTarget          it does not exist             → wire NotFound
    │   ├── RepoNotFound
    │   └── WorktreeNotFound
    ├── StateConflict          the world disagrees           → wire Conflict
    │   ├── BranchCheckedOutElsewhere
    │   ├── WorktreeDirty
    │   ├── WorktreeLocked
    │   └── DestinationExists
    ├── RepoUnavailable        the repo's directory is gone  → wire Unavailable
    ├── PeerUnavailable        store did not answer          → wire Unavailable
    │   └── StoreCatchingUp    store's mirror is reloading
    └── GitFailure             git itself failed             → wire Internal
        └── GitOutputMalformed

Foreign errors (pygit2.GitError, OSError, a non-zero git exit) are mapped to these once,
in ``gitfacts``/``gitcli``; the actor maps these to wire errors once, in ``actor``.
"""

from __future__ import annotations


class GitwatchError(Exception):
    """Base of every gitwatch error."""


class CallerError(GitwatchError):
    """The request itself is invalid."""


class InvalidWorktreeName(CallerError):
    """The name is empty or sanitizes to nothing usable."""


class PathOutsideWorkspace(CallerError):
    """The computed path escapes the workspace root (directory traversal)."""


class MissingTarget(GitwatchError):
    """The repo or worktree named in the request does not exist."""


class RepoNotFound(MissingTarget):
    """No repo with that id (or path) is registered."""


class WorktreeNotFound(MissingTarget):
    """No worktree with that id or path exists in its repo."""


class StateConflict(GitwatchError):
    """The request is valid but the current state forbids it."""


class BranchCheckedOutElsewhere(StateConflict):
    """git allows a branch in one worktree only."""

    def __init__(self, branch: str, other_path: str) -> None:
        super().__init__(f"branch {branch!r} is already checked out at {other_path}")
        self.branch = branch
        self.other_path = other_path


class WorktreeDirty(StateConflict):
    """The worktree has uncommitted changes; removing it would lose work."""


class WorktreeLocked(StateConflict):
    """The worktree is locked (``git worktree lock``)."""


class DestinationExists(StateConflict):
    """The target path of a create or move already exists."""


class RepoUnavailable(GitwatchError):
    """The repo's directory vanished or is no longer a repository."""


class PeerUnavailable(GitwatchError):
    """A peer actor (store) failed or did not answer while we needed it."""


class StoreCatchingUp(PeerUnavailable):
    """The mirror of store is re-snapshotting (store restarted, or events were lost) and
    did not finish within the bound: an answer from it now could leave things out."""


class GitFailure(GitwatchError):
    """git exited non-zero (or pygit2 raised) for a reason nobody else caused."""


class GitOutputMalformed(GitFailure):
    """git printed something the parser cannot read."""
