"""The trio shell around inotify: keeps the watches, debounces events into batches.

Lifecycle of a watch: ``watch_repo`` adds the repo-wide directories (common dir, its
``worktrees/``, ``refs/``, ``refs/heads/**`` and ``refs/remotes/**``); ``watch_worktree`` adds one worktree's admin dir
and every directory of its files that git does not ignore; ``unwatch_*`` remove them.
The kernel ends a watch by itself when its directory is deleted (``IN_IGNORED``).

Batches: the first event of a burst opens a window of :data:`DEBOUNCE_S`; everything
that arrives in it is merged into one set of invalidations, handed to ``on_batch``.
While ``on_batch`` runs, new events collect for the next window. Idle, both tasks are
parked (one on the fd, one on an event): no timers, no CPU.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Awaitable, Callable

import pygit2
import trio

from actors.gitwatch.watchplan import (
    MASK_BY_KIND,
    REMOTES_DIR,
    Invalidation,
    RescanEverything,
    RescanRepo,
    WatchNewDirectory,
    WatchRole,
    classify_event,
)
from orca.actor.inotify import Inotify
from orca.actor.inotifyabi import IN_DONT_FOLLOW, IN_EXCL_UNLINK, IN_IGNORED, IN_ONLYDIR

log = logging.getLogger(__name__)

# Long enough to merge git's burst (index.lock, index, HEAD, ref, log: ~ms apart) and an
# editor's save dance; short enough that a change still shows within about a second.
DEBOUNCE_S = 0.25
# A worktree with more directories than this keeps only its index/HEAD watches (status
# then refreshes on git operations, not on bare edits): the per-user inotify watch
# limit is shared with every editor and IDE on the machine.
MAX_TREE_WATCHES_PER_WORKTREE = 4000
_DIR_FLAGS = IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK

BatchHandler = Callable[[set[Invalidation]], Awaitable[None]]


def list_tree_dirs(
    worktree_path: str, start: str | None = None, limit: int = MAX_TREE_WATCHES_PER_WORKTREE
) -> list[str]:
    """Directories of a worktree (from ``start``, default its root) worth watching.

    Skipped: ``.git``, paths git ignores, nested repos/worktrees. Returns at most
    ``limit + 1`` entries so the caller can tell the tree was too big. Blocking; run it
    in a thread.
    """
    try:
        repo: pygit2.Repository | None = pygit2.Repository(worktree_path)
    except (pygit2.GitError, KeyError, OSError):
        repo = None  # a folder repo (or one libgit2 cannot open): watch all but .git
    top = start or worktree_path
    if top != worktree_path and _skipped(repo, worktree_path, top):
        return []
    dirs = [top]
    stack = [top]
    while stack and len(dirs) <= limit:
        top = stack.pop()
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False) or _skipped(repo, worktree_path, entry.path):
                continue
            dirs.append(entry.path)
            stack.append(entry.path)
    return dirs


def _skipped(repo: pygit2.Repository | None, worktree_path: str, directory: str) -> bool:
    if os.path.basename(directory) == ".git":
        return True
    if os.path.lexists(os.path.join(directory, ".git")):
        return True  # a nested worktree or submodule is someone else's tree
    if repo is None:
        return False
    try:
        return bool(repo.path_is_ignored(os.path.relpath(directory, worktree_path) + "/"))
    except pygit2.GitError:
        return False  # watching one directory too many is harmless


class GitWatcher:
    """Owns one inotify instance and the map from watch descriptors to their roles."""

    def __init__(
        self, inotify: Inotify, *, tree_watch_limit: int = MAX_TREE_WATCHES_PER_WORKTREE
    ) -> None:
        self._inotify = inotify
        self._tree_watch_limit = tree_watch_limit
        self._roles: dict[int, WatchRole] = {}
        self._owned: dict[tuple[str, str], set[int]] = {}
        self._pending: set[Invalidation] = set()
        self._wakeup = trio.Event()
        self.degraded: set[tuple[str, str]] = set()  # worktrees without file watches

    @property
    def watch_count(self) -> int:
        return len(self._roles)

    def watch_repo(self, repo_id: str, common_dir: str, main_path: str) -> None:
        """Watch the repo-wide git dirs (common dir, worktrees/, refs/, refs/heads/**,
        refs/remotes/**: the refs ahead/behind counts compare)."""
        self._add(WatchRole("common", repo_id, common_dir, main_path), owner=(repo_id, ""))
        worktrees = os.path.join(common_dir, "worktrees")
        if os.path.isdir(worktrees):
            self._add(WatchRole("worktrees", repo_id, worktrees), owner=(repo_id, ""))
        refs = os.path.join(common_dir, "refs")
        self._add(WatchRole("refsroot", repo_id, refs), owner=(repo_id, ""))
        for namespace in ("heads", REMOTES_DIR):
            for dirpath, _dirs, _files in os.walk(os.path.join(refs, namespace)):
                self._add(WatchRole("refs", repo_id, dirpath), owner=(repo_id, ""))

    async def watch_worktree(
        self, repo_id: str, worktree_path: str, admin_dir: str | None, *, files: bool = True
    ) -> None:
        """Watch a worktree's admin dir (linked ones) and, if ``files``, its directories."""
        owner = (repo_id, worktree_path)
        if admin_dir:
            self._add(WatchRole("admin", repo_id, admin_dir, worktree_path), owner=owner)
        if not files:
            return
        dirs = await trio.to_thread.run_sync(
            list_tree_dirs, worktree_path, None, self._tree_watch_limit
        )
        if len(dirs) > self._tree_watch_limit:
            self.degraded.add(owner)
            log.warning("%s has too many directories; watching git only", worktree_path)
            return
        for directory in dirs:
            if not self._add(WatchRole("tree", repo_id, directory, worktree_path), owner=owner):
                break

    def watch_folder(self, repo_id: str, folder_path: str) -> None:
        """A folder repo: watch only for its directory going away."""
        self._add(
            WatchRole("folder", repo_id, folder_path, folder_path), owner=(repo_id, folder_path)
        )

    def unwatch_worktree(self, repo_id: str, worktree_path: str) -> None:
        self.degraded.discard((repo_id, worktree_path))
        for wd in self._owned.pop((repo_id, worktree_path), set()):
            self._roles.pop(wd, None)
            self._inotify.rm_watch(wd)

    def unwatch_repo(self, repo_id: str) -> None:
        for owner in [key for key in self._owned if key[0] == repo_id]:
            self.unwatch_worktree(*owner)

    def ensure_worktrees_dir_watched(self, repo_id: str, common_dir: str) -> None:
        """After the first linked worktree is added, ``<common>/worktrees`` exists: watch it."""
        worktrees = os.path.join(common_dir, "worktrees")
        if os.path.isdir(worktrees):
            self._add(WatchRole("worktrees", repo_id, worktrees), owner=(repo_id, ""))

    async def run(
        self,
        on_batch: BatchHandler,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Read events and hand debounced batches to ``on_batch`` until cancelled."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._flush_batches, on_batch)
            task_status.started()
            while True:
                for event in await self._inotify.read():
                    if event.mask & IN_IGNORED:
                        self._forget(event.wd)
                        continue
                    for effect in classify_event(self._roles.get(event.wd), event):
                        if isinstance(effect, WatchNewDirectory):
                            await self._watch_new_directory(effect.role)
                        else:
                            self._pending.add(effect)
                if self._pending:
                    self._wakeup.set()

    async def _flush_batches(self, on_batch: BatchHandler) -> None:
        while True:
            await self._wakeup.wait()
            await trio.sleep(DEBOUNCE_S)
            batch, self._pending = self._pending, set()
            self._wakeup = trio.Event()
            await on_batch(batch)

    async def _watch_new_directory(self, role: WatchRole) -> None:
        owner = (role.repo_id, "" if role.kind == "refs" else role.worktree_path)
        if owner in self.degraded:
            return
        if role.kind == "refs":
            for dirpath, _dirs, _files in os.walk(role.directory):
                self._add(WatchRole("refs", role.repo_id, dirpath), owner=owner)
            return
        dirs = await trio.to_thread.run_sync(
            list_tree_dirs, role.worktree_path, role.directory, self._tree_watch_limit
        )
        for directory in dirs:
            self._add(WatchRole("tree", role.repo_id, directory, role.worktree_path), owner=owner)

    def _add(self, role: WatchRole, *, owner: tuple[str, str]) -> bool:
        """Add one watch; False when the watch limit is reached (the owner is degraded)."""
        try:
            wd = self._inotify.add_watch(role.directory, MASK_BY_KIND[role.kind] | _DIR_FLAGS)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                log.warning("inotify watch limit reached at %s", role.directory)
                self.degraded.add(owner)
                return False
            if role.kind in ("tree", "folder") and role.directory == role.worktree_path:
                # A worktree's (or folder repo's) own folder is gone before its watch
                # was placed: no watched parent reports it, so the listing is re-read.
                self._pending.add(RescanRepo(role.repo_id))
                self._wakeup.set()
            return True  # the directory vanished meanwhile; its parent's event covers it
        self._roles.setdefault(wd, role)
        self._owned.setdefault(owner, set()).add(wd)
        return True

    def _forget(self, wd: int) -> None:
        self._roles.pop(wd, None)
        for wds in self._owned.values():
            wds.discard(wd)

    def request_full_rescan(self) -> None:
        """Queue a rescan of everything (used at start and after an overflow)."""
        self._pending.add(RescanEverything())
        self._wakeup.set()
