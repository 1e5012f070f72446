"""The ``store`` actor's trio shell: load, serve ops, publish events, save.

Start-up: take the single-writer lock, sweep orphan temp files, load the primary (or
the newest valid backup) with the journal applied and compact once (``startup``; the
``LoadReport`` and the replay are logged and served in ``sys.stats``). A GC pass over
worktreeMeta runs in the background.

Ops and events are those of ``orca.contracts.store`` and nothing else: ``op_table``
pairs every descriptor with its handler (``register`` refuses a table that differs from
the contract). Each op runs the pure function for it against the current state, commits
the Change (``core.StoreCore``), appends its diff to the journal and waits until that is
fsync'd (group commit, ``journal``), publishes its event Structs, schedules a debounced
compaction, and only then replies: an acknowledged mutation survives ``kill -9``. A
structural change (repo, project, group, folder, worktree meta added/removed/re-keyed)
also makes the next compaction write the backup ring. Changes that must be in the
primary itself before the caller moves on (pane retirement, an exited PTY's bindings
retired, identity migration, ``session.flush``) are compacted before the reply. If the
journal cannot be written the op fails with ``unavailable`` (the change is applied in
memory and saved by the next compaction that works). Results and events leave as ``orca.model.codec`` builtins
(``wire``), so unknown record fields travel as the top-level keys they are in the file.
On SIGTERM the saver is fenced and flushed: that flush is the last write of the process.

A file written by a newer Orca (``schemaVersion`` above ``SCHEMA_VERSION``) is served
read-only: every change is refused with ``unavailable`` naming the version, nothing is
compacted, collected or written, and ``sys.stats`` reports it (``readOnlySchemaVersion``
and a state problem, which ``orca status`` prints as a warning).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import msgspec
import trio

from actors.store import (
    automations,
    entities,
    journal_format,
    pty_bindings,
    retired_log,
    sessions,
    ssh_targets,
    worktrees,
)
from actors.store.change import Change
from actors.store.core import new_uuid
from actors.store.durable_file import SaveFailed, SaveOutcome
from actors.store.journal import JournalWriteFailed
from actors.store.saver import Saver
from actors.store.startup import StartupLoad, compact_at_start, load_store
from actors.store.writer_lock import WriterLock
from orca.actor import ActorContext
from orca.actor.rpc_server import Later
from orca.contracts import store
from orca.contracts.base import NoArgs, Op
from orca.model.codec import to_builtins
from orca.model.state import SCHEMA_VERSION, PersistedState, session_for_host
from orca.model.worktree import WorktreeMeta
from orca.paths import ORCA_HOME_ENV
from orca.wire.errors import NotFound, OrcaError, Unavailable

log = logging.getLogger(__name__)

A = TypeVar("A", bound=msgspec.Struct)
R = TypeVar("R")
Handler = Callable[[Any], Awaitable[Any]]
# One row of the op table: the contract's descriptor and the handler serving it.
Row = tuple[Op[Any, Any], Handler]


# Ops whose change makes the next compaction write the backup ring too (issue 16 #9).
STRUCTURAL_OPS: frozenset[Op[Any, Any]] = frozenset(
    {
        store.REPO_ADD,
        store.REPO_UPDATE,
        store.REPO_REMOVE,
        store.PROJECT_UPSERT,
        store.PROJECT_REMOVE,
        store.PROJECT_GROUP_UPSERT,
        store.PROJECT_GROUP_REMOVE,
        store.FOLDER_WORKSPACE_UPSERT,
        store.FOLDER_WORKSPACE_REMOVE,
        store.WORKTREE_META_SET,
        store.WORKTREE_META_REMOVE,
        store.WORKTREE_MIGRATE_IDENTITY,
    }
)


def now_ms() -> int:
    return int(time.time() * 1000)


class StoreActor:
    def __init__(self, ctx: ActorContext, loaded: StartupLoad) -> None:
        self.ctx = ctx
        self.durable = loaded.durable
        self.journal = loaded.journal
        self.core = loaded.core
        self.report = loaded.report
        self.replay = loaded.replay
        self.load_problems = loaded.problems
        self.newer_schema = loaded.newer_schema
        self.saver = Saver(
            self.durable,
            self.core.encoder,
            on_outcome=self._on_save_outcome,
            journal=self.journal,
        )
        self._failing = False

    # -- publishing and saving ---------------------------------------------------------
    def _on_save_outcome(self, outcome: SaveOutcome) -> None:
        if isinstance(outcome, SaveFailed):
            log.error(
                "saving %s failed (%s); keeping the last good file, will retry",
                self.durable.path,
                outcome.error.message,
            )
            if not self._failing:
                error = outcome.error
                self.ctx.events.emit(
                    store.SaveFailed(errno=error.errno_name, message=error.message, at=error.at)
                )
            self._failing = True
        elif self._failing:
            self._failing = False
            log.info("saving %s works again", self.durable.path)
            self.ctx.events.emit(store.SaveRecovered())

    async def apply(self, change: Change, *, structural: bool = False) -> Any:
        """Commit, journal (fsync'd), publish, then compact (debounced, or now for a flush
        change); returns the op's result only once the change is on disk."""
        return await self.commit(change, structural=structural)()

    def commit(self, change: Change, *, structural: bool = False) -> Callable[[], Awaitable[Any]]:
        """Commit ``change`` now, in arrival order, and queue its journal record; return
        what finishes it (waits for the fsync and, for a flush change, the save, then
        gives the op's result). Ops reply through ``Later(commit(...))`` so the next
        request is committed while this one's fsync is pending: one fsync serves a burst."""
        if self.newer_schema is not None and change.state is not self.core.state:
            raise Unavailable(
                f"orca-data.json has schemaVersion {self.newer_schema}, newer than this"
                f" build's {SCHEMA_VERSION}: it is read-only here; upgrade Orca to change it"
            )
        if self.saver.scheduler.fenced and change.state is not self.core.state:
            # The stop flush has begun: a change acknowledged now could never be saved.
            raise Unavailable("the store is stopping; retry when it is back")
        before = self.core.state
        events = self.core.commit(change)
        if not events:

            async def unchanged() -> Any:
                return change.result

            return unchanged
        # No checkpoint between commit and diff: the ops are exactly this change.
        ops = journal_format.diff_state(before, self.core.state)
        self.saver.mark_dirty()
        if structural:
            self.saver.request_backup()
        entry = self.journal.enqueue(self.core.revision, ops, on_written=self._publisher(events))

        async def finish() -> Any:
            try:
                await self.journal.written(entry)
            except JournalWriteFailed as exc:
                raise Unavailable(
                    f"the change is applied but could not be written to disk ({exc});"
                    " it is saved when the disk accepts writes again"
                ) from exc
            if change.durability == "flush":
                outcome = await self.saver.flush()
                if isinstance(
                    change.result,
                    (store.PaneRetiredResult, store.PtyRetiredResult, store.IdentityMigrated),
                ):
                    durable = not isinstance(outcome, SaveFailed)
                    return msgspec.structs.replace(change.result, durable=durable)
            return change.result

        return finish

    def _publisher(self, events: tuple[msgspec.Struct, ...]) -> Callable[[], None]:
        def publish() -> None:
            for event in events:
                self.ctx.events.emit(event)

        return publish

    def stats(self) -> dict[str, Any]:
        sched = self.saver.scheduler.statistics()
        return {
            "store": {
                "load": {
                    **self.report.to_dict(),
                    "stateProblems": list(self.load_problems),
                    "readOnlySchemaVersion": self.newer_schema,
                    "journal": self.replay.to_dict(),
                },
                "journal": self.journal.statistics().to_dict(),
                "save": self.durable.statistics().to_dict(),
                "scheduler": {"dirty": sched.dirty, "fenced": sched.fenced},
                "revision": self.core.revision,
                "file": str(self.durable.path),
            }
        }

    async def gc_worktree_meta_at_start(self) -> None:
        """The start-up GC pass in the background: a refusal (disk full, read-only file)
        is logged, never an exception out of the store's nursery."""
        try:
            await self.gc_worktree_meta()
        except OrcaError as exc:
            log.warning("worktreeMeta GC at start did not run: %s", exc)

    async def gc_worktree_meta(self) -> store.MetasRemoved:
        if self.newer_schema is not None:
            return store.MetasRemoved(removed=[])  # read-only: nothing to collect here
        now = now_ms()
        candidates = worktrees.gc_candidates(self.core.state, now)
        gone = await trio.to_thread.run_sync(
            lambda: [w for w, path in candidates if not os.path.exists(path)]
        )
        result: store.MetasRemoved = await self.apply(
            worktrees.remove_stale_meta(self.core.state, gone, now), structural=True
        )
        if result.removed:
            log.info("worktreeMeta GC removed %d stale entries", len(result.removed))
        return result

    # -- ops -------------------------------------------------------------------------
    def register(self) -> None:
        """Serve every op of ``orca.contracts.store`` from the table (and nothing else)."""
        rows = self.op_table()
        served = [op.name for op, _ in rows]
        if sorted(served) != sorted(store.CONTRACT.ops):
            raise RuntimeError(f"store op table {sorted(served)} is not its contract")
        for op, handler in rows:
            self.ctx.rpc.register(op, handler)
        self.ctx.rpc.extra_stats = self.stats

    def op_table(self) -> list[Row]:
        core = self.core

        def st() -> PersistedState:
            return core.state  # the state when the op runs, not when registered

        mint = core.mint

        def mutate(op: Op[A, Any], fn: Callable[[A], Change]) -> Row:
            structural = op in STRUCTURAL_OPS

            async def handler(args: A) -> Later:
                return Later(self.commit(fn(args), structural=structural))

            return op, handler

        def read(op: Op[A, R], fn: Callable[[A], R]) -> Row:
            async def handler(args: A) -> Any:
                return fn(args)

            return op, handler

        def serve(op: Op[A, R], fn: Callable[[A], Awaitable[R]]) -> Row:
            async def handler(args: A) -> Any:
                return await fn(args)

            return op, handler

        return [
            mutate(
                store.REPO_ADD,
                lambda a: entities.add_repo(
                    st(),
                    a.path,
                    new_id=mint(),
                    now_ms=now_ms(),
                    display_name=a.display_name,
                    kind=a.kind,
                    fields=a.fields,
                ),
            ),
            mutate(store.REPO_UPDATE, lambda a: entities.update_repo(st(), a.id, a.patch)),
            mutate(store.REPO_REMOVE, lambda a: entities.remove_repo(st(), a.id)),
            read(store.REPO_LIST, lambda a: store.RepoList(repos=list(st().repos))),
            mutate(
                store.PROJECT_UPSERT,
                lambda a: entities.upsert_project(st(), a.project, new_id=mint(), now_ms=now_ms()),
            ),
            mutate(store.PROJECT_REMOVE, lambda a: entities.remove_project(st(), a.id)),
            mutate(
                store.PROJECT_GROUP_UPSERT,
                lambda a: entities.upsert_project_group(
                    st(), a.project_group, new_id=mint(), now_ms=now_ms()
                ),
            ),
            mutate(store.PROJECT_GROUP_REMOVE, lambda a: entities.remove_project_group(st(), a.id)),
            mutate(
                store.FOLDER_WORKSPACE_UPSERT,
                lambda a: entities.upsert_folder_workspace(
                    st(), a.folder_workspace, new_id=mint(), now_ms=now_ms()
                ),
            ),
            mutate(
                store.FOLDER_WORKSPACE_REMOVE,
                lambda a: entities.remove_folder_workspace(st(), a.id),
            ),
            read(
                store.FOLDER_WORKSPACE_LIST,
                lambda a: store.FolderWorkspaceList(folder_workspaces=list(st().folder_workspaces)),
            ),
            mutate(
                store.SSH_TARGET_UPSERT,
                lambda a: ssh_targets.upsert_ssh_target(st(), a.ssh_target, new_id=mint()),
            ),
            mutate(store.SSH_TARGET_REMOVE, lambda a: ssh_targets.remove_ssh_target(st(), a.id)),
            read(
                store.SSH_TARGET_LIST,
                lambda a: store.SshTargetList(ssh_targets=list(st().ssh_targets)),
            ),
            read(store.WORKTREE_META_GET, self._get_meta),
            read(
                store.WORKTREE_META_LIST,
                lambda a: store.MetaList(worktree_meta=dict(st().worktree_meta)),
            ),
            mutate(
                store.WORKTREE_META_SET,
                lambda a: worktrees.set_meta(st(), a.worktree_id, a.meta),
            ),
            mutate(
                store.WORKTREE_META_PATCH,
                lambda a: worktrees.patch_meta(st(), a.worktree_id, a.patch),
            ),
            mutate(
                store.WORKTREE_META_REMOVE,
                lambda a: worktrees.remove_meta(st(), a.worktree_id),
            ),
            serve(store.WORKTREE_META_GC, lambda a: self.gc_worktree_meta()),
            mutate(
                store.LINEAGE_SET,
                lambda a: worktrees.set_lineage(st(), a.worktree_id, a.lineage),
            ),
            read(
                store.LINEAGE_GET,
                lambda a: worktrees.lineage_view(st(), a.worktree_id),
            ),
            mutate(
                store.WORKSPACE_LINEAGE_SET,
                lambda a: worktrees.set_workspace_lineage(st(), a.child_workspace_key, a.lineage),
            ),
            read(store.SETTINGS_GET, lambda a: st().settings),
            mutate(store.SETTINGS_PATCH, lambda a: entities.patch_settings(st(), a.patch)),
            read(store.UI_GET, lambda a: st().ui),
            mutate(store.UI_PATCH, lambda a: entities.patch_ui(st(), a.patch)),
            read(
                store.SESSION_GET,
                lambda a: sessions.session_view(st(), sessions.resolve_host_id(a.host_id)),
            ),
            mutate(
                store.SESSION_SET,
                lambda a: sessions.set_session(st(), a.host_id, a.session, a.revision, mint),
            ),
            mutate(
                store.SESSION_PATCH,
                lambda a: sessions.patch_session(st(), a.host_id, a.patch, a.revision, mint),
            ),
            serve(store.SESSION_FLUSH, self._flush_session),
            mutate(
                store.SESSION_RETIRE_PANE,
                lambda a: sessions.retire_session_pane(
                    st(), a.host_id, a.tab_id, a.leaf_id, now_ms()
                ),
            ),
            mutate(  # seed 02 §9: a PTY that exited on its own (pty_bindings.py)
                store.SESSION_RETIRE_PTY,
                lambda a: pty_bindings.retire_pty(st(), a.host_id, a.pty_ids),
            ),
            mutate(  # issue 13: ptyd's truth after its start (pty_bindings.py)
                store.SESSION_RECONCILE_PTYS,
                lambda a: pty_bindings.reconcile_ptys(
                    st(), a.host_id, a.running, a.ended, now_ms()
                ),
            ),
            read(
                store.SESSION_BINDINGS,
                lambda a: pty_bindings.session_bindings(st(), a.host_id),
            ),
            read(
                store.SESSION_RETIRED_SINCE,
                lambda a: retired_log.retired_since(
                    st(), sessions.resolve_host_id(a.host_id), a.revision
                ),
            ),
            mutate(
                store.WORKTREE_MIGRATE_IDENTITY,
                lambda a: worktrees.migrate_identity(st(), a.old_id, a.new_id),
            ),
            read(
                store.IDENTITY_RESOLVE,
                lambda a: worktrees.resolve_identity(st(), a.worktree_id),
            ),
            read(store.STATE_SNAPSHOT, self._snapshot),
            read(store.AUTOMATION_LIST, lambda a: automations.automation_list(st())),
            mutate(store.AUTOMATION_PUT, lambda a: automations.put_automation(st(), a.automation)),
            mutate(store.AUTOMATION_REMOVE, lambda a: automations.remove_automation(st(), a.id)),
            mutate(store.AUTOMATION_RUN_BEGIN, lambda a: automations.begin_run(st(), a.run)),
            mutate(
                store.AUTOMATION_RUN_SETTLE,
                lambda a: automations.settle_run(
                    st(),
                    a.id,
                    status=a.status,
                    finished_at=a.finished_at,
                    output=a.output,
                    error=a.error,
                ),
            ),
        ]

    def _get_meta(self, args: store.WorktreeIdArgs) -> WorktreeMeta:
        meta = self.core.state.worktree_meta.get(args.worktree_id)
        if meta is None:
            raise NotFound(f"no worktree meta for {args.worktree_id!r}")
        return meta

    def _snapshot(self, args: NoArgs) -> store.StateSnapshot:
        return store.StateSnapshot(
            epoch=self.ctx.events.epoch,
            seq=self.ctx.events.seq,
            revision=self.core.revision,
            state=to_builtins(self.core.state),
        )

    async def _flush_session(self, args: store.SessionFlushArgs) -> store.SessionFlushed:
        written: store.SessionWritten | None = None
        if args.session is not None:
            written = await self.apply(
                sessions.set_session(
                    self.core.state, args.host_id, args.session, args.revision, self.core.mint
                )
            )
        else:
            session_for_host(self.core.state, sessions.resolve_host_id(args.host_id))
        outcome = await self.saver.flush()
        flushed = not isinstance(outcome, SaveFailed)
        if written is None:
            return store.SessionFlushed(flushed=flushed)
        return store.SessionFlushed(
            applied=written.applied,
            changed=written.changed,
            revision=written.revision,
            flushed=flushed,
        )


def _home_dir() -> str:
    # ORCA_HOME isolates every path, the default workspace root included (tests and
    # profiles must never create worktrees under the user's real home).
    return os.environ.get(ORCA_HOME_ENV) or os.path.expanduser("~")


async def setup(ctx: ActorContext) -> None:
    paths = ctx.paths
    paths.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    lock = WriterLock(paths.data_dir / "orca-data.json.lock")
    lock.acquire()
    loaded = await trio.to_thread.run_sync(load_store, paths.state_file, _home_dir(), new_uuid)
    report, replay = loaded.report, loaded.replay
    level = logging.ERROR if report.recovered or replay.problems else logging.INFO
    log.log(
        level,
        "loaded %s from %s%s; journal: %d changes replayed%s",
        paths.state_file,
        report.source,
        f" ({'; '.join(report.problems)})" if report.problems else "",
        replay.applied,
        f" ({'; '.join(replay.problems)})" if replay.problems else "",
    )
    for problem in loaded.problems:
        log.warning("state: %s", problem)
    await trio.to_thread.run_sync(compact_at_start, loaded)
    actor = StoreActor(ctx, loaded)
    actor.register()
    await ctx.nursery.start(actor.journal.run)
    await ctx.nursery.start(actor.saver.run)
    ctx.nursery.start_soon(actor.gc_worktree_meta_at_start)

    async def stop() -> None:
        await actor.saver.close()
        actor.journal.close()
        lock.release()

    ctx.on_stop(stop)
