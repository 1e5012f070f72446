"""The ``ptyd`` actor shell: setup, events, store following, GC loop (contract:
``orca.contracts.ptyd``; op handlers: ``handlers.py``; the line to hooks: ``hooks_link.py``).

Everything that can be pure lives elsewhere (scanner, scrollback, GC decisions,
retirement matching); this module wires it to the runtime. Rules it keeps:

* no handler waits on a child: input is queued, kills run in background tasks;
* output is published as it is read, and nothing on that path waits for a peer -
  OSC payloads (and launch announcements) go to ``hooks`` through a bounded queue
  drained by its own task, so a down ``hooks`` costs dropped status updates
  (counted in ``sys.stats``), never terminal output;
* GC never reaps on its own belief (``gc.py``): only ``store``'s answers decide;
  ``store``'s ``worktree.renamed {oldId, newId}`` re-keys at once;
* a pane retired in ``store`` (``session.paneRetired``) has its PTYs ended, a
  closed session retires its pane in ``store`` and ``hooks``, and a PTY that exited
  has its bindings retired in ``store`` (its pane stays; ``retire.py``);
* store events are followed through ``orca.actor.subscriber.Subscriber`` with the
  store contract's specs: a malformed one is logged once and dropped.
"""

from __future__ import annotations

import gc
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import trio

from actors.ptyd import bindings, handlers, handoff, lifecycle, retire
from actors.ptyd.archive import EndedSession, HistoryArchive, plan_eviction
from actors.ptyd.config import load_budget, load_resume_on_start
from actors.ptyd.gc import (
    DEFAULT_CHECK_INTERVAL_S,
    DEFAULT_GRACE_S,
    Reap,
    Rekey,
    Resolution,
    SessionGc,
)
from actors.ptyd.history import DEFAULT_HISTORY_BYTES
from actors.ptyd.hooks_link import HooksLink, pty_truth
from actors.ptyd.retire import CATCH_UP_FIRST_RETRY_S, CATCH_UP_MAX_RETRY_S
from actors.ptyd.scrollback import DEFAULT_CAPACITY, Chunk
from actors.ptyd.session import COLD_AFTER_S, Session
from actors.ptyd.sessions import SessionTable, TableConfig, UnknownSession
from actors.ptyd.spawn import exit_code_of
from actors.ptyd.stream import AttachStream
from orca.actor import ActorContext, RpcClient
from orca.actor.subscriber import Subscriber
from orca.contracts import hooks, store
from orca.contracts import ptyd as contract
from orca.host import current_host_id
from orca.wire.envelope import Event
from orca.wire.errors import NotFound, OrcaError

log = logging.getLogger(__name__)

# After an adopted child exits, how long to wait for the keeper to have reaped it:
# it does so on SIGCHLD, within milliseconds; 50 x 20 ms is far beyond that.
KEEPER_EXIT_POLLS = 50
KEEPER_EXIT_POLL_S = 0.02
# identity.resolve deadline; a slow store means "no answer", never "unknown".
STORE_TIMEOUT_S = 5.0
# The store events ptyd follows (re-key, end a retired pane's PTYs).
STORE_EVENTS = (store.WORKTREE_RENAMED, store.PANE_RETIRED)
STORE_CONSUMER = "ptyd<-store"
HOOKS_CONSUMER = "ptyd<-hooks"
# How often the ended-history budget is applied when no session exits (age bound).
HISTORY_BUDGET_INTERVAL_S = 3600.0


@dataclass(frozen=True)
class PtydSettings:
    """Tunables, from the environment (tests shorten the GC timings)."""

    scrollback_bytes: int = DEFAULT_CAPACITY
    history_bytes: int = DEFAULT_HISTORY_BYTES
    gc_grace_s: float = DEFAULT_GRACE_S
    gc_interval_s: float = DEFAULT_CHECK_INTERVAL_S
    cold_after_s: float = COLD_AFTER_S

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> PtydSettings:
        e = os.environ if env is None else env
        return cls(
            scrollback_bytes=int(e.get("ORCA_PTYD_SCROLLBACK_BYTES", DEFAULT_CAPACITY)),
            history_bytes=int(e.get("ORCA_PTYD_HISTORY_BYTES", DEFAULT_HISTORY_BYTES)),
            gc_grace_s=float(e.get("ORCA_PTYD_GC_GRACE_S", DEFAULT_GRACE_S)),
            gc_interval_s=float(e.get("ORCA_PTYD_GC_INTERVAL_S", DEFAULT_CHECK_INTERVAL_S)),
            cold_after_s=float(e.get("ORCA_PTYD_COLD_AFTER_S", COLD_AFTER_S)),
        )


class Ptyd:
    """The actor's state and effects; also the listener every session reports to."""

    def __init__(self, ctx: ActorContext, settings: PtydSettings) -> None:
        self.ctx = ctx
        self.settings = settings
        config = TableConfig(
            history_dir=ctx.paths.terminal_history_dir,
            hook_endpoint_file=ctx.paths.hooks_dir / "endpoint.env",
            scrollback_bytes=settings.scrollback_bytes,
            history_bytes=settings.history_bytes,
            cold_after_s=settings.cold_after_s,
        )
        self.table = SessionTable(config, self)
        self.gc = SessionGc(settings.gc_grace_s)
        self.hooks = HooksLink(lambda: ctx.connect(hooks.CONTRACT.actor))
        self.keeper: handoff.KeeperLink | None = None
        self.stream = AttachStream(self)  # issue 14: the attach stream (stream.py)
        # Issue 13: ended sessions' history, kept within a budget (archive.py).
        self.archive = HistoryArchive(ctx.paths.terminal_history_dir, settings.scrollback_bytes)
        self.history_budget = load_budget(ctx.paths.config_dir)
        # The hooks incarnation that last took our PTY truth (reconcile_hooks); wanted
        # once at start, then on every heartbeat of another one.
        self._hooks_epoch: str | None = None
        self._hooks_truth_wanted = trio.Event()
        self._hooks_truth_wanted.set()

    def store_client(self) -> RpcClient:
        return self.ctx.connect(store.CONTRACT.actor)

    # -- SessionListener --------------------------------------------------------------
    def on_output(self, session: Session, chunk: Chunk) -> None:
        self.ctx.events.emit(
            contract.OutputChunk(
                session_id=session.session_id, offset=chunk.offset, data=chunk.data
            )
        )

    def follows_output(self, session: Session) -> bool:
        return self.ctx.events.wants(contract.output_topic(session.session_id))

    def on_osc(self, session: Session, payload: bytes) -> None:
        info = session.info
        self.hooks.ingest_osc(info.pane_key, info.terminal_handle, info.worktree_id, payload)

    def on_launch(self, session: Session) -> None:
        """A live launch in the pane: hooks lifts its retirement fence, learns the hash."""
        info = session.info
        self.hooks.restart_pane(
            info.pane_key, info.launch_token_sha256, info.worktree_id, info.terminal_handle
        )

    def resize_session(self, session: Session, cols: int, rows: int) -> None:
        """Every resize, whoever asks (``term.resize``, an attach stream's or a handed
        terminal's resize, a ``hand``'s size): the PTY, the keeper's copy, the size a
        later ptyd redraws at, and the event every face reads ("the client that resized
        last sets the size"). ``SessionEnded`` if its PTY has closed."""
        unchanged = (session.info.cols, session.info.rows) == (cols, rows)
        session.resize(cols, rows)  # the model's reflow even when unchanged
        if unchanged:
            return  # nothing to tell
        resized = contract.SessionResized(session_id=session.session_id, cols=cols, rows=rows)
        self.session_changed(session, "resized", resized)

    def session_changed(
        self,
        session: Session,
        change: lifecycle.Change,
        event: msgspec.Struct | None = None,
        *,
        fds: Sequence[int] = (),
    ) -> None:
        """Carry out what ``change`` owes the tree (``lifecycle.EFFECTS``): the keeper's
        step, the description on disk, hooks' word, the event (``event``; an exit's is
        published after the session's final output)."""
        effects = lifecycle.EFFECTS[change]
        info = session.info
        if self.keeper is not None:
            if effects.keeper == "deposit":
                self.keeper.deposit(info, list(fds))
            elif effects.keeper == "update":
                self.keeper.update(info)
            else:
                self.keeper.withdraw(info.history_key)
        if effects.record:
            self.table.record(session)
        if effects.hooks == "launch":
            self.on_launch(session)
        if effects.publish == "after_output":  # hooks' pty_exited goes with it
            self.ctx.nursery.start_soon(self._publish_exit_after_output, session)
        elif event is not None:
            self.ctx.events.emit(event)

    def on_exit(self, session: Session) -> None:
        # The exit code on disk and in the keeper: the history outlives the process
        # (issue 13), and a restarted ptyd must not watch a pid that may be reused.
        self.session_changed(session, "exited")

    async def _publish_exit_after_output(self, session: Session) -> None:
        # The exit event follows the final output: wait for the hang-up, briefly (a
        # grandchild holding the PTY open must not hold back the exit forever).
        with trio.move_on_after(1.0):
            await session.output_done.wait()
        # Issue 12 (hooks helper): the authenticated PTY exit removes the pane's agent
        # row everywhere; queued behind the session's last OSC updates.
        self.hooks.pty_exited(
            session.info.pane_key, session.info.terminal_handle, session.info.exit_code
        )
        session.end_streams()  # issue 14: attach-stream clients, after the final output
        self.ctx.events.emit(
            contract.SessionExited(
                session_id=session.session_id,
                exit_code=session.info.exit_code,
                end_offset=session.scrollback.end,
            )
        )
        self.table.record(session)  # with the final end offset
        self.enforce_history_budget()
        # Seed 02 §9, §13: the PTY is gone, so is every binding to it in the store's
        # session (saved before the store answers). The pane itself stays: it shows
        # the ended terminal, and Enter runs its command again (the UI finds it by pane
        # key in our list). A close retires the whole pane too (retire_closed_pane).
        ids = retire.ids_of_session(session.session_id, self.table.aliases())
        await retire.retire_exited_pty(self.store_client(), session.info.host_id, ids)

    def enforce_history_budget(self) -> None:
        """Evict ended sessions' history beyond the budget, oldest end first (archive.py).
        Only sessions whose child exited and whose output ended are candidates."""
        ended = [s for s in self.table.sessions() if s.exited.is_set() and s.output_done.is_set()]
        now = time.time()
        ended_at = {s.info.history_key: self.table.ended_at(s) or now for s in ended}
        live = {s.info.history_key for s in self.table.sessions()} - set(ended_at)
        candidates = [c for c in self.archive.candidates(ended_at.items()) if c.key not in live]
        for key in plan_eviction(candidates, self.history_budget, now):
            if self.archive.remove(key) is not None:
                log.info("terminal history %s evicted (history budget)", key)
                continue
            for session in ended:
                if session.info.history_key == key:
                    log.info("terminal history of %s evicted (history budget)", session.session_id)
                    self.close_session(session)

    # -- background tasks -------------------------------------------------------------
    async def run_history_budget(self) -> None:
        """Age out ended sessions' history even when nothing exits (hourly)."""
        while True:
            await trio.sleep(HISTORY_BUDGET_INTERVAL_S)
            self.enforce_history_budget()

    async def run_gc(self) -> None:
        client = self.store_client()
        while True:
            await trio.sleep(self.settings.gc_interval_s)
            await self.gc_round(client)

    async def gc_round(self, client: RpcClient) -> None:
        live = {s.info.worktree_id for s in self.table.sessions()}
        self.gc.forget(live)
        for wt in sorted(live):
            try:
                answer = await client.invoke(
                    store.IDENTITY_RESOLVE,
                    store.WorktreeIdArgs(worktree_id=wt),
                    timeout=STORE_TIMEOUT_S,
                )
            except OrcaError as exc:  # down, erroring, or a reply the contract refuses
                self.gc.on_store_unavailable(wt)
                log.info("GC: no answer from store for %s (%s); nothing decided", wt, exc)
                continue
            decision = self.gc.on_resolution(Resolution.of(wt, answer), time.monotonic())
            if isinstance(decision, Rekey):
                self.apply_rekey(decision.old, decision.new)
            elif isinstance(decision, Reap):
                for session in self.table.sessions():
                    if session.info.worktree_id == decision.worktree_id:
                        log.warning("GC: reaping %s (store: worktree unknown)", session.session_id)
                        self.close_session(session)

    def store_follower(self) -> Subscriber:
        """Follow ``store``'s ``worktree.renamed`` (re-key) and ``session.paneRetired``
        (end the pane's PTYs) events, decoded by the store contract."""
        return Subscriber(
            self.ctx.paths.ipc_endpoint(store.CONTRACT.actor, "pub"),
            STORE_EVENTS,
            self.on_store_event,
            consumer=STORE_CONSUMER,
        )

    def on_store_event(self, _envelope: Event, event: Any) -> None:
        if isinstance(event, store.WorktreeRenamed):
            decision = self.gc.on_renamed(event.old_id, event.new_id)
            self.apply_rekey(decision.old, decision.new)
        elif isinstance(event, store.PaneRetired):
            self.end_retired_pane(event)

    # -- effects -----------------------------------------------------------------------
    def apply_rekey(self, old: str, new: str) -> None:
        for old_id, new_id in self.table.rekey_worktree(old, new):
            log.info("re-keyed %s -> %s", old_id, new_id)
            rekeyed = contract.SessionRekeyed(old=old_id, new=new_id)
            self.session_changed(self.table.get(new_id), "rekeyed", rekeyed)

    def end_retired_pane(self, retired: store.PaneRetired) -> None:
        """End (like ``term.kill``) every live session of a pane the store retired."""
        for session in retire.sessions_in_pane(self.table.sessions(), retired):
            log.info(
                "pane %s retired in store: ending %s", session.info.pane_key, session.session_id
            )
            self.ctx.nursery.start_soon(session.kill)

    async def retire_closed_pane(self, session: Session) -> contract.CloseResult:
        """After ``term.close`` ended a session: fence its pane in hooks and retire it in
        store, both at once and best effort. ``fenced``: hooks confirmed the fence."""
        info = session.info
        fenced = False
        revision: int | None = None

        async def fence() -> None:
            nonlocal fenced
            fenced = await self.hooks.retire_pane(info.pane_key)

        async def retire_in_store() -> None:
            nonlocal revision
            revision = await retire.retire_in_store(self.store_client(), info)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(fence)
            nursery.start_soon(retire_in_store)
        return contract.CloseResult(fenced=fenced, store_revision=revision)

    async def end_panes_retired_while_down(self, adopted: set[str]) -> None:
        """Catch up on ``session.paneRetired`` events lost while ptyd was down: end every
        adopted session whose pane the store retired after its spawn (background)."""
        if not adopted:
            return
        retirements = await retire.fetch_retirement_log(self.store_client(), current_host_id())
        infos = [s.info for s in self.table.sessions() if s.session_id in adopted]
        ended = retire.retired_after_spawn(infos, retirements)
        for session in self.table.sessions():
            if session.session_id not in ended or session.exited.is_set():
                continue
            pane = session.info.pane_key
            log.info("pane %s retired while ptyd was down: ending %s", pane, session.session_id)
            self.ctx.nursery.start_soon(session.kill)

    def adopt_from_keeper(self) -> set[str]:
        """Take back every session the keeper held across our restart; resume reading.
        Returns the adopted session ids."""
        assert self.keeper is not None
        keeper = self.keeper
        adopted: set[str] = set()
        for info, fds in keeper.reclaim():
            pipe = (fds[1], fds[2]) if len(fds) == 3 else None
            session = self.table.adopt(info, fds[0], pipe, resume_history=True)

            async def ask_keeper(key: str = info.history_key) -> int | None:
                # The keeper reaps on SIGCHLD, racing our pidfd wake-up: ask a few times.
                for _ in range(KEEPER_EXIT_POLLS):
                    status = keeper.exit_status(key)
                    if status is not None:
                        return exit_code_of(status)
                    await trio.sleep(KEEPER_EXIT_POLL_S)
                return None

            session.foreign_exit = ask_keeper
            self.start_session(session)
            log.info("reclaimed session %s (pid %d)", info.session_id, info.pid)
            adopted.add(info.session_id)
        return adopted

    def start_session(self, session: Session) -> None:
        self.ctx.nursery.start_soon(self._run_session, session)

    async def _run_session(self, session: Session) -> None:
        try:
            await session.run()
        except OSError:
            log.exception("session %s reader failed", session.session_id)
            return
        with session.rest_scope:  # ended, kept for its pane until closed
            await session.rest_cold()

    def close_session(self, session: Session) -> None:
        session.rest_scope.cancel()
        self.table.forget(session.session_id)
        self.session_changed(
            session, "closed", contract.SessionClosed(session_id=session.session_id)
        )
        self.ctx.nursery.start_soon(self._kill_then_drop_history, session)

    async def _kill_then_drop_history(self, session: Session) -> None:
        if not session.exited.is_set():
            await session.kill()
        await session.output_done.wait()
        if session.journal is not None:
            session.journal.remove()

    def session(self, session_id: str) -> Session:
        try:
            return self.table.get(session_id)
        except UnknownSession:
            raise NotFound(f"no terminal session {session_id!r}") from None

    async def reconcile_hooks(self) -> None:
        """Tell hooks every pane's PTYs after this start and whenever hooks restarted
        (docs/protocols.md §3): its restored rows of launches still running are
        confirmed, those of ended launches leave. Each try takes the truth afresh, so
        an exit whose ``pty_exited`` hooks missed is in the next one."""
        while True:
            await self._hooks_truth_wanted.wait()
            self._hooks_truth_wanted = trio.Event()
            delay = CATCH_UP_FIRST_RETRY_S
            while True:
                running, ended = pty_truth(
                    (s.info for s in self.table.sessions()),
                    (e.info for e in self.archive.sessions()),
                )
                answer = await self.hooks.reconcile_ptys(running, ended)
                if answer is not None:
                    self._hooks_epoch = answer.epoch
                    break
                await trio.sleep(delay)
                delay = min(delay * 2, CATCH_UP_MAX_RETRY_S)

    def hooks_follower(self) -> Subscriber:
        """hooks' heartbeats: one from an epoch our truth has not reached (hooks
        restarted while ptyd kept running) asks ``reconcile_hooks`` for another push."""

        def on_beat(event: Event) -> None:
            if event.epoch != self._hooks_epoch:
                self._hooks_truth_wanted.set()

        return Subscriber(
            self.ctx.paths.ipc_endpoint(hooks.CONTRACT.actor, "pub"),
            (),
            lambda _envelope, _data: None,
            consumer=HOOKS_CONSUMER,
            on_other=on_beat,
        )

    async def reconcile_bindings(self) -> None:
        """Issue 13: after this start, the store marks its saved bindings to PTYs that do
        not run (``bindings.py``; the split is defended in actors/store/pty_bindings.py)."""
        running, ended = bindings.ptyd_truth(
            self.table.sessions(), self.table.aliases(), self.archive.sessions()
        )
        await bindings.reconcile_with_store(self.store_client(), current_host_id(), running, ended)

    def archived(self, session_id: str) -> EndedSession | None:
        """The ended session ``session_id`` names if it is known only from disk."""
        try:
            self.table.get(session_id)
        except UnknownSession:
            return self.archive.find(session_id)
        return None

    def archived_rows(self, worktree_id: str | None) -> list[contract.SessionRow]:
        return [
            self.archive.row(e)
            for e in self.archive.sessions()
            if worktree_id is None or e.info.worktree_id == worktree_id
        ]

    def close_archived(self, session_id: str) -> bool:
        """``term.close`` of an archived session: delete its history; False if not one."""
        if self.archived(session_id) is None:
            return False
        entry = self.archive.remove(session_id)
        if entry is not None:
            self.ctx.events.emit(contract.SessionClosed(session_id=entry.info.session_id))
        return True

    def row(self, session: Session) -> contract.SessionRow:
        row = session.info.to_row(contract.SessionRow, session.scrollback.end, session.subscribers)
        if row.running and not os.path.isdir(row.cwd):  # one stat per live row and list
            row = msgspec.structs.replace(row, folder_missing=True)
        return row

    def stats(self) -> dict[str, Any]:
        """ptyd's own keys of ``sys.stats``."""
        return {
            "ptyd": {
                "sessions": len(self.table),
                # Terminal models freed to their checkpoints (idle or ended sessions).
                "coldSessions": sum(1 for s in self.table.sessions() if s.cold),
                "hooksDropped": self.hooks.dropped,
                "hooksFailed": self.hooks.failed,
                "gcSuspects": len(self.gc.suspects),
                "history": self.history_health(),
                # Issue 13: sessions known only from their history on disk (archive.py).
                "endedHistories": len(self.archive),
            }
        }

    def history_health(self) -> dict[str, Any]:
        """The journals of live sessions (issue 16 item 5: a full disk degrades them)."""
        journals = [s.journal for s in self.table.sessions() if s.journal is not None]
        errors = [j.health.last_error for j in journals if j.health.last_error]
        return {
            "degraded": sum(1 for j in journals if j.health.degraded),
            "droppedBytes": sum(j.health.dropped_bytes for j in journals),
            "failures": sum(j.health.failures for j in journals),
            "resumed": sum(j.health.resumed for j in journals),
            "lastError": errors[-1] if errors else None,
        }


async def setup(ctx: ActorContext) -> None:
    """Build the actor: reclaim sessions from the fd keeper if any, register, start tasks."""
    ptyd = Ptyd(ctx, PtydSettings.from_env())
    # Issue 14: the modules and ptyd's own machinery live as long as ptyd; frozen, a full
    # collection no longer walks them (bench/pty.py: 8-14 ms pauses in the echo path,
    # ~3 us after). Before any session is adopted: a session's terminal model is freed
    # by the cyclic collector when it ends, which a frozen object never is.
    gc.collect()
    gc.freeze()
    keeper_path = handoff.find_keeper(os.environ, ctx.paths.runtime_dir)
    if keeper_path:
        try:
            ptyd.keeper = handoff.KeeperLink(keeper_path)
        except OSError as exc:  # a stale socket of a supervisor that is gone
            log.error("fd keeper at %s unreachable (%s): crash survival is off", keeper_path, exc)
        else:
            adopted = ptyd.adopt_from_keeper()
            # Retirements published while ptyd was down (never blocks the start).
            ctx.nursery.start_soon(ptyd.end_panes_retired_while_down, adopted)
    else:
        log.warning("no fd keeper: terminals will not survive a ptyd crash")
    # Issue 13 (keeper helper): when the keeper dies (or none answered yet), re-deposit
    # every live session with the one orcad starts next.
    keeper_at = handoff.keeper_path(os.environ, ctx.paths.runtime_dir)
    ctx.nursery.start_soon(handoff.keep_keeper_seeded, ptyd, keeper_at)

    async def secure_sessions() -> None:
        # Issue 13: ptyd never leaves with the only copies of the masters (orcad and the
        # keeper killed together): a live keeper holds every live session first.
        handoff.secure_with_keeper(ptyd, keeper_at, ctx.paths.log_file("keeper"))

    ctx.on_stop(secure_sessions)
    # Issue 13: every journal not re-adopted is an ended session's history, kept.
    live_keys = {s.info.history_key for s in ptyd.table.sessions()}
    archived = ptyd.archive.load(live_keys)
    if archived:
        log.info("%d ended sessions' history kept from before this start", archived)
        ctx.nursery.start_soon(trio.to_thread.run_sync, ptyd.archive.measure_lost)
    ptyd.enforce_history_budget()
    ctx.nursery.start_soon(ptyd.reconcile_bindings)
    ops = handlers.register_ops(ptyd)
    if load_resume_on_start(ctx.paths.config_dir):  # issue 34: a reboot resumes the fleet
        from actors.ptyd.resume_on_start import resume_lost_agents

        ctx.nursery.start_soon(
            resume_lost_agents,
            [ptyd.row(s) for s in ptyd.table.sessions()],
            ptyd.archived_rows(None),
            ctx.connect(hooks.CONTRACT.actor),
            ops.spawn,
        )
    ptyd.stream.bind()  # issue 14: the attach stream (0600 ipc in the runtime dir)
    ctx.nursery.start_soon(ptyd.stream.run)
    ctx.rpc.extra_stats = ptyd.stats
    ctx.nursery.start_soon(ptyd.hooks.run)
    ctx.nursery.start_soon(ptyd.reconcile_hooks)  # after the adoption above
    ctx.nursery.start_soon(ptyd.hooks_follower().run)
    ctx.nursery.start_soon(ptyd.run_gc)
    ctx.nursery.start_soon(ptyd.run_history_budget)
    ctx.nursery.start_soon(ptyd.store_follower().run)
