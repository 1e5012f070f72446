"""``ptyd``'s one ordered, bounded line to ``hooks`` (never on the output path).

OSC payloads, launch announcements and pane fences go to ``hooks`` through one queue
drained by one task, one call at a time, so they arrive in the order they were sent
(a queued ``restart_pane`` can never land after a later ``retire_pane`` and lift its
fence). Nothing that publishes output waits for it: a full queue drops the message
(status is a latest-value signal; the next OSC supersedes a lost one) and a down
``hooks`` costs failed calls, both counted for ``sys.stats``.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import trio
from msgspec.structs import replace

from orca.actor import RpcClient
from orca.contracts import hooks
from orca.contracts.base import Args, Op
from orca.wire.errors import OrcaError

if TYPE_CHECKING:
    from actors.ptyd.info import SessionInfo

log = logging.getLogger(__name__)

# Messages waiting for hooks; beyond this they are dropped (status is a latest-value
# signal, the next OSC supersedes a lost one).
HOOKS_QUEUE = 1024
# A hooks call that takes longer than this is abandoned; hooks answers in ms when up.
HOOKS_TIMEOUT_S = 2.0
# A launch's announcement (``restart_pane``) is tried again, in its place in the queue,
# this long: lost, it would leave hooks holding the pane's previous launch, and every
# hook of the new one waiting for an announcement that never comes (its light never
# shown). A hooks that restarts meanwhile learns the launch from ptyd's truth instead.
ANNOUNCE_FOR_S = 30.0
ANNOUNCE_RETRY_S = 0.5
# How long term.close waits for hooks to confirm the pane's fence: one HOOKS_TIMEOUT_S
# call plus room for a short backlog of queued OSC updates ahead of it. Below the CLI's
# close timeout, so a down hooks yields an answer ("not fenced"), not a client timeout.
FENCE_WAIT_S = 3.0


def pty_truth(
    sessions: Iterable[SessionInfo], archived: Iterable[SessionInfo]
) -> tuple[list[hooks.LivePty], list[hooks.EndedPty]]:
    """Every pane's PTYs as ``agentStatus.reconcile_ptys`` takes them: the sessions
    that run, and those that ended (listed or archived; exit -1, unknown, as None)."""
    running: list[hooks.LivePty] = []
    ended: list[hooks.EndedPty] = []
    for info in (*sessions, *archived):
        if info.exit_code is None:
            running.append(
                hooks.LivePty(
                    pane_key=info.pane_key,
                    terminal_handle=info.terminal_handle,
                    launch_token_sha256=info.launch_token_sha256,
                )
            )
            continue
        ended.append(
            hooks.EndedPty(
                pane_key=info.pane_key,
                terminal_handle=info.terminal_handle,
                launch_token_sha256=info.launch_token_sha256,
                exit_code=None if info.exit_code == -1 else info.exit_code,
            )
        )
    # Only the newest ends fit one call; hooks judges rows, and a row's launch that
    # ended long ago was told to hooks (``pty_exited``) long ago too.
    return running, ended[-hooks.MAX_RECONCILED_PTYS :]


@dataclass(eq=False)
class HooksCall:
    """One message for ``hooks``, queued so that sending it never delays output.

    ``acked`` (when given) is set once the call was answered or failed; ``delivered``
    tells which. Only a caller that must know (``term.close``'s fence) asks for it.
    """

    op: Op[Any, Any]
    args: Args
    pane_key: str
    acked: trio.Event | None = None
    delivered: bool = False
    reply: Any = None  # hooks' answer, once delivered
    # When the evidence was seen (monotonic): an OSC's ``evidenceAgeMs`` is the time
    # it spent queued, measured on ptyd's own clock (seed 03 "证据年龄").
    seen_at: float = 0.0


class HooksLink:
    """The queue to ``hooks`` and its counters; ``run`` is the task that drains it."""

    def __init__(self, connect: Callable[[], RpcClient]) -> None:
        self._connect = connect
        self._send, self._recv = trio.open_memory_channel[HooksCall](HOOKS_QUEUE)
        self.dropped = 0  # queue full (hooks slow or down for long)
        self.failed = 0  # calls that failed or timed out
        self._failing = False  # the last delivery failed (log once per streak)
        # Seed 03 per-connection order watermark: one connection id per ptyd
        # incarnation, a strictly increasing sequence per OSC document, so hooks drops
        # a replayed or reordered observation ("replayed").
        self.connection_id = f"ptyd-{uuid.uuid4().hex}"
        self._seq = 0
        # Panes with a pane_input queued and not yet sent: a burst of keystrokes is
        # one message (the evidence is "input arrived", not what it was).
        self._input_pending: set[str] = set()
        self._input_typed_at: dict[str, float] = {}  # pane key -> when its last key was typed

    def ingest_osc(
        self, pane_key: str, terminal_handle: str, worktree_id: str, payload: bytes
    ) -> None:
        """One OSC 9999 document seen in a session's output."""
        args = hooks.IngestOscArgs(
            pane_key=pane_key,
            terminal_handle=terminal_handle,
            worktree_id=worktree_id,
            payload=payload.decode("utf-8", errors="replace"),
            connection_id=self.connection_id,
            connection_seq=self._next_seq(),
        )
        self._tell(HooksCall(hooks.INGEST_OSC, args, pane_key, seen_at=time.monotonic()))

    def restart_pane(
        self,
        pane_key: str,
        launch_token_sha256: str,
        worktree_id: str,
        terminal_handle: str | None = None,
    ) -> None:
        """A live launch in the pane: hooks lifts its retirement fence, learns the hash,
        and drops the previous agent's row (the new launch never inherits it)."""
        args = hooks.RestartPaneArgs(
            pane_key=pane_key,
            launch_token_sha256=launch_token_sha256,
            worktree_id=worktree_id,
            terminal_handle=terminal_handle,
        )
        self._tell(HooksCall(hooks.RESTART_PANE, args, pane_key))

    def pty_exited(self, pane_key: str, terminal_handle: str, exit_code: int | None) -> None:
        """The pane's PTY exited (after its final output): hooks removes the row."""
        args = hooks.PtyExitedArgs(
            pane_key=pane_key, terminal_handle=terminal_handle, exit_code=exit_code
        )
        self._tell(HooksCall(hooks.PTY_EXITED, args, pane_key))

    def pane_input(self, pane_key: str, terminal_handle: str) -> None:
        """The user typed into the pane: evidence that a permission prompt was answered."""
        self._input_typed_at[pane_key] = time.monotonic()  # the last key: its age is sent
        if pane_key in self._input_pending:
            return
        args = hooks.PaneInputArgs(pane_key=pane_key, terminal_handle=terminal_handle)
        self._input_pending.add(pane_key)
        if not self._tell(HooksCall(hooks.PANE_INPUT, args, pane_key)):
            self._input_pending.discard(pane_key)

    def pane_attached(self, pane_key: str) -> None:
        """The user attached to the pane: its done/blocked row is read."""
        self._tell(HooksCall(hooks.ACK, hooks.AckArgs(pane_key=pane_key), pane_key))

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    async def retire_pane(self, pane_key: str) -> bool:
        """Fence the pane, queued behind every earlier message; True once hooks answered
        (within ``FENCE_WAIT_S``). The fence is keyed by the pane key alone."""
        item = HooksCall(
            hooks.RETIRE_PANE, hooks.RetirePaneArgs(pane_key=pane_key), pane_key, acked=trio.Event()
        )
        try:
            self._send.send_nowait(item)
        except trio.WouldBlock:
            # The queue is full (hooks far behind or down): a fence outranks ordering.
            return await self._deliver(item)
        assert item.acked is not None
        with trio.move_on_after(FENCE_WAIT_S):
            await item.acked.wait()
        return item.delivered

    async def reconcile_ptys(
        self, running: list[hooks.LivePty], ended: list[hooks.EndedPty]
    ) -> hooks.PtysReconciled | None:
        """ptyd's truth about every pane's PTYs, queued behind every earlier message (an
        exit queued before it is not undone by it); hooks' answer, None if not delivered
        within ``FENCE_WAIT_S`` (the caller retries with a fresh truth)."""
        args = hooks.ReconcilePtysArgs(running=running, ended=ended)
        acked = trio.Event()
        item = HooksCall(hooks.RECONCILE_PTYS, args, "every pane", acked=acked)
        if not self._tell(item):
            return None
        with trio.move_on_after(FENCE_WAIT_S):
            await acked.wait()
        return item.reply if item.delivered else None

    def _tell(self, item: HooksCall) -> bool:
        try:
            self._send.send_nowait(item)
        except trio.WouldBlock:
            self.dropped += 1
            return False
        return True

    async def _deliver(self, item: HooksCall) -> bool:
        args = item.args
        if isinstance(args, hooks.PaneInputArgs):
            self._input_pending.discard(item.pane_key)
            typed_at = self._input_typed_at.pop(item.pane_key, None)
            if typed_at is not None:
                age_ms = int((time.monotonic() - typed_at) * 1000)
                args = replace(
                    args,
                    evidence_age_ms=max(0, age_ms),
                    typed_at_monotonic_ms=int(typed_at * 1000),
                )
        if isinstance(args, hooks.IngestOscArgs) and item.seen_at:
            age_ms = int((time.monotonic() - item.seen_at) * 1000)
            args = replace(args, evidence_age_ms=max(0, age_ms))
        try:
            item.reply = await self._connect().invoke(item.op, args, timeout=HOOKS_TIMEOUT_S)
        except OrcaError as exc:
            self.failed += 1
            # While hooks is down every message fails: say so when the streak starts.
            if not self._failing:
                log.warning(
                    "%s for %s not delivered to hooks: %s (further failures are counted)",
                    item.op.name,
                    item.pane_key,
                    exc,
                )
            self._failing = True
            return False
        if self._failing:
            log.info("hooks answers again (%d messages were not delivered)", self.failed)
            self._failing = False
        return True

    async def run(self) -> None:
        """Deliver queued messages to ``hooks``, in order, one at a time; a launch's
        announcement is tried again in its place (``ANNOUNCE_FOR_S``)."""
        async for item in self._recv:
            try:
                item.delivered = await self._deliver(item)
                if item.op is hooks.RESTART_PANE and not item.delivered:
                    item.delivered = await self._announce_again(item)
            finally:
                if item.acked is not None:
                    item.acked.set()

    async def _announce_again(self, item: HooksCall) -> bool:
        deadline = trio.current_time() + ANNOUNCE_FOR_S
        pause = ANNOUNCE_RETRY_S
        while trio.current_time() + pause < deadline:
            await trio.sleep(pause)
            if await self._deliver(item):
                return True
            pause = min(pause * 2, 4.0)
        log.warning("the launch in %s was never announced to hooks", item.pane_key)
        return False
