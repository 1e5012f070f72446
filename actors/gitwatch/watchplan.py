"""What to watch in a repository, and what a filesystem event invalidates (pure).

The watcher never polls. It watches the few places git writes when a fact changes and
turns each inotify event into the smallest piece of work that brings the facts back
up to date:

=====================  =========================================  =====================
watched directory      event on                                   invalidates
=====================  =========================================  =====================
common dir (.git)      HEAD, packed-refs, config (upstreams),     the repo's listing
                       ``worktrees`` created
                       index                                      main worktree status
common/worktrees       any entry added/removed/renamed            the repo's listing
common/worktrees/<n>   HEAD, locked, gitdir; the dir deleted      the repo's listing
                       index                                      that worktree status
common/refs/heads/**   any ref (not ``*.lock``); new subdir       the repo's listing
common/refs/remotes/** (same: a fetch or push moved an upstream)
common/refs            ``remotes`` created (first fetch)          listing + its watch
a worktree's files     any change except inside ``.git``          that worktree status
a worktree's folder    the directory itself deleted or moved      the repo's listing
a folder repo's root   the directory itself deleted or moved      the repo's listing
=====================  =========================================  =====================

A listing rescan is cheap (a few file reads per worktree, plus the ahead/behind counts,
memoized per HEAD/target pair: ``aheadbehind``); a status is the expensive part and is computed only for the worktree whose index or files changed, or whose HEAD
moved (the watcher's caller compares heads after a rescan).

git writes ``X.lock`` then renames it to ``X``: only the final name matters, so every
``*.lock`` name is skipped (that also skips our own nothing: gitwatch never writes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from orca.actor.inotifyabi import (
    IN_ATTRIB,
    IN_CLOSE_WRITE,
    IN_CREATE,
    IN_DELETE,
    IN_DELETE_SELF,
    IN_ISDIR,
    IN_MOVE_SELF,
    IN_MOVED_FROM,
    IN_MOVED_TO,
    IN_Q_OVERFLOW,
    InotifyEvent,
)

RoleKind = Literal["common", "worktrees", "admin", "refs", "refsroot", "tree", "folder"]

# Entry changes: enough to see git's lockfile renames and any file written or removed.
_ENTRY_CHANGES = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE
MASK_BY_KIND: dict[RoleKind, int] = {
    "common": _ENTRY_CHANGES,
    "worktrees": _ENTRY_CHANGES,
    "admin": _ENTRY_CHANGES | IN_DELETE_SELF,
    "refs": _ENTRY_CHANGES,
    # <common>/refs itself: only to see refs/remotes appear (heads exists from init).
    "refsroot": IN_CREATE | IN_MOVED_TO,
    # IN_ATTRIB: a chmod +x is a change git status reports.
    "tree": _ENTRY_CHANGES | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF,
    # A folder repo has no git facts to refresh: only its disappearance matters.
    "folder": IN_DELETE_SELF | IN_MOVE_SELF,
}
# config: branch.<name>.remote/merge name the upstream ahead/behind counts compare with.
_COMMON_LISTING_FILES = frozenset({"HEAD", "packed-refs", "config"})
REMOTES_DIR = "remotes"
_ADMIN_LISTING_FILES = frozenset({"HEAD", "locked", "gitdir"})


@dataclass(frozen=True, slots=True)
class WatchRole:
    """Why a directory is watched."""

    kind: RoleKind
    repo_id: str
    directory: str
    worktree_path: str = ""  # the worktree it belongs to ("" for repo-wide dirs)


@dataclass(frozen=True, slots=True)
class RescanRepo:
    repo_id: str


@dataclass(frozen=True, slots=True)
class RefreshStatus:
    repo_id: str
    worktree_path: str


@dataclass(frozen=True, slots=True)
class RescanEverything:
    """Events were lost (queue overflow): every repo and status must be re-read."""


@dataclass(frozen=True, slots=True)
class WatchNewDirectory:
    """A directory appeared under a watched one and needs its own watch."""

    role: WatchRole


Invalidation = RescanRepo | RefreshStatus | RescanEverything
Effect = Invalidation | WatchNewDirectory


def classify_event(role: WatchRole | None, event: InotifyEvent) -> list[Effect]:
    """The work an event on a directory with ``role`` calls for (none for noise)."""
    if event.mask & IN_Q_OVERFLOW:
        return [RescanEverything()]
    if role is None or event.name.endswith(".lock"):
        return []
    is_new_dir = bool(event.mask & IN_ISDIR and event.mask & (IN_CREATE | IN_MOVED_TO))
    self_gone = bool(event.mask & (IN_DELETE_SELF | IN_MOVE_SELF))
    if role.kind == "common":
        if event.name in _COMMON_LISTING_FILES or (event.name == "worktrees" and is_new_dir):
            return [RescanRepo(role.repo_id)]
        if event.name == "index":
            return [RefreshStatus(role.repo_id, role.worktree_path)]
        return []
    if role.kind in ("worktrees", "folder"):
        return [RescanRepo(role.repo_id)]
    if role.kind == "admin":
        if self_gone or event.name in _ADMIN_LISTING_FILES:
            return [RescanRepo(role.repo_id)]
        if event.name == "index":
            return [RefreshStatus(role.repo_id, role.worktree_path)]
        return []
    if role.kind == "refsroot":
        if is_new_dir and event.name == REMOTES_DIR:
            return [RescanRepo(role.repo_id), WatchNewDirectory(_child(role, event.name, "refs"))]
        return []
    if role.kind == "refs":
        effects: list[Effect] = [RescanRepo(role.repo_id)]
        if is_new_dir:
            effects.append(WatchNewDirectory(_child(role, event.name)))
        return effects
    # "tree": the worktree's own files. Its ".git" (file or dir) is git's business.
    if self_gone and role.directory == role.worktree_path:
        return [RescanRepo(role.repo_id)]  # the folder itself deleted or moved: prunable
    if event.name == ".git":
        return []
    tree_effects: list[Effect] = [RefreshStatus(role.repo_id, role.worktree_path)]
    if is_new_dir:
        tree_effects.append(WatchNewDirectory(_child(role, event.name)))
    return tree_effects


def _child(role: WatchRole, name: str, kind: RoleKind | None = None) -> WatchRole:
    return WatchRole(
        kind or role.kind, role.repo_id, f"{role.directory}/{name}", role.worktree_path
    )
