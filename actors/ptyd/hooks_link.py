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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import trio

from orca.actor import RpcClient
from orca.contracts import hooks
from orca.contracts.base import Args, Op
from orca.wire.errors import OrcaError

log = logging.getLogger(__name__)

# Messages waiting for hooks; beyond this they are dropped (status is a latest-value
# signal, the next OSC supersedes a lost one).
HOOKS_QUEUE = 1024
# A hooks call that takes longer than this is abandoned; hooks answers in ms when up.
HOOKS_TIMEOUT_S = 2.0
# How long term.close waits for hooks to confirm the pane's fence: one HOOKS_TIMEOUT_S
# call plus room for a short backlog of queued OSC updates ahead of it. Below the CLI's
# close timeout, so a down hooks yields an answer ("not fenced"), not a client timeout.
FENCE_WAIT_S = 3.0


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


class HooksLink:
    """The queue to ``hooks`` and its counters; ``run`` is the task that drains it."""

    def __init__(self, connect: Callable[[], RpcClient]) -> None:
        self._connect = connect
        self._send, self._recv = trio.open_memory_channel[HooksCall](HOOKS_QUEUE)
        self.dropped = 0  # queue full (hooks slow or down for long)
        self.failed = 0  # calls that failed or timed out

    def ingest_osc(
        self, pane_key: str, terminal_handle: str, worktree_id: str, payload: bytes
    ) -> None:
        """One OSC 9999 document seen in a session's output."""
        args = hooks.IngestOscArgs(
            pane_key=pane_key,
            terminal_handle=terminal_handle,
            worktree_id=worktree_id,
            payload=payload.decode("utf-8", errors="replace"),
        )
        self._tell(HooksCall(hooks.INGEST_OSC, args, pane_key))

    def restart_pane(self, pane_key: str, launch_token_sha256: str, worktree_id: str) -> None:
        """A live launch in the pane: hooks lifts its retirement fence, learns the hash."""
        args = hooks.RestartPaneArgs(
            pane_key=pane_key, launch_token_sha256=launch_token_sha256, worktree_id=worktree_id
        )
        self._tell(HooksCall(hooks.RESTART_PANE, args, pane_key))

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

    def _tell(self, item: HooksCall) -> None:
        try:
            self._send.send_nowait(item)
        except trio.WouldBlock:
            self.dropped += 1

    async def _deliver(self, item: HooksCall) -> bool:
        try:
            await self._connect().invoke(item.op, item.args, timeout=HOOKS_TIMEOUT_S)
        except OrcaError as exc:
            self.failed += 1
            log.warning("%s for %s not delivered to hooks: %s", item.op.name, item.pane_key, exc)
            return False
        return True

    async def run(self) -> None:
        """Deliver queued messages to ``hooks``, in order, one at a time."""
        async for item in self._recv:
            try:
                item.delivered = await self._deliver(item)
            finally:
                if item.acked is not None:
                    item.acked.set()
