"""The ``store`` actor's trio shell: load, serve ops, publish events, save.

Start-up: take the single-writer lock, sweep orphan temp files, load the primary (or
the newest valid backup; the ``LoadReport`` is logged and served in ``sys.stats``),
run the pure load pipeline (``load.decode_state``), then schedule one save: it writes
nothing when the loaded bytes are already canonical. A GC pass over worktreeMeta runs
in the background.

Each op runs the pure function for it against the current state, commits the Change
(``core.StoreCore``), publishes its events and schedules a debounced save; changes that
must survive a crash before the caller moves on (pane retirement, identity migration,
``session.flush``) are saved before the reply. On SIGTERM the saver is fenced and
flushed: that flush is the last write of the process.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from actors.store import api, entities, retired_log, sessions, worktrees
from actors.store.change import Change
from actors.store.core import StoreCore, parser
from actors.store.durable_file import DurableFile, SaveFailed, SaveOutcome
from actors.store.durable_load import LoadReport
from actors.store.load import LoadedState, fresh_state
from actors.store.saver import Saver
from actors.store.writer_lock import WriterLock
from orca.actor import ActorContext
from orca.model.codec import to_builtins
from orca.model.state import PersistedState, session_for_host
from orca.paths import ORCA_HOME_ENV
from orca.wire.errors import NotFound, Unavailable

log = logging.getLogger(__name__)


def now_ms() -> int:
    return int(time.time() * 1000)


class StoreActor:
    def __init__(
        self,
        ctx: ActorContext,
        durable: DurableFile,
        core: StoreCore,
        report: LoadReport,
        load_problems: tuple[str, ...],
    ) -> None:
        self.ctx = ctx
        self.durable = durable
        self.core = core
        self.report = report
        self.load_problems = load_problems
        self.saver = Saver(durable, core.encoder, on_outcome=self._on_save_outcome)
        self._failing = False

    # -- saving ------------------------------------------------------------------
    def _on_save_outcome(self, outcome: SaveOutcome) -> None:
        if isinstance(outcome, SaveFailed):
            log.error(
                "saving %s failed (%s); keeping the last good file, will retry",
                self.durable.path,
                outcome.error.message,
            )
            if not self._failing:
                self.ctx.events.publish("store.saveFailed", outcome.error.to_dict())
            self._failing = True
        elif self._failing:
            self._failing = False
            log.info("saving %s works again", self.durable.path)
            self.ctx.events.publish("store.saveRecovered", {})

    async def apply(self, change: Change) -> Any:
        """Commit, publish, and save (debounced, or before replying for a flush change)."""
        if self.saver.scheduler.fenced and change.state is not self.core.state:
            # The stop flush has begun: a change acknowledged now could never be saved.
            raise Unavailable("the store is stopping; retry when it is back")
        events = self.core.commit(change)
        for event in events:
            self.ctx.events.publish(event.type, event.data)
        if events:
            self.saver.mark_dirty()
            if change.durability == "flush":
                outcome = await self.saver.flush()
                if isinstance(change.result, dict):
                    return {**change.result, "durable": not isinstance(outcome, SaveFailed)}
        return change.result

    def stats(self) -> dict[str, Any]:
        sched = self.saver.scheduler.statistics()
        return {
            "store": {
                "load": {**self.report.to_dict(), "stateProblems": list(self.load_problems)},
                "save": self.durable.statistics().to_dict(),
                "scheduler": {"dirty": sched.dirty, "fenced": sched.fenced},
                "revision": self.core.revision,
                "file": str(self.durable.path),
            }
        }

    async def gc_worktree_meta(self) -> dict[str, Any]:
        now = now_ms()
        candidates = worktrees.gc_candidates(self.core.state, now)
        gone = await trio.to_thread.run_sync(
            lambda: [w for w, path in candidates if not os.path.exists(path)]
        )
        result: dict[str, Any] = await self.apply(
            worktrees.remove_stale_meta(self.core.state, gone, now)
        )
        if result["removed"]:
            log.info("worktreeMeta GC removed %d stale entries", len(result["removed"]))
        return result

    # -- ops -------------------------------------------------------------------------
    def register(self) -> None:
        rpc = self.ctx.rpc

        def st() -> PersistedState:
            return self.core.state  # the state when the op runs, not when registered

        mint = self.core.mint

        def op(name: str, args_type: type[Any], fn: Callable[[Any], Awaitable[Any]]) -> None:
            rpc.register(name, fn, args_type)

        def mutation(name: str, args_type: type[Any], fn: Callable[[Any], Change]) -> None:
            async def handler(args: Any) -> Any:
                return await self.apply(fn(args))

            rpc.register(name, handler, args_type)

        async def value(result: Any) -> Any:
            return result

        mutation(
            "repo.add",
            api.RepoAddArgs,
            lambda a: entities.add_repo(
                st(),
                a.path,
                new_id=mint(),
                now_ms=now_ms(),
                display_name=a.display_name,
                kind=a.kind,
                fields=a.fields,
            ),
        )
        mutation(
            "repo.update", api.PatchByIdArgs, lambda a: entities.update_repo(st(), a.id, a.patch)
        )
        mutation("repo.remove", api.IdArgs, lambda a: entities.remove_repo(st(), a.id))
        op(
            "repo.list",
            api.NoArgs,
            lambda a: value({"repos": [to_builtins(r) for r in st().repos]}),
        )
        mutation(
            "project.upsert",
            api.ProjectArgs,
            lambda a: entities.upsert_project(st(), a.project, new_id=mint(), now_ms=now_ms()),
        )
        mutation("project.remove", api.IdArgs, lambda a: entities.remove_project(st(), a.id))
        mutation(
            "projectGroup.upsert",
            api.ProjectGroupArgs,
            lambda a: entities.upsert_project_group(
                st(), a.project_group, new_id=mint(), now_ms=now_ms()
            ),
        )
        mutation(
            "projectGroup.remove", api.IdArgs, lambda a: entities.remove_project_group(st(), a.id)
        )
        mutation(
            "folderWorkspace.upsert",
            api.FolderWorkspaceArgs,
            lambda a: entities.upsert_folder_workspace(
                st(), a.folder_workspace, new_id=mint(), now_ms=now_ms()
            ),
        )
        mutation(
            "folderWorkspace.remove",
            api.IdArgs,
            lambda a: entities.remove_folder_workspace(st(), a.id),
        )
        op("worktreeMeta.get", api.OptionalWorktreeIdArgs, self._get_meta)
        mutation(
            "worktreeMeta.set",
            api.MetaSetArgs,
            lambda a: worktrees.set_meta(st(), a.worktree_id, a.meta),
        )
        mutation(
            "worktreeMeta.patch",
            api.MetaPatchArgs,
            lambda a: worktrees.patch_meta(st(), a.worktree_id, a.patch),
        )
        mutation(
            "worktreeMeta.remove",
            api.WorktreeIdArgs,
            lambda a: worktrees.remove_meta(st(), a.worktree_id),
        )
        op("worktreeMeta.gc", api.NoArgs, lambda a: self.gc_worktree_meta())
        mutation(
            "lineage.set",
            api.LineageSetArgs,
            lambda a: worktrees.set_lineage(st(), a.worktree_id, a.lineage),
        )
        mutation(
            "workspaceLineage.set",
            api.WorkspaceLineageSetArgs,
            lambda a: worktrees.set_workspace_lineage(st(), a.child_workspace_key, a.lineage),
        )
        op("settings.get", api.NoArgs, lambda a: value(to_builtins(st().settings)))
        mutation("settings.patch", api.PatchArgs, lambda a: entities.patch_settings(st(), a.patch))
        op("ui.get", api.NoArgs, lambda a: value(to_builtins(st().ui)))
        mutation("ui.patch", api.PatchArgs, lambda a: entities.patch_ui(st(), a.patch))
        op(
            "session.get",
            api.SessionGetArgs,
            lambda a: value(sessions.session_view(st(), sessions.resolve_host_id(a.host_id))),
        )
        mutation(
            "session.set",
            api.SessionSetArgs,
            lambda a: sessions.set_session(st(), a.host_id, a.session, a.revision, mint),
        )
        mutation(
            "session.patch",
            api.SessionPatchArgs,
            lambda a: sessions.patch_session(st(), a.host_id, a.patch, a.revision, mint),
        )
        op("session.flush", api.SessionFlushArgs, self._flush_session)
        mutation(
            "session.retire_pane",
            api.RetirePaneArgs,
            lambda a: sessions.retire_session_pane(st(), a.host_id, a.tab_id, a.leaf_id, now_ms()),
        )
        op(
            "session.retired_since",
            api.RetiredSinceArgs,
            lambda a: value(
                retired_log.retired_since(st(), sessions.resolve_host_id(a.host_id), a.revision)
            ),
        )
        mutation(
            "worktree.migrate_identity",
            api.MigrateIdentityArgs,
            lambda a: worktrees.migrate_identity(st(), a.old_id, a.new_id),
        )
        op(
            "identity.resolve",
            api.WorktreeIdArgs,
            lambda a: value(worktrees.resolve_identity(st(), a.worktree_id)),
        )
        op(
            "state.snapshot",
            api.NoArgs,
            lambda a: value(
                {"epoch": self.ctx.events.epoch, "seq": self.ctx.events.seq, **self.core.snapshot()}
            ),
        )
        rpc.extra_stats = self.stats

    async def _get_meta(self, args: api.OptionalWorktreeIdArgs) -> Any:
        metas = self.core.state.worktree_meta
        if args.worktree_id is None:
            return {"worktreeMeta": {k: to_builtins(v) for k, v in metas.items()}}
        meta = metas.get(args.worktree_id)
        if meta is None:
            raise NotFound(f"no worktree meta for {args.worktree_id!r}")
        return to_builtins(meta)

    async def _flush_session(self, args: api.SessionFlushArgs) -> Any:
        result: dict[str, Any] = {}
        if args.session is not None:
            result.update(
                await self.apply(
                    sessions.set_session(
                        self.core.state, args.host_id, args.session, args.revision, self.core.mint
                    )
                )
            )
        else:
            session_for_host(self.core.state, sessions.resolve_host_id(args.host_id))
        outcome = await self.saver.flush()
        result["flushed"] = not isinstance(outcome, SaveFailed)
        return result


def _load(path: Path) -> tuple[DurableFile, StoreCore, LoadReport, LoadedState | None]:
    # ORCA_HOME isolates every path, the default workspace root included (tests and
    # profiles must never create worktrees under the user's real home).
    home_dir = os.environ.get(ORCA_HOME_ENV) or os.path.expanduser("~")
    durable = DurableFile(path)
    core = StoreCore(fresh_state(home_dir=home_dir))
    loaded, report = durable.load(parser(home_dir, core.mint))
    if loaded is not None:
        core.state = loaded.state
    return durable, core, report, loaded


async def setup(ctx: ActorContext) -> None:
    paths = ctx.paths
    paths.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    lock = WriterLock(paths.data_dir / "orca-data.json.lock")
    lock.acquire()
    durable, core, report, loaded = await trio.to_thread.run_sync(_load, paths.state_file)
    problems = () if loaded is None else loaded.problems
    level = logging.ERROR if report.recovered else logging.INFO
    log.log(
        level,
        "loaded %s from %s%s",
        paths.state_file,
        report.source,
        f" ({'; '.join(report.problems)})" if report.problems else "",
    )
    for problem in problems:
        log.warning("state: %s", problem)
    actor = StoreActor(ctx, durable, core, report, problems)
    actor.register()
    await ctx.nursery.start(actor.saver.run)
    actor.saver.mark_dirty()  # writes nothing if the loaded bytes are already canonical
    ctx.nursery.start_soon(actor.gc_worktree_meta)

    async def stop() -> None:
        await actor.saver.close()
        lock.release()

    ctx.on_stop(stop)
