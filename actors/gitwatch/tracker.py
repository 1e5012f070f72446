"""Track repos: keep every tracked repo's facts current and publish what changed (trio shell).

Work flows one way: the watcher hands a debounced batch of invalidations to
:meth:`RepoTracker.apply_batch`; each repo rescan or status refresh runs in a worker
thread, goes through the pure ``factstate`` functions, and the events they return are
emitted in order as the contract's Structs (``wirerows.fact_event_to_wire``).

Invariant (rename ordering, seed 01 §4.3): every rescan of a repo holds that repo's
lock, and so does ``lifecycle.rename_worktree`` from ``git worktree move`` until the
``worktree.renamed`` event is out. No watcher event can slip a "removed"/"added" pair
in between the move and the identity migration.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import msgspec
import trio

from actors.gitwatch.aheadbehind import AheadBehindCache, Bases, with_ahead_behind
from actors.gitwatch.errors import RepoUnavailable
from actors.gitwatch.factstate import (
    FactEvent,
    ListingUpdate,
    RepoFacts,
    RepoKind,
    WorktreeRemoved,
    apply_dirty,
    apply_listing,
    apply_row,
    apply_unavailable,
)
from actors.gitwatch.gitfacts import (
    common_dir,
    folder_facts,
    linked_worktree_at,
    read_dirty_counts,
    scan_worktrees,
)
from actors.gitwatch.records import WorktreeFacts
from actors.gitwatch.watcher import GitWatcher
from actors.gitwatch.watchplan import Invalidation, RefreshStatus, RescanEverything, RescanRepo
from actors.gitwatch.wirerows import fact_event_to_wire
from actors.gitwatch.wiretext import display_text

log = logging.getLogger(__name__)

# Publishes one contract event Struct (``EventPublisher.emit`` in the actor).
Emit = Callable[[msgspec.Struct], object]
# A repo's bases as the store knows them (worktree meta's baseRef, the repo's setting).
BasesOf = Callable[[str], Bases]


def _no_bases(repo_id: str) -> Bases:
    return Bases()


def scan_with_ahead_behind(
    repo_path: str, bases: Bases, cache: AheadBehindCache
) -> list[WorktreeFacts]:
    """One worker-thread job: the listing, then each row's ahead/behind counts."""
    return with_ahead_behind(repo_path, scan_worktrees(repo_path), bases, cache)


def read_one_with_ahead_behind(
    repo_path: str, worktree_path: str, common: str, bases: Bases, cache: AheadBehindCache
) -> WorktreeFacts | None:
    """One worker-thread job: one linked worktree's facts and its ahead/behind counts."""
    row = linked_worktree_at(repo_path, common, worktree_path)
    return None if row is None else with_ahead_behind(repo_path, [row], bases, cache)[0]


class RepoTracker:
    """Tracked repos, their facts, their watches and their locks."""

    def __init__(self, watcher: GitWatcher, emit: Emit, bases: BasesOf = _no_bases) -> None:
        self.watcher = watcher
        self.emit = emit
        self.bases = bases
        self.repos: dict[str, RepoFacts] = {}
        self.ahead_behind: dict[str, AheadBehindCache] = {}
        self._common_dirs: dict[str, str] = {}
        self._locks: dict[str, trio.Lock] = {}
        self._admin_locks: dict[str, trio.Lock] = {}
        # Rescans asked for and rescans done, counted per repo (see rescan_repo).
        self._asked: dict[str, int] = {}
        self._covered: dict[str, int] = {}
        # Branch names being made into worktrees (an entry only while one is).
        self._names: dict[tuple[str, str], trio.Lock] = {}

    def repo_lock(self, repo_id: str) -> trio.Lock:
        return self._locks.setdefault(repo_id, trio.Lock())

    def admin_lock(self, repo_id: str) -> trio.Lock:
        """Held around every git command that writes a repo's worktree list or reads all
        of it (``worktree add``/``move``/``remove``, ``branch -m``/``-d``): git is not safe
        to run two of them at once in one repo (an add reads every admin dir, and one
        that a concurrent add has made but not filled yet is fatal to it: "failed to
        read .git/worktrees/<name>/commondir"). Never held while waiting for the repo lock.
        """
        return self._admin_locks.setdefault(repo_id, trio.Lock())

    @asynccontextmanager
    async def name_lock(self, repo_id: str, branch: str) -> AsyncIterator[None]:
        """Held by a create from its checks until its worktree exists: creates of other
        names run side by side, two of one name one after the other (the second then
        finds the first's worktree, as if they had come in turn)."""
        key = (repo_id, branch)
        lock = self._names.setdefault(key, trio.Lock())
        try:
            async with lock:
                yield
        finally:
            # trio hands a released lock straight to its next waiter: unheld, none waits.
            if not lock.locked():
                del self._names[key]

    async def track_repo(self, repo_id: str, path: str, kind: RepoKind = "git") -> None:
        """Start tracking a repo: read it, watch it, publish its rows as added.

        Returns once the first scan is done, also when another task started it.
        """
        if repo_id in self.repos:
            async with self.repo_lock(repo_id):
                return  # the lock is held across the first scan: now it is complete
        self.repos[repo_id] = RepoFacts(repo_id=repo_id, path=path, kind=kind)
        # Invariant: no checkpoint between registering the repo and taking its lock
        # (trio's Lock.acquire does not yield when the lock is free).
        await self.rescan_repo(repo_id)

    def untrack_repo(self, repo_id: str) -> None:
        """Stop tracking (the repo left the store or moved): its rows are removed."""
        repo = self.repos.pop(repo_id, None)
        if repo is not None:
            self._emit([WorktreeRemoved(repo_id, path) for path in repo.rows])
        self._common_dirs.pop(repo_id, None)
        self.ahead_behind.pop(repo_id, None)
        self.watcher.unwatch_repo(repo_id)

    async def rescan_repo(self, repo_id: str) -> None:
        """Bring the repo's facts up to date with what is on disk now; returns once a
        scan that began after this call has ended.

        Calls that arrive while a scan runs share the next one: a burst of N worktree
        creates (or N merge previews) costs about two scans, not N, and each caller
        still gets facts read after it asked."""
        ticket = self._asked[repo_id] = self._asked.get(repo_id, 0) + 1
        async with self.repo_lock(repo_id):
            if self._covered.get(repo_id, 0) >= ticket:
                return  # a scan that began after this ask has ended meanwhile
            await self._counted_rescan(repo_id)

    async def rescan_repo_locked(self, repo_id: str) -> None:
        """Rescan while the caller already holds :meth:`repo_lock` (a rename does)."""
        await self._counted_rescan(repo_id)

    async def _counted_rescan(self, repo_id: str) -> None:
        begun = self._asked.get(repo_id, 0)  # every ask made so far is answered by this scan
        await self._rescan_locked(repo_id)
        self._covered[repo_id] = max(self._covered.get(repo_id, 0), begun)

    async def _rescan_locked(self, repo_id: str) -> None:
        repo = self.repos.get(repo_id)
        if repo is None:
            return
        try:
            if repo.kind == "folder":
                listing = [await trio.to_thread.run_sync(folder_facts, repo.path)]
            else:
                cache = self.ahead_behind.setdefault(repo_id, AheadBehindCache())
                listing = await trio.to_thread.run_sync(
                    scan_with_ahead_behind, repo.path, self.bases(repo_id), cache
                )
                await self._watch_repo_dirs(repo_id, repo.path)
        except RepoUnavailable as exc:
            # Every foreign error of a scan is mapped to RepoUnavailable in gitfacts: a
            # repo git cannot read is reported, it never ends the watcher or the actor.
            self.watcher.unwatch_repo(repo_id)
            self._common_dirs.pop(repo_id, None)
            self._emit(apply_unavailable(repo, str(exc)))
            return
        await self._apply(repo, apply_listing(repo, listing))

    async def rescan_worktree(self, repo_id: str, path: str) -> None:
        """Read the linked worktree at ``path`` (one a create just made) and add or update
        its row, the other rows left as they stand: making the Nth worktree of a repo
        costs one read, not a scan of all N. A whole rescan when it cannot be read on
        its own (see ``gitfacts.linked_worktree_at``)."""
        async with self.repo_lock(repo_id):
            repo = self.repos.get(repo_id)
            if repo is None:
                return
            row = None
            if repo.kind == "git" and repo.unavailable is None:
                with contextlib.suppress(RepoUnavailable):  # the rescan below reports it
                    common = await self._watch_repo_dirs(repo_id, repo.path)
                    cache = self.ahead_behind.setdefault(repo_id, AheadBehindCache())
                    row = await trio.to_thread.run_sync(
                        read_one_with_ahead_behind,
                        repo.path, path, common, self.bases(repo_id), cache,
                    )  # fmt: skip
            if row is None:
                await self._counted_rescan(repo_id)
            else:
                await self._apply(repo, apply_row(repo, row))

    async def _apply(self, repo: RepoFacts, update: ListingUpdate) -> None:
        """Publish what a listing changed; watch, unwatch and count what it calls for."""
        repo_id = repo.repo_id
        for path in update.newly_unrepresentable:
            log.warning(
                "repo %s: worktree %s is not shown (%s)",
                repo.path,
                display_text(path),
                repo.unrepresentable[path],
            )
        for path in update.removed:
            self.watcher.unwatch_worktree(repo_id, path)
        self._emit(update.events)
        for row in update.added:
            if repo.kind == "folder":
                self.watcher.watch_folder(repo_id, row.path)
                continue
            admin = None if row.is_main else row.admin_dir
            await self.watcher.watch_worktree(repo_id, row.path, admin, files=not row.is_bare)
        for path in update.status_needed:
            await self._refresh_status_locked(repo, path)

    async def _watch_repo_dirs(self, repo_id: str, repo_path: str) -> str:
        """Watch the repo's shared dirs (once; the worktrees dir once it exists); its
        common dir, read once."""
        common = self._common_dirs.get(repo_id)
        if common is None:
            common = await trio.to_thread.run_sync(common_dir, repo_path)
            self._common_dirs[repo_id] = common
            self.watcher.watch_repo(repo_id, common, repo_path)
        else:
            self.watcher.ensure_worktrees_dir_watched(repo_id, common)
        return common

    async def refresh_status(self, repo_id: str, path: str) -> None:
        async with self.repo_lock(repo_id):
            repo = self.repos.get(repo_id)
            if repo is not None:
                await self._refresh_status_locked(repo, path)

    async def _refresh_status_locked(self, repo: RepoFacts, path: str) -> None:
        row = repo.rows.get(path)
        if row is None or row.is_bare or repo.kind == "folder":
            return
        try:
            counts = await trio.to_thread.run_sync(read_dirty_counts, path)
        except RepoUnavailable:
            # Deleted under us: the admin-dir events that follow rescan the listing.
            return
        self._emit(apply_dirty(repo, path, counts))

    async def apply_batch(self, batch: set[Invalidation]) -> None:
        """Bring facts up to date for one debounced batch of invalidations."""
        if any(isinstance(item, RescanEverything) for item in batch):
            rescans = set(self.repos)
            statuses = {(rid, p) for rid, repo in self.repos.items() for p in repo.rows}
        else:
            rescans = {item.repo_id for item in batch if isinstance(item, RescanRepo)}
            statuses = {
                (item.repo_id, item.worktree_path)
                for item in batch
                if isinstance(item, RefreshStatus)
            }
        for repo_id in sorted(rescans):
            await self.rescan_repo(repo_id)
        for repo_id, path in sorted(statuses):
            await self.refresh_status(repo_id, path)

    async def retry_unavailable(self) -> None:
        """Re-read repos reported unavailable (their directory may be back)."""
        for repo_id in [rid for rid, repo in self.repos.items() if repo.unavailable]:
            await self.rescan_repo(repo_id)

    def _emit(self, events: list[FactEvent]) -> None:
        for event in events:
            self.emit(fact_event_to_wire(event))
