"""The gitwatch actor: wires the watcher, the fact service, the store mirror and the ops.

Start-up order: ops are registered and the watcher runs at once; the store mirror
loads in the background (store may start later or restart: the mirror re-snapshots),
and every change to the mirrored repo list is reconciled into tracked repos. Until
the first snapshot arrives, ops that need repos answer ``unavailable``.

Errors cross the boundary here, once: gitwatch's own tree (``errors``) is mapped to
the wire classes; errors already on the wire (from store calls) pass through.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import trio

from actors.gitwatch import api, errors
from actors.gitwatch.factstate import RepoKind
from actors.gitwatch.inotify import Inotify
from actors.gitwatch.lifecycle import (
    CreateRequest,
    create_worktree,
    remove_worktree,
    rename_worktree,
)
from actors.gitwatch.service import GitwatchService
from actors.gitwatch.storeview import (
    RpcStorePort,
    StoreView,
    apply_store_event,
    load_store_view,
)
from actors.gitwatch.watcher import GitWatcher
from actors.gitwatch.wirerows import build_rows, dirty_to_wire, facts_to_wire, workspace_roots
from orca.actor import ActorContext, Mirror
from orca.model.types_repo import Repo
from orca.wire import errors as wire

log = logging.getLogger(__name__)

A = TypeVar("A")
_WIRE_ERROR: tuple[tuple[type[errors.GitwatchError], type[wire.OrcaError]], ...] = (
    (errors.CallerError, wire.BadRequest),
    (errors.MissingTarget, wire.NotFound),
    (errors.StateConflict, wire.Conflict),
    (errors.RepoUnavailable, wire.Unavailable),
    (errors.PeerUnavailable, wire.Unavailable),
    (errors.GitwatchError, wire.Internal),
)


def to_wire_error(exc: errors.GitwatchError) -> wire.OrcaError:
    for ours, theirs in _WIRE_ERROR:
        if isinstance(exc, ours):
            return theirs(str(exc))
    return wire.Internal(str(exc))


def _mapped(handler: Callable[[A], Awaitable[Any]]) -> Callable[[A], Awaitable[Any]]:
    async def run(args: A) -> Any:
        try:
            return await handler(args)
        except errors.GitwatchError as exc:
            raise to_wire_error(exc) from exc

    return run


class GitwatchActor:
    def __init__(self, ctx: ActorContext, service: GitwatchService, mirror: Mirror[StoreView]):
        self.ctx = ctx
        self.service = service
        self.mirror = mirror
        self.store = RpcStorePort(ctx.connect("store"), mirror)

    def view(self) -> StoreView:
        return self.store.view()

    def register(self) -> None:
        rpc = self.ctx.rpc
        rpc.register("worktree.list", _mapped(self.list_worktrees), api.ListArgs)
        rpc.register("worktree.create", _mapped(self.create), api.CreateArgs)
        rpc.register("worktree.remove", _mapped(self.remove), api.RemoveArgs)
        rpc.register("worktree.rename", _mapped(self.rename), api.RenameArgs)
        rpc.register("gitwatch.snapshot", _mapped(self.snapshot), api.NoArgs)
        rpc.extra_stats = lambda: {
            "gitwatch": {
                "repos": len(self.service.repos),
                "watches": self.service.watcher.watch_count,
                "degraded": len(self.service.watcher.degraded),
            }
        }

    async def list_worktrees(self, args: api.ListArgs) -> dict[str, Any]:
        view = self.view()
        repos = dict(view.repos)
        if args.repo_id is not None:
            asked = await self.store.lookup_repo(args.repo_id)
            if asked is None:
                raise errors.RepoNotFound(f"no repo with id {args.repo_id!r}")
            repos[asked.id] = asked
            # Tracks it if the mirror lags behind store, or waits for a first scan
            # that follow_store started a moment ago.
            await self.service.track_repo(asked.id, asked.path, _kind(asked))
        await self.service.retry_unavailable()
        roots = workspace_roots(repos, view.settings)
        rows: list[dict[str, Any]] = []
        unavailable: list[dict[str, Any]] = []
        for repo_id, facts in self.service.repos.items():
            repo = repos.get(repo_id)
            if repo is None or (args.repo_id is not None and repo_id != args.repo_id):
                continue
            if facts.unavailable:
                unavailable.append(
                    {"repoId": repo_id, "path": facts.path, "reason": facts.unavailable}
                )
            rows.extend(build_rows(facts, repo, view.meta, roots))
        return {"worktrees": rows, "unavailableRepos": unavailable}

    async def create(self, args: api.CreateArgs) -> dict[str, Any]:
        def progress(stage: str, text: str) -> None:
            self.ctx.events.publish(
                "worktree.create.progress",
                {
                    "requestId": args.request_id,
                    "repoId": args.repo_id,
                    "stage": stage,
                    "text": text,
                },
                topic=progress_topic(args.request_id),
            )

        request = CreateRequest(
            repo_id=args.repo_id,
            name=args.name,
            base=args.base,
            run_setup=args.setup == "run",
            source=args.source,
        )
        return await create_worktree(self.service, self.store, request, progress)

    async def remove(self, args: api.RemoveArgs) -> dict[str, Any]:
        return await remove_worktree(
            self.service,
            self.store,
            args.worktree_id,
            force=args.force,
            delete_branch=args.delete_branch,
        )

    async def rename(self, args: api.RenameArgs) -> dict[str, Any]:
        return await rename_worktree(
            self.service, self.store, self.ctx.events.publish, args.worktree_id, args.new_name
        )

    async def snapshot(self, args: api.NoArgs) -> dict[str, Any]:
        repos = {
            repo_id: {
                "path": facts.path,
                "kind": facts.kind,
                "unavailable": facts.unavailable,
                "worktrees": {
                    path: {
                        "git": facts_to_wire(row),
                        "gitStatus": dirty_to_wire(facts.dirty.get(path)),
                    }
                    for path, row in facts.rows.items()
                },
            }
            for repo_id, facts in self.service.repos.items()
        }
        return {
            "epoch": self.ctx.events.epoch,
            "seq": self.ctx.events.seq,
            "repos": repos,
            "watches": self.service.watcher.watch_count,
            "degraded": sorted(path for _repo, path in self.service.watcher.degraded),
        }

    async def follow_store(self) -> None:
        """Track exactly the repos the store has, as the mirror changes."""
        tracked: dict[str, tuple[str, str]] = {}

        def changed(mirror: Mirror[StoreView]) -> bool:
            return mirror.state is not None and _signature(mirror.state) != tracked

        while True:
            await self.mirror.wait_until(changed)
            wanted = _signature(self.view())
            for repo_id in [r for r in tracked if wanted.get(r) != tracked[r]]:
                self.service.untrack_repo(repo_id)
                del tracked[repo_id]
            for repo_id, (path, kind) in wanted.items():
                if repo_id not in tracked:
                    tracked[repo_id] = (path, kind)
                    await self.service.track_repo(repo_id, path, _kind_of(kind))


def progress_topic(request_id: str | None) -> str:
    """Progress of one create goes on its own topic so a CLI subscribes to just that."""
    return f"{api.PROGRESS_TOPIC_PREFIX}{request_id or ''}"


def _kind_of(kind: str | None) -> RepoKind:
    return "folder" if kind == "folder" else "git"


def _kind(repo: Repo) -> RepoKind:
    return _kind_of(repo.kind)


def _signature(view: StoreView) -> dict[str, tuple[str, str]]:
    return {repo.id: (repo.path, repo.kind or "git") for repo in view.repos.values()}


async def setup(ctx: ActorContext) -> None:
    inotify = Inotify()
    watcher = GitWatcher(inotify)
    service = GitwatchService(watcher, ctx.events.publish)
    mirror: Mirror[StoreView] = Mirror(
        client=ctx.connect("store"),
        pub_endpoint=ctx.paths.ipc_endpoint("store", "pub"),
        snapshot_op="state.snapshot",
        load=load_store_view,
        apply=apply_store_event,
    )
    actor = GitwatchActor(ctx, service, mirror)
    actor.register()

    async def watch() -> None:
        try:
            await watcher.run(service.apply_batch)
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
