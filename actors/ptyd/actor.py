"""The ``ptyd`` actor shell: ops, events, OSC forwarding, GC loop (see ``api.py``).

Everything that can be pure lives elsewhere (scanner, scrollback, GC decisions); this
module wires it to the runtime. Rules it keeps:

* no handler waits on a child: input is queued, kills run in background tasks;
* output is published as it is read, and nothing on that path waits for a peer -
  OSC payloads (and launch announcements) go to ``hooks`` through a bounded queue
  drained by its own task, so a down ``hooks`` costs dropped status updates
  (counted in ``sys.stats``), never terminal output;
* GC never reaps on its own belief (``gc.py``): only ``store``'s answers decide;
  ``store``'s ``worktree.renamed {oldId, newId}`` re-keys at once;
* a pane retired in ``store`` (``session.paneRetired``) has its PTYs ended, and a
  closed session retires its pane in ``store`` and ``hooks`` (``retire.py``).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

import trio
import zmq

from actors.ptyd import api, handoff, retire
from actors.ptyd.gc import (
    DEFAULT_CHECK_INTERVAL_S,
    DEFAULT_GRACE_S,
    Reap,
    Rekey,
    SessionGc,
    parse_resolution,
)
from actors.ptyd.history import DEFAULT_HISTORY_BYTES
from actors.ptyd.scrollback import DEFAULT_CAPACITY, Chunk
from actors.ptyd.session import Session
from actors.ptyd.sessions import SessionTable, TableConfig, UnknownSession
from actors.ptyd.spawn import exit_code_of
from orca.actor import ActorContext, RpcClient
from orca.actor.zsocket import ZSocket, new_socket
from orca.host import current_host_id
from orca.wire.envelope import decode_event
from orca.wire.errors import BadFrame, NotFound, OrcaError

log = logging.getLogger(__name__)

# Messages waiting for hooks; beyond this they are dropped (status is a latest-value
# signal, the next OSC supersedes a lost one).
HOOKS_QUEUE = 1024
# A hooks call that takes longer than this is abandoned; hooks answers in ms when up.
HOOKS_TIMEOUT_S = 2.0
# After an adopted child exits, how long to wait for the keeper to have reaped it:
# it does so on SIGCHLD, within milliseconds; 50 x 20 ms is far beyond that.
KEEPER_EXIT_POLLS = 50
KEEPER_EXIT_POLL_S = 0.02
# identity.resolve deadline; a slow store means "no answer", never "unknown".
STORE_TIMEOUT_S = 5.0
# How long term.close waits for hooks to confirm the pane's fence: one HOOKS_TIMEOUT_S
# call plus room for a short backlog of queued OSC updates ahead of it. Below the CLI's
# close timeout, so a down hooks yields an answer ("not fenced"), not a client timeout.
FENCE_WAIT_S = 3.0


@dataclass(frozen=True)
class PtydSettings:
    """Tunables, from the environment (tests shorten the GC timings)."""

    scrollback_bytes: int = DEFAULT_CAPACITY
    history_bytes: int = DEFAULT_HISTORY_BYTES
    gc_grace_s: float = DEFAULT_GRACE_S
    gc_interval_s: float = DEFAULT_CHECK_INTERVAL_S

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> PtydSettings:
        e = os.environ if env is None else env
        return cls(
            scrollback_bytes=int(e.get("ORCA_PTYD_SCROLLBACK_BYTES", DEFAULT_CAPACITY)),
            history_bytes=int(e.get("ORCA_PTYD_HISTORY_BYTES", DEFAULT_HISTORY_BYTES)),
            gc_grace_s=float(e.get("ORCA_PTYD_GC_GRACE_S", DEFAULT_GRACE_S)),
            gc_interval_s=float(e.get("ORCA_PTYD_GC_INTERVAL_S", DEFAULT_CHECK_INTERVAL_S)),
        )


@dataclass(eq=False)
class HooksCall:
    """One message for ``hooks``, queued so that sending it never delays output.

    ``acked`` (when given) is set once the call was answered or failed; ``delivered``
    tells which. Only a caller that must know (``term.close``'s fence) asks for it.
    """

    op: str
    args: dict[str, object]
    acked: trio.Event | None = None
    delivered: bool = False


class Ptyd:
    """The actor's state and handlers; also the listener every session reports to."""

    def __init__(self, ctx: ActorContext, settings: PtydSettings) -> None:
        self.ctx = ctx
        self.settings = settings
        config = TableConfig(
            history_dir=ctx.paths.terminal_history_dir,
            hook_endpoint_file=ctx.paths.hooks_dir / "endpoint.env",
            scrollback_bytes=settings.scrollback_bytes,
            history_bytes=settings.history_bytes,
        )
        self.table = SessionTable(config, self)
        self.gc = SessionGc(settings.gc_grace_s)
        self._hooks_send, self._hooks_recv = trio.open_memory_channel[HooksCall](HOOKS_QUEUE)
        self.hooks_dropped = 0  # queue full (hooks slow or down for long)
        self.hooks_failed = 0  # calls that failed or timed out
        self.keeper: handoff.KeeperLink | None = None

    # -- SessionListener --------------------------------------------------------------
    def on_output(self, session: Session, chunk: Chunk) -> None:
        self.ctx.events.publish(
            api.OUTPUT_EVENT,
            {"sessionId": session.session_id, "offset": chunk.offset, "data": chunk.data},
            topic=api.output_topic(session.session_id),
        )

    def on_osc(self, session: Session, payload: bytes) -> None:
        info = session.info
        self.tell_hooks(
            "agentStatus.ingest_osc",
            {
                "paneKey": info.pane_key,
                "terminalHandle": info.terminal_handle,
                "worktreeId": info.worktree_id,
                "payload": payload.decode("utf-8", errors="replace"),
            },
        )

    def on_launch(self, session: Session) -> None:
        """A live launch in the pane: hooks lifts its retirement fence, learns the hash."""
        info = session.info
        self.tell_hooks(
            "agentStatus.restart_pane",
            {
                "paneKey": info.pane_key,
                "launchTokenSha256": info.launch_token_sha256,
                "worktreeId": info.worktree_id,
            },
        )

    def tell_hooks(self, op: str, args: dict[str, object]) -> None:
        try:
            self._hooks_send.send_nowait(HooksCall(op, args))
        except trio.WouldBlock:
            self.hooks_dropped += 1

    def on_exit(self, session: Session) -> None:
        if self.keeper is not None:
            # A restarted ptyd must not watch this pid again: it may be reused by now.
            self.keeper.update(session.info)
        self.ctx.nursery.start_soon(self._publish_exit_after_output, session)

    async def _publish_exit_after_output(self, session: Session) -> None:
        # The exit event follows the final output: wait for the hang-up, briefly (a
        # grandchild holding the PTY open must not hold back the exit forever).
        with trio.move_on_after(1.0):
            await session.output_done.wait()
        self.ctx.events.publish(
            api.EXIT_EVENT,
            {
                "sessionId": session.session_id,
                "exitCode": session.info.exit_code,
                "endOffset": session.scrollback.end,
            },
            topic=api.exit_topic(session.session_id),
        )

    # -- background tasks -------------------------------------------------------------
    async def forward_to_hooks(self) -> None:
        """Deliver queued OSC payloads and launches to ``hooks``, in order, one at a time."""
        hooks = self.ctx.connect("hooks")
        async for item in self._hooks_recv:
            try:
                await hooks.call(item.op, item.args, timeout=HOOKS_TIMEOUT_S)
                item.delivered = True
            except OrcaError as exc:
                self.hooks_failed += 1
                log.warning(
                    "%s for %s not delivered to hooks: %s", item.op, item.args["paneKey"], exc
                )
            finally:
                if item.acked is not None:
                    item.acked.set()

    async def tell_hooks_and_wait(self, op: str, args: dict[str, object]) -> bool:
        """Queue ``op`` behind every earlier hooks message (a queued ``restart_pane`` must
        not land after a retirement and lift its fence); True once hooks answered."""
        item = HooksCall(op, args, acked=trio.Event())
        try:
            self._hooks_send.send_nowait(item)
        except trio.WouldBlock:
            # The queue is full (hooks far behind or down): a fence outranks ordering.
            try:
                await self.ctx.connect("hooks").call(op, args, timeout=HOOKS_TIMEOUT_S)
            except OrcaError as exc:
                log.warning("%s for %s not delivered to hooks: %s", op, args["paneKey"], exc)
                return False
            return True
        assert item.acked is not None
        with trio.move_on_after(FENCE_WAIT_S):
            await item.acked.wait()
        return item.delivered

    async def run_gc(self) -> None:
        store = self.ctx.connect("store")
        while True:
            await trio.sleep(self.settings.gc_interval_s)
            await self.gc_round(store)

    async def gc_round(self, store: RpcClient) -> None:
        live = {s.info.worktree_id for s in self.table.sessions()}
        self.gc.forget(live)
        for wt in sorted(live):
            try:
                answer = await store.call(
                    "identity.resolve", {"worktreeId": wt}, timeout=STORE_TIMEOUT_S
                )
                resolution = parse_resolution(wt, answer)
            except (OrcaError, ValueError) as exc:
                self.gc.on_store_unavailable(wt)
                log.info("GC: no answer from store for %s (%s); nothing decided", wt, exc)
                continue
            decision = self.gc.on_resolution(resolution, time.monotonic())
            if isinstance(decision, Rekey):
                self.apply_rekey(decision.old, decision.new)
            elif isinstance(decision, Reap):
                for session in self.table.sessions():
                    if session.info.worktree_id == decision.worktree_id:
                        log.warning("GC: reaping %s (store: worktree unknown)", session.session_id)
                        self.close_session(session)

    async def follow_store(self) -> None:
        """Follow ``store``'s ``worktree.renamed`` (re-key) and ``session.paneRetired``
        (end the pane's PTYs) events; a malformed event is logged and skipped."""
        sock = new_socket(zmq.SUB)
        for topic in (retire.RENAMED_EVENT, retire.PANE_RETIRED_EVENT):
            sock.setsockopt(zmq.SUBSCRIBE, topic.encode())
        sock.connect(self.ctx.paths.ipc_endpoint("store", "pub"))

        def on_message(frames: list[bytes]) -> None:
            try:
                event = decode_event(frames[-1])
                if event.type == retire.RENAMED_EVENT:
                    old, new = retire.parse_renamed(event.data)
                    decision = self.gc.on_renamed(old, new)
                    self.apply_rekey(decision.old, decision.new)
                elif event.type == retire.PANE_RETIRED_EVENT:
                    self.end_retired_pane(retire.parse_pane_retired(event.data))
            except (BadFrame, retire.MalformedStoreEvent, IndexError) as exc:
                log.warning("ignoring a malformed store event: %s", exc)

        zs = ZSocket(sock, on_message)
        try:
            await zs.run()
        finally:
            zs.close()

    # -- effects -----------------------------------------------------------------------
    def apply_rekey(self, old: str, new: str) -> None:
        for old_id, new_id in self.table.rekey_worktree(old, new):
            log.info("re-keyed %s -> %s", old_id, new_id)
            if self.keeper is not None:
                self.keeper.update(self.table.get(new_id).info)
            self.ctx.events.publish(api.REKEYED_EVENT, {"old": old_id, "new": new_id})

    def end_retired_pane(self, pane: retire.RetiredPane) -> None:
        """End (like ``term.kill``) every live session of a pane the store retired."""
        for session in retire.sessions_in_pane(self.table.sessions(), pane):
            log.info("pane %s retired in store: ending %s", pane.pane_key, session.session_id)
            self.ctx.nursery.start_soon(session.kill)

    async def retire_closed_pane(self, session: Session) -> dict[str, object]:
        """After ``term.close`` ended a session: fence its pane in hooks and retire it in
        store, both at once and best effort. ``fenced``: hooks confirmed the fence."""
        info = session.info
        outcome: dict[str, object] = {"fenced": False, "storeRevision": None}

        async def fence() -> None:
            args = retire.hooks_retire_args(info)
            outcome["fenced"] = await self.tell_hooks_and_wait("agentStatus.retire_pane", args)

        async def retire_in_store() -> None:
            store = self.ctx.connect("store")
            outcome["storeRevision"] = await retire.retire_in_store(store, info)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(fence)
            nursery.start_soon(retire_in_store)
        return outcome

    async def end_panes_retired_while_down(self, adopted: set[str]) -> None:
        """Catch up on ``session.paneRetired`` events lost while ptyd was down: end every
        adopted session whose pane the store retired after its spawn (background)."""
        if not adopted:
            return
        host = current_host_id()
        entries = await retire.fetch_retirement_log(self.ctx.connect("store"), host)
        infos = [s.info for s in self.table.sessions() if s.session_id in adopted]
        ended = retire.retired_after_spawn(infos, entries)
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

    def close_session(self, session: Session) -> None:
        self.table.forget(session.session_id)
        if self.keeper is not None:
            self.keeper.withdraw(session.info.history_key)
        self.ctx.events.publish(api.CLOSED_EVENT, {"sessionId": session.session_id})
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

    def row(self, session: Session) -> dict[str, object]:
        return session.info.to_wire(session.scrollback.end, session.subscribers)
