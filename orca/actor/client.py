"""The async RPC client: a DEALER socket with per-call deadlines and retries.

Each call gets a fresh request id; replies are matched by id, so replies arriving after
their call gave up are dropped. A call with ``retries`` resends on timeout with the same
idempotency key (generated if the caller gave none), so the server runs a retried
mutation once. ``ZMQ_IMMEDIATE`` keeps requests off connections that are not up: while
the peer is down a send waits (and times out as ``unavailable``) instead of queueing
into a pipe that will be discarded.

Deadlines are kept by one watchdog task per client rather than a cancel scope per call
(a scope costs as much as the rest of a call's client-side work): each attempt's
deadline is rounded up to ``DEADLINE_GRANULARITY_S`` and the attempt joins that slot's
set, so the watchdog wakes a bounded number of times per second and wakes a slot's
attempts whose time is up. An attempt leaves its slot when it ends: what the client
holds is what is in flight, not every call of the last ``timeout`` seconds (at 25,000
calls a second that was 125,000 entries, and the garbage collector walked them all).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import os
import secrets
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import trio
import zmq

from orca.actor.zsocket import ZSocket, new_socket
from orca.contracts.base import Op, decode_result
from orca.keys import CurveClient
from orca.paths import waker_of
from orca.wire.codec import decode_any
from orca.wire.envelope import decode_reply_raw, encode_request
from orca.wire.errors import BadFrame, OrcaError, Timeout, Unavailable, error_from_wire

log = logging.getLogger(__name__)


def _exists(path: str) -> bool:
    """A stat of a socket file in the runtime folder (memory-backed: never blocks)."""
    return os.path.exists(path)


DEFAULT_TIMEOUT_S = 5.0
R = TypeVar("R")
# Deadlines are rounded up to this: timeouts are coarse by nature, and rounding lets the
# watchdog expire a whole batch of attempts per wake-up instead of one per call.
DEADLINE_GRANULARITY_S = 0.05


class _Call:
    """One logical call across its attempts; a late reply to any attempt completes it."""

    __slots__ = ("answered", "done", "error", "result", "sending")

    def __init__(self) -> None:
        self.done = trio.Event()  # replaced per attempt; set by a reply or the watchdog
        self.answered = False
        self.result: bytes = b""
        self.error: OrcaError | None = None
        self.sending: trio.CancelScope | None = None  # while waiting to be connected


class RpcClient:
    """Call ops on one actor endpoint. Needs its owner task running (see ``open_rpc_client``)."""

    def __init__(
        self,
        endpoint: str,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        curve: CurveClient | None = None,
    ) -> None:
        """``curve``: this client's key pair and the server's public key, for a ``tcp://``
        endpoint (every tcp endpoint is a CURVE server); ipc endpoints need none."""
        self.endpoint = endpoint
        self.timeout = timeout
        sock = new_socket(zmq.DEALER)
        sock.setsockopt(zmq.IMMEDIATE, 1)
        # A CURVE server that refuses our key says so in the handshake: its monitor
        # event fails the calls at once (not after the timeout: a refused client that
        # is then authorized is back within a retry, issue 32).
        self._monitor: ZSocket | None = None
        self.refused: str | None = None
        if curve is not None:
            curve.apply(sock)
            monitor = sock.get_monitor_socket(
                zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_HANDSHAKE_FAILED_AUTH
            )
            self._monitor = ZSocket(monitor, self._on_monitor)
        sock.connect(endpoint)
        self._zs = ZSocket(sock, self._on_message)
        self._pending: dict[str, _Call] = {}
        self._prefix = secrets.token_hex(4) + "-"
        self._counter = itertools.count(1)
        # Deadline slots (a deadline / DEADLINE_GRANULARITY_S, rounded up): the heap has
        # each slot once, the dict the attempts in it.
        self._slots: list[int] = []
        self._waiting: dict[int, set[trio.Event]] = {}
        self._watch_scope: trio.CancelScope | None = None
        # An actor's rpc socket orcad may hold dormant (woken on a call): (its path, the
        # actor's name, orcad's socket beside it).
        socket_path = endpoint[len("ipc://") :] if endpoint.startswith("ipc://") else ""
        waker = waker_of(socket_path) if socket_path else None
        self._peer = None if waker is None else (socket_path, *waker)
        self._waking = trio.Lock()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watchdog)
            if self._monitor is not None:
                nursery.start_soon(self._monitor.run)
            await self._zs.run(task_status=task_status)

    def _on_monitor(self, frames: list[bytes]) -> None:
        from zmq.utils.monitor import parse_monitor_message

        try:
            event = parse_monitor_message(frames)["event"]
        except (ValueError, KeyError, struct.error):
            return
        if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
            self.refused = None
            return
        if event != zmq.EVENT_HANDSHAKE_FAILED_AUTH:
            return
        self.refused = f"{self.endpoint} refused this client's key (not authorized there)"
        for call in self._pending.values():
            if not call.answered:
                call.answered = True
                call.error = Unavailable(self.refused)
                call.done.set()
                if call.sending is not None:
                    call.sending.cancel()

    async def _watchdog(self) -> None:
        slots, waiting = self._slots, self._waiting
        while True:
            now = trio.current_time()
            while slots and slots[0] * DEADLINE_GRANULARITY_S <= now:
                for event in waiting.pop(heapq.heappop(slots), ()):
                    event.set()  # no-op if a reply got there first
            deadline = slots[0] * DEADLINE_GRANULARITY_S if slots else math.inf
            with trio.CancelScope(deadline=deadline) as scope:
                self._watch_scope = scope
                await trio.sleep_forever()
            self._watch_scope = None

    def _arm(self, timeout: float) -> tuple[int, trio.Event]:
        """An attempt's (deadline slot, event): the event is set by its reply or, once
        the slot's time has come, by the watchdog. ``_disarm`` when the attempt ends."""
        slot = math.ceil((trio.current_time() + timeout) / DEADLINE_GRANULARITY_S)
        event = trio.Event()
        members = self._waiting.get(slot)
        if members is None:
            members = self._waiting[slot] = set()
            heapq.heappush(self._slots, slot)
            scope = self._watch_scope
            deadline = slot * DEADLINE_GRANULARITY_S
            if scope is not None and deadline < scope.deadline:
                scope.deadline = deadline
        members.add(event)
        return slot, event

    def _disarm(self, slot: int, event: trio.Event) -> None:
        """The attempt is over: its slot no longer holds it (an emptied slot stays in the
        heap until its time; the watchdog then finds nothing to wake)."""
        members = self._waiting.get(slot)
        if members is not None:
            members.discard(event)

    def _on_message(self, frames: list[bytes]) -> None:
        if len(frames) != 1:
            return
        try:
            reply = decode_reply_raw(frames[0])
        except BadFrame:
            return
        call = self._pending.get(reply.id) if reply.id is not None else None
        if call is None or call.answered:
            return  # a reply to a call that already gave up, or a duplicate
        call.answered = True
        if reply.ok:
            call.result = bytes(reply.result)
        else:
            call.error = error_from_wire(reply.error)
        call.done.set()

    async def invoke(
        self,
        op: Op[Any, R],
        args: Any = None,
        *,
        timeout: float | None = None,
        retries: int = 0,
        idem: str | None = None,
    ) -> R:
        """Call ``op`` with ``args`` (its args Struct, or None for none) → its typed result.

        A reply whose result does not match the op's declared type is the peer's fault:
        it raises ``BadFrame`` here, at the one boundary, never deeper in the caller.
        """
        raw = await self._roundtrip(op.name, args, timeout, retries, idem)
        return decode_result(op, raw, self.endpoint)

    async def call(
        self,
        op: str,
        args: Any = None,
        *,
        timeout: float | None = None,
        retries: int = 0,
        idem: str | None = None,
    ) -> Any:
        """Untyped twin of ``invoke`` by op *name*, for tests and probes that speak raw maps."""
        return decode_any(await self._roundtrip(op, args, timeout, retries, idem))

    async def _roundtrip(
        self,
        op: str,
        args: Any,
        timeout: float | None,
        retries: int,
        idem: str | None,
    ) -> bytes:
        """Send ``op`` (retrying with one idem key) and return the reply's raw result."""
        per_attempt = self.timeout if timeout is None else timeout
        if retries and idem is None:
            idem = secrets.token_hex(12)
        call = _Call()
        ids: list[str] = []
        try:
            for _attempt in range(retries + 1):
                rid = f"{self._prefix}{next(self._counter)}"
                ids.append(rid)
                self._pending[rid] = call
                slot, call.done = self._arm(per_attempt)
                try:
                    frame = (encode_request(rid, op, args, idem),)
                    if not self._zs.send_nowait(frame):  # the peer is not connected (yet)
                        if self.refused is not None:
                            raise Unavailable(self.refused)
                        deadline = slot * DEADLINE_GRANULARITY_S
                        await self._wake_peer(deadline)
                        with trio.move_on_at(deadline) as call.sending:
                            await self._zs.send(frame)
                        call.sending = None
                    await call.done.wait()
                finally:
                    self._disarm(slot, call.done)
                if call.answered:
                    break
            else:
                raise Timeout(
                    f"no reply to {op} from {self.endpoint} within {per_attempt:g}s"
                    + (f" ({retries + 1} attempts)" if retries else "")
                )
        finally:
            for rid in ids:
                self._pending.pop(rid, None)
        if call.error is not None:
            raise call.error
        return call.result

    async def _wake_peer(self, deadline: float) -> None:
        """The peer is an actor whose ipc socket is missing: ask orcad (beside it) to
        start it if it is dormant (``sup.wake``), once for every call waiting on it."""
        if self._peer is None or _exists(self._peer[0]):
            return
        socket_path, actor, supervisor = self._peer
        async with self._waking:
            remaining = deadline - trio.current_time()
            if _exists(socket_path) or not _exists(supervisor) or remaining <= 0:
                return
            from orca.contracts import supervisor as sup

            args = sup.WakeArgs(name=actor, timeout=remaining)
            async with open_rpc_client(f"ipc://{supervisor}", timeout=remaining + 1.0) as orcad:
                try:
                    await orcad.invoke(sup.WAKE, args)
                except OrcaError as exc:  # the call goes on waiting for the peer as before
                    log.debug("waking %s: %s", self.endpoint, exc)

    def close(self) -> None:
        if self._monitor is not None and not self._monitor.closed:
            if not self._zs.closed:
                self._zs.sock.disable_monitor()
            self._monitor.close()
        self._zs.close()


@asynccontextmanager
async def open_rpc_client(
    endpoint: str, *, timeout: float = DEFAULT_TIMEOUT_S, curve: CurveClient | None = None
) -> AsyncIterator[RpcClient]:
    """An ``RpcClient`` whose owner task lives for the ``async with`` block."""
    client = RpcClient(endpoint, timeout=timeout, curve=curve)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(client.run)
            try:
                yield client
            finally:
                nursery.cancel_scope.cancel()
    finally:
        client.close()
