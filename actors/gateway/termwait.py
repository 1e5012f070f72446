"""``gateway.termWait``: ``term.read`` that waits for output, woken by ptyd's events.

A remote attach follows a session by byte offset. Polling ``term.read`` costs a
request every few milliseconds while nothing happens; here one request waits in the
gateway until the session has output past the caller's offset (or exits, or the
offset fell out of the scrollback), at most ``waitS``. The answer is a fresh
``term.read`` from ptyd, or, once a waiter was woken by output, the output events' own
bytes when they run contiguously from its offset (``_Watch.tail``: the echo of a key
costs no second trip to ptyd). Either way offsets and resume-after-link-loss are
``term.read``'s: the events carry each chunk's stream offset, a gap in them (an event
dropped) restarts the tail, and an offset outside it is read from ptyd, which also
answers ``gap`` and the session's end.

One SUB subscription per watched session (its ``term.output.<id>`` and
``term.exit.<id>`` topics, plus heartbeats), shared by all its waiters and kept
``LINGER_S`` after the last one so an attach's back-to-back waits reuse it. ZeroMQ
drops what is published before a subscription reaches the publisher, so until the
first heartbeat proves it live a waiter re-reads every ``NOT_LIVE_STEP_S``; and the
wake event is taken before each read, so output landing during the read wakes the
next wait at once. Bounded: at most ``MAX_WATCHES`` sessions are watched; beyond that
waiters fall back to re-reading every ``NOT_LIVE_STEP_S``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import trio

from orca.actor.subscriber import Subscriber
from orca.contracts import gateway as gw
from orca.contracts import ptyd
from orca.contracts.sys import HEARTBEAT_TYPE
from orca.wire.envelope import Event

log = logging.getLogger(__name__)

LINGER_S = 30.0
NOT_LIVE_STEP_S = 0.25
MAX_WATCHES = 256
# Output kept per watched session to answer waiters from the events' own bytes.
TAIL_BYTES = 256 * 1024

Read = Callable[[ptyd.ReadArgs], Awaitable[ptyd.ReadResult]]


@dataclass
class _Watch:
    session_id: str
    changed: trio.Event = field(default_factory=trio.Event)
    live: bool = False
    became_live: trio.Event = field(default_factory=trio.Event)
    waiters: int = 0
    last_used: float = 0.0
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    # The latest output events' bytes, contiguous: ``tail[0]`` is at stream offset
    # ``tail_start``. A waiter whose offset falls inside is answered from here, without
    # a term.read (the echo of a key, the next lines of a running program).
    tail: bytearray = field(default_factory=bytearray)
    tail_start: int = 0

    def wake(self, _event: Event | None = None, typed: Any = None) -> None:
        if isinstance(typed, ptyd.OutputChunk) and typed.data:
            self._keep(typed.offset, typed.data)
        self.changed.set()
        self.changed = trio.Event()

    def _keep(self, offset: int, data: bytes) -> None:
        if self.tail and offset == self.tail_start + len(self.tail):
            self.tail += data
        else:  # the first, or after a gap (an event dropped): start again from here
            self.tail = bytearray(data)
            self.tail_start = offset
        extra = len(self.tail) - TAIL_BYTES
        if extra > 0:
            del self.tail[:extra]
            self.tail_start += extra

    def from_tail(self, since: int, limit: int | None) -> ptyd.ReadResult | None:
        """What a term.read from ``since`` would answer, while the session runs, if the
        events have brought those bytes; None otherwise (ask ptyd)."""
        at = since - self.tail_start
        if not self.tail or at < 0 or at >= len(self.tail):
            return None
        data = bytes(self.tail[at:] if limit is None else self.tail[at : at + limit])
        return ptyd.ReadResult(
            session_id=self.session_id,
            offset=since,
            data=data,
            end=since + len(data),
            gap=False,
            running=True,
            exit_code=None,
            output_ended=False,
        )

    def heard(self, event: Event) -> None:
        if event.type == HEARTBEAT_TYPE:
            self.live = True
            self.became_live.set()
        else:
            self.wake()


class OutputWaits:
    def __init__(self, pub_endpoint: str) -> None:
        self.endpoint = pub_endpoint
        self.watches: dict[str, _Watch] = {}
        self._nursery: trio.Nursery | None = None
        self.wakes = 0
        self.served_from_events = 0

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            await trio.sleep_forever()

    def _watch(self, session_id: str) -> _Watch | None:
        watch = self.watches.get(session_id)
        if watch is not None or self._nursery is None or len(self.watches) >= MAX_WATCHES:
            return watch
        watch = self.watches[session_id] = _Watch(session_id, last_used=trio.current_time())
        self._nursery.start_soon(self._follow, watch)
        return watch

    async def _follow(self, watch: _Watch) -> None:
        sid = watch.session_id
        try:
            with watch.scope:
                sub = Subscriber(
                    self.endpoint,
                    [ptyd.OUTPUT, ptyd.EXIT],
                    watch.wake,
                    consumer=f"gateway<-ptyd[{sid[:12]}]",
                    topics=[ptyd.output_topic(sid), ptyd.exit_topic(sid), HEARTBEAT_TYPE],
                    on_other=watch.heard,
                    rcvhwm=1000,
                )
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(sub.run)
                    while True:
                        await trio.sleep(LINGER_S)
                        idle = trio.current_time() - watch.last_used
                        if watch.waiters == 0 and idle >= LINGER_S:
                            nursery.cancel_scope.cancel()
        except Exception:  # never the gateway's end: waiters fall back to re-reading
            log.exception("gateway: watching session %s failed", sid)
        finally:
            self.watches.pop(sid, None)
            watch.live = False
            watch.wake()

    async def wait(self, args: gw.TermWaitArgs, read: Read) -> ptyd.ReadResult:
        wait_s = max(0.0, min(args.wait_s, gw.MAX_TERM_WAIT_S))
        deadline = trio.current_time() + wait_s
        request = ptyd.ReadArgs(session_id=args.session_id, since=args.since, limit=args.limit)
        got = await read(request)  # first: a session ptyd does not know is never watched
        if _done(got) or args.since is None or wait_s <= 0:
            return got
        watch = self._watch(args.session_id)
        if watch is not None:
            watch.waiters += 1
        woken = False
        try:
            while True:
                changed = watch.changed if watch is not None else None
                served = watch.from_tail(args.since, args.limit) if woken and watch else None
                got = served if served is not None else await read(request)
                if served is not None:
                    self.served_from_events += 1
                remaining = deadline - trio.current_time()
                if _done(got) or remaining <= 0:
                    return got
                live = watch is not None and watch.live and watch.session_id in self.watches
                step = remaining if live else min(remaining, NOT_LIVE_STEP_S)
                with trio.move_on_after(step):
                    if changed is not None:
                        await changed.wait()
                        self.wakes += 1
                        woken = True
                    else:
                        await trio.sleep(step)
        finally:
            if watch is not None:
                watch.waiters -= 1
                watch.last_used = trio.current_time()


def _done(got: ptyd.ReadResult) -> bool:
    """Whether a waiter has its answer: output, a gap, or a session that has ended."""
    return bool(got.data) or got.gap or got.output_ended or not got.running
