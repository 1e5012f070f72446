"""The gitwatch actor: wires the watcher, the repo tracker, the store mirror and the ops.

Start-up order: ops are registered and the watcher runs at once; the store mirror
loads in the background (store may start later or restart: the mirror re-snapshots),
and every change to the mirrored repo list is reconciled into tracked repos. Ops that
need repos answer only from a whole mirror (``RpcStorePort.whole_view``): until the
first snapshot arrives, or while a re-snapshot takes longer than its bound, they answer
``unavailable``.

Ops are registered from ``orca.contracts.gitwatch``'s descriptors, events go out as its
Structs (``ctx.events.emit``). Errors cross the boundary here, once: gitwatch's own tree (``errors``) is mapped to
the wire classes; errors already on the wire (from store calls) pass through.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import msgspec
import trio

from actors.gitwatch import errors
from actors.gitwatch.factstate import RepoKind
from actors.gitwatch.firstmessage import PENDING_FIRST_MESSAGE_RENAME, rename_from_first_message
from actors.gitwatch.lifecycle import (
    CreateRequest,
    create_worktree,
    remove_worktree,
    rename_worktree,
)
from actors.gitwatch.merging import merge_worktree, preview_merge
from actors.gitwatch.storeview import RpcStorePort, StoreView, bases_of, store_mirror
from actors.gitwatch.tracker import RepoTracker
from actors.gitwatch.watcher import GitWatcher
from actors.gitwatch.watchplan import Invalidation
from actors.gitwatch.wirerows import (
    build_rows,
    folder_workspace_rows,
    snapshot_repo,
    unrepresentable_rows,
    workspace_roots,
)
from actors.gitwatch.wiretext import display_text
from orca.actor import ActorContext, Mirror, memory
from orca.actor.inotify import Inotify
from orca.contracts import NoArgs, Op
from orca.contracts import gitwatch as contract
from orca.contracts import store as store_contract
from orca.model.codec import to_builtins
from orca.model.merge import FOLDER_WORKSPACE_REPO_ID_PREFIX
from orca.model.types_repo import Repo
from orca.wire import errors as wire

log = logging.getLogger(__name__)

# worktree.list asks store for folder workspaces each time; a store that hangs must not
# hold the git listing for the whole RPC timeout.
FOLDER_LIST_TIMEOUT_S = 1.0
# The longest a snapshot waits for a starting gitwatch to track the store's repos (well
# inside a caller's 5 s RPC timeout: past it, the answer is what is tracked so far).
FIRST_TRACK_WAIT_S = float(os.environ.get("ORCA_GITWATCH_FIRST_TRACK_WAIT_S", "2.0"))

# Served each in a task of its own: a create waits on git for tens of milliseconds and
# orch asks for several at once, a preview per variant of a run (`orca run show`). A
# create holds its name (``RepoTracker.name_lock``) and every rescan the repo's lock;
# the other mutations (remove, rename, merge) stay one at a time in arrival order.
CONCURRENT_OPS = frozenset({contract.WORKTREE_CREATE.name, contract.WORKTREE_MERGE_PREVIEW.name})
# Previews computed at once (each a merge in memory and up to three git processes).
PREVIEW_SLOTS = 4

A = TypeVar("A", bound=msgspec.Struct)
_WIRE_ERROR: wire.ErrorTable = (
    (errors.CallerError, wire.BadRequest),
    (errors.MissingTarget, wire.NotFound),
    (errors.StateConflict, wire.Conflict),
    (errors.RepoUnavailable, wire.Unavailable),
    (errors.PeerUnavailable, wire.Unavailable),
    (errors.GitwatchError, wire.Internal),
)


def to_wire_error(exc: errors.GitwatchError) -> wire.OrcaError:
    return wire.mapped_error(exc, _WIRE_ERROR, wire.Internal)


def _mapped(
    handler: Callable[[A], Awaitable[Any]], done: Callable[[], None]
) -> Callable[[A], Awaitable[Any]]:
    async def run(args: A) -> Any:
        try:
            return await handler(args)
        except errors.GitwatchError as exc:
            raise to_wire_error(exc) from exc
        finally:
            done()

    return run


class GitwatchActor:
    def __init__(self, ctx: ActorContext, tracker: RepoTracker, mirror: Mirror[StoreView]):
        self.ctx = ctx
        # libgit2's work (statuses, scans, merges) leaves freed memory with the process:
        # given back once it pauses (every op and watcher batch counts as work).
        self.trim = memory.QuietTrim()
        self.tracker = tracker
        self.mirror = mirror
        self.store = RpcStorePort(ctx.connect("store"), mirror)
        # Set once every repo of the store's first whole view is tracked: a snapshot
        # taken before it would list a restarted gitwatch's worktrees as missing.
        self.tracked_once = trio.Event()
        self.preview_slots = trio.Semaphore(PREVIEW_SLOTS)

    def view(self) -> StoreView:
        return self.store.view()

    def handlers(self) -> list[tuple[Op[Any, Any], Callable[[Any], Awaitable[Any]]]]:
        """Every op of the contract with its handler (a test checks they are all served)."""
        return [
            (contract.WORKTREE_LIST, self.list_worktrees),
            (contract.WORKTREE_PATHS, self.list_paths),
            (contract.WORKTREE_CREATE, self.create),
            (contract.WORKTREE_REMOVE, self.remove),
            (contract.WORKTREE_RENAME, self.rename),
            (contract.WORKTREE_RENAME_FROM_FIRST_MESSAGE, self.rename_from_first_message),
            (contract.WORKTREE_MERGE_PREVIEW, self.merge_preview),
            (contract.WORKTREE_MERGE, self.merge),
            (contract.SNAPSHOT, self.snapshot),
        ]

    def register(self) -> None:
        for op, handler in self.handlers():
            concurrent = op.name in CONCURRENT_OPS
            self.ctx.rpc.register(op, _mapped(handler, self.trim.worked), concurrent=concurrent)
        self.ctx.rpc.extra_stats = lambda: {
            "gitwatch": {
                "repos": len(self.tracker.repos),
                "watches": self.tracker.watcher.watch_count,
                "degraded": len(self.tracker.watcher.degraded),
                "unrepresentable": sum(len(r.unrepresentable) for r in self.tracker.repos.values()),
                "memoryTrims": self.trim.trims,  # freed memory given back (QuietTrim)
            }
        }

    async def _folder_workspace_rows(
        self, repo_id: str | None
    ) -> tuple[list[contract.WorktreeRow], list[contract.UnavailableRepo]]:
        """Route-A folder workspaces, asked of store at list time (the mirror does not
        carry them); a store that does not answer is reported, not hidden."""
        if repo_id is not None and not repo_id.startswith(FOLDER_WORKSPACE_REPO_ID_PREFIX):
            return [], []
        try:
            listed = await self.ctx.connect("store").invoke(
                store_contract.FOLDER_WORKSPACE_LIST, timeout=FOLDER_LIST_TIMEOUT_S
            )
        except wire.OrcaError as exc:
            log.warning("folder workspaces not listed: %s", exc)
            reason = display_text(f"store did not list folder workspaces ({exc})")
            where = repo_id or FOLDER_WORKSPACE_REPO_ID_PREFIX + "*"
            return [], [
                contract.UnavailableRepo(repo_id=where, path="(folder workspaces)", reason=reason)
            ]
        folders = [
            f
            for f in listed.folder_workspaces
            if repo_id is None or FOLDER_WORKSPACE_REPO_ID_PREFIX + f.project_group_id == repo_id
        ]
        return folder_workspace_rows(folders), []

    async def list_worktrees(self, args: contract.ListArgs) -> dict[str, Any]:
        listing = await self._listing(args)
        # Rows are model records: the codec writes their ``extra`` (fields this build does
        # not know) back as keys of their own; a plain msgspec encode would nest it.
        wire_listing: dict[str, Any] = to_builtins(listing)
        return wire_listing

    async def list_paths(self, args: NoArgs) -> contract.WorktreePaths:
        listing = await self._listing(contract.ListArgs())
        return contract.WorktreePaths(
            worktrees=[contract.WorktreePath(id=r.id, path=r.path) for r in listing.worktrees]
        )

    async def _listing(self, args: contract.ListArgs) -> contract.WorktreeList:
        # Never git's facts joined with a copy of store being reloaded: a worktree whose
        # repo or meta the old copy lacks would be left out (issue 33).
        await self._tracked_first()
        view = await self.store.whole_view()
        repos = dict(view.repos)
        folder_rows, folder_unavailable = await self._folder_workspace_rows(args.repo_id)
        if args.repo_id is not None and args.repo_id.startswith(FOLDER_WORKSPACE_REPO_ID_PREFIX):
            return contract.WorktreeList(
                worktrees=folder_rows, unavailable_repos=folder_unavailable
            )
        if args.repo_id is not None:
            asked = await self.store.lookup_repo(args.repo_id)
            if asked is None:
                raise errors.RepoNotFound(f"no repo with id {args.repo_id!r}")
            repos[asked.id] = asked
            # Tracks it if the mirror lags behind store, or waits for a first scan
            # that follow_store started a moment ago.
            await self.tracker.track_repo(asked.id, asked.path, _kind(asked))
        await self.tracker.retry_unavailable()
        roots = workspace_roots(repos, view.settings)
        rows: list[contract.WorktreeRow] = []
        unavailable: list[contract.UnavailableRepo] = []
        withheld: list[contract.UnrepresentableWorktree] = []
        for repo_id, facts in self.tracker.repos.items():
            repo = repos.get(repo_id)
            if repo is None or (args.repo_id is not None and repo_id != args.repo_id):
                continue
            if facts.unavailable:
                unavailable.append(
                    contract.UnavailableRepo(
                        repo_id=repo_id, path=facts.path, reason=display_text(facts.unavailable)
                    )
                )
            rows.extend(build_rows(facts, repo, view.meta, roots))
            withheld.extend(unrepresentable_rows(facts))
        return contract.WorktreeList(
            worktrees=rows + folder_rows,
            unavailable_repos=unavailable + folder_unavailable,
            unrepresentable=withheld,
        )

    async def create(self, args: contract.CreateArgs) -> contract.Created:
        def progress(stage: contract.Stage, text: str) -> None:
            self.ctx.events.emit(
                contract.CreateProgress(
                    request_id=args.request_id, repo_id=args.repo_id, stage=stage, text=text
                )
            )

        request = CreateRequest(
            repo_id=args.repo_id,
            name=args.name,
            base=args.base,
            run_setup=args.setup == "run",
            source=args.source,
            pending_first_agent_message_rename=args.pending_first_agent_message_rename,
            carry_from=args.carry_from,
        )
        return await create_worktree(self.tracker, self.store, request, progress)

    async def remove(self, args: contract.RemoveArgs) -> contract.Removed:
        return await remove_worktree(
            self.tracker,
            self.store,
            args.worktree_id,
            force=args.force,
            delete_branch=args.delete_branch,
        )

    async def rename(self, args: contract.RenameArgs) -> contract.Renamed:
        return await rename_worktree(
            self.tracker,
            self.store,
            self.ctx.events.emit,
            args.worktree_id,
            args.new_name,
            display_name=args.display_name,
            rename_branch=args.rename_branch,
            # The user chose this name: no agent's first message replaces it (01-23).
            meta_patch={PENDING_FIRST_MESSAGE_RENAME: None},
        )

    async def rename_from_first_message(
        self, args: contract.FirstMessageArgs
    ) -> contract.FirstMessageRename:
        return await rename_from_first_message(
            self.tracker, self.store, self.ctx.events.emit, args.worktree_id, args.message
        )

    async def merge_preview(self, args: contract.MergePreviewArgs) -> contract.MergePreview:
        async with self.preview_slots:
            return await preview_merge(self.tracker, self.store, args)

    async def merge(self, args: contract.MergeArgs) -> contract.MergeResult:
        return await merge_worktree(self.tracker, self.store, args)

    async def _tracked_first(self) -> None:
        """Until the store's repos are tracked once (at most ``FIRST_TRACK_WAIT_S``): a
        snapshot or listing from a gitwatch that has not tracked them yet (just
        restarted) would drop every worktree for a moment, every face would show them
        gone, and `orca ui` lost its selection (test_outage). Bounded: a store that is
        down does not hold the answer for longer."""
        with trio.move_on_after(FIRST_TRACK_WAIT_S):
            await self.tracked_once.wait()

    async def snapshot(self, args: NoArgs) -> contract.GitwatchSnapshot:
        await self._tracked_first()
        return contract.GitwatchSnapshot(
            epoch=self.ctx.events.epoch,
            seq=self.ctx.events.seq,
            repos={rid: snapshot_repo(facts) for rid, facts in self.tracker.repos.items()},
            watches=self.tracker.watcher.watch_count,
            degraded=sorted(display_text(path) for _repo, path in self.tracker.watcher.degraded),
        )

    async def follow_store(self) -> None:
        """Track exactly the repos the store has, as the mirror changes."""
        tracked: dict[str, tuple[str, str]] = {}

        def changed(mirror: Mirror[StoreView]) -> bool:
            return mirror.state is not None and _signature(mirror.state) != tracked

        await self.mirror.wait_whole()  # the store's first snapshot
        while True:
            wanted = _signature(self.view())
            for repo_id in [r for r in tracked if wanted.get(r) != tracked[r]]:
                self.tracker.untrack_repo(repo_id)
                del tracked[repo_id]
            for repo_id, (path, kind) in wanted.items():
                if repo_id not in tracked:
                    tracked[repo_id] = (path, kind)
                    await self.tracker.track_repo(repo_id, path, _kind_of(kind))
            self.tracked_once.set()  # every repo of a whole view is tracked
            self.trim.worked()
            await self.mirror.wait_until(changed)


def _kind_of(kind: str | None) -> RepoKind:
    return "folder" if kind == "folder" else "git"


def _kind(repo: Repo) -> RepoKind:
    return _kind_of(repo.kind)


def _signature(view: StoreView) -> dict[str, tuple[str, str]]:
    return {repo.id: (repo.path, repo.kind or "git") for repo in view.repos.values()}


async def setup(ctx: ActorContext) -> None:
    inotify = Inotify()
    watcher = GitWatcher(inotify)
    mirror = store_mirror(ctx.connect("store"), ctx.paths.ipc_endpoint("store", "pub"))
    tracker = RepoTracker(
        watcher, ctx.events.emit, bases=lambda repo_id: bases_of(mirror.state, repo_id)
    )
    actor = GitwatchActor(ctx, tracker, mirror)
    actor.register()

    async def apply_batch(batch: set[Invalidation]) -> None:
        try:
            await tracker.apply_batch(batch)
        finally:
            actor.trim.worked()

    async def watch() -> None:
        try:
            await watcher.run(apply_batch)
        finally:
            inotify.close()

    async def follow() -> None:
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(mirror.run)
                nursery.start_soon(actor.follow_store)
        finally:
            mirror.close()

    ctx.nursery.start_soon(watch)
    ctx.nursery.start_soon(follow)
    ctx.nursery.start_soon(actor.trim.run)
