"""The event publisher: a PUB socket stamping every event with ``epoch`` and ``seq``.

``epoch`` is fresh for every process start, ``seq`` counts events of this epoch from 1.
A subscriber that sees a gap in ``seq`` or a new ``epoch`` re-snapshots (zguide "Clone").
PUB drops messages for a subscriber whose queue is full instead of blocking, which is
exactly what we want: the publisher never waits for a slow reader, the reader notices
the gap and catches up from a snapshot.

A heartbeat (type ``sys.heartbeat``, carrying the *current* seq without consuming one)
tells a subscriber two things: its subscription is live (no later event is lost to the
slow joiner), and the seq it should have reached (a subscriber that lost the *last*
events of a burst would otherwise wait forever for a next event to reveal the gap).
So one goes out when each is needed, and nothing wakes while nothing happens (issue 36):

* at once when a subscription that covers the heartbeat arrives (the socket is
  ``XPUB_VERBOSE``: a second subscriber to the same prefix is announced too, and a
  restarted publisher hears every subscription again as its subscribers reconnect);
* ``TRAILING_HEARTBEAT_S`` after the last event sent (one per period while events
  flow), which bounds how long a lost tail can stay unnoticed;
* every ``IDLE_HEARTBEAT_S`` when nothing else was sent: a restatement for the rare
  reader that judges a publisher by its silence (``orca ui``'s fallback, next to the
  publisher's pid).

The socket is an XPUB, so the publisher knows which topic prefixes are subscribed and
does not even encode an event no subscriber would get (PUB would drop it after the
encoding: measured, ptyd's per-batch output event was ~15% of its CPU with 20 agents
printing and nobody following their output; ``bench/pty.py --phases cpu``). Its ``seq``
is consumed all the same, so what a subscriber sees is exactly what PUB's own filter
would have let through. The subscription messages are read when an event is about to
be published, all that are queued: a subscriber that saw any event sent after its
subscription reached the socket (a heartbeat, say) gets every later event it asked
for, as with PUB.
"""

from __future__ import annotations

import secrets
from typing import Any

import msgspec
import trio
import zmq

from orca import PROTOCOL_VERSION
from orca.actor.zsocket import bind_endpoint, new_socket, unlink_ipc
from orca.contracts.base import spec_of
from orca.contracts.sys import HEARTBEAT_TYPE
from orca.model.codec import for_wire
from orca.wire.envelope import Event, encode_event

# A heartbeat this long after the last event sent: bounds how long a subscriber can stay
# unknowingly behind after losing the tail of a burst.
TRAILING_HEARTBEAT_S = 1.0
# ... and one this often while nothing is sent at all (every actor and every follower
# of it wakes for it: at 1 Hz that was most of an idle tree's CPU, bench/idle.py).
IDLE_HEARTBEAT_S = 30.0
# Topics whose "is anyone subscribed?" answer is remembered until the subscriptions
# change (ptyd's output topics are one per session): beyond this it starts over.
WANTED_CACHE_MAX = 4096
_HEARTBEAT_TOPIC = HEARTBEAT_TYPE.encode()
_NOBLOCK = int(zmq.NOBLOCK)
_EVENTS = int(zmq.EVENTS)
_POLLIN = int(zmq.POLLIN)


def new_epoch() -> str:
    return secrets.token_hex(8)


class EventPublisher:
    """Publish typed events on one or more PUB endpoints."""

    def __init__(self, src: str, epoch: str | None = None, *, sndhwm: int = 100_000) -> None:
        self.src = src
        self.epoch = epoch or new_epoch()
        self.seq = 0
        self._sock = new_socket(zmq.XPUB)
        # Generous queue per subscriber; beyond it PUB drops and the subscriber resyncs.
        self._sock.setsockopt(zmq.SNDHWM, sndhwm)
        # Every subscription message, not only a prefix's first: each new subscriber is
        # owed a heartbeat at once (its proof of being live).
        self._sock.setsockopt(zmq.XPUB_VERBOSE, 1)
        # Something was sent since the last heartbeat (a trailing one is due), and the
        # wake-up of the heartbeat task waiting for that (None: no task runs).
        self._sent_since_beat = False
        self._activity: trio.Event | None = None
        self.endpoints: list[str] = []
        self._ipc_files: list[tuple[str, int]] = []
        self.closed = False
        # Subscribed prefixes (XPUB_VERBOSE passes every subscribe, and a prefix's last
        # unsubscribe, a departed subscriber's included), and answers per topic.
        self._prefixes: set[bytes] = set()
        self._wanted: dict[bytes, bool] = {}
        self.skipped = 0  # events no subscriber asked for: never encoded nor sent

    @property
    def socket(self) -> zmq.Socket[bytes]:
        """The XPUB socket, for options that must be set before a bind (CURVE)."""
        return self._sock

    def bind(self, endpoint: str) -> str:
        return bind_endpoint(self._sock, endpoint, self.endpoints, self._ipc_files)

    def emit(self, event: msgspec.Struct) -> int:
        """Publish a contract event Struct under its declared type and topic; returns its
        seq. Never blocks. (``KeyError`` if ``event`` is no declared event: a bug.)"""
        spec = spec_of(event)
        self.seq += 1
        topic = spec.topic(event).encode()
        if self._is_wanted(topic):
            self._send(topic, self._event(spec.type, for_wire(event)))
        return self.seq

    def publish(self, type: str, data: Any = None, *, topic: str | None = None) -> int:
        """Publish one event by name (the untyped primitive under ``emit``); returns its seq."""
        self.seq += 1
        wire_topic = (topic or type).encode()
        if self._is_wanted(wire_topic):
            self._send(wire_topic, self._event(type, data))
        return self.seq

    def heartbeat(self) -> None:
        # Owed no more, sent or not: with no one subscribed to heartbeats (a topic's
        # subscriber that did not ask for them), the trailing one stayed due and the
        # loop woke for it every second, for good (issue 36: gitwatch, idle).
        self._sent_since_beat = False
        if self._is_wanted(_HEARTBEAT_TOPIC):
            self._beat()
            self._read_subscriptions()  # the send may have taken in queued subscriptions

    def _beat(self) -> None:
        self._sent_since_beat = False
        self._send_frames(_HEARTBEAT_TOPIC, self._event(HEARTBEAT_TYPE, None))

    def wants(self, topic: str) -> bool:
        """Whether some subscriber would get an event published under ``topic`` now."""
        return self._is_wanted(topic.encode())

    def _event(self, type: str, data: Any) -> Event:
        return Event(PROTOCOL_VERSION, self.src, self.epoch, self.seq, type, data)

    def _is_wanted(self, topic: bytes) -> bool:
        if self.closed:
            return False
        self._read_subscriptions()
        wanted = self._wanted.get(topic)
        if wanted is None:
            wanted = any(topic.startswith(prefix) for prefix in self._prefixes)
            if len(self._wanted) >= WANTED_CACHE_MAX:
                self._wanted.clear()
            self._wanted[topic] = wanted
        if not wanted:
            self.skipped += 1
        return wanted

    def _read_subscriptions(self) -> None:
        """Take in every subscription message queued (``\x01`` + prefix: subscribe,
        ``\x00`` + prefix: unsubscribe; anything else is not XPUB's and is ignored),
        and answer a subscription covering the heartbeat with one at once.

        Whoever reads ``ZMQ_EVENTS`` (or sends: a send may take in the socket's queued
        commands too) may consume the socket fd's edge, so this reads until
        ``ZMQ_EVENTS`` says nothing is queued, after every send included: the fd then
        signals the next subscription to ``serve_subscriptions``."""
        sock = self._sock
        while True:
            beat = False
            while int(sock.getsockopt(_EVENTS)) & _POLLIN:
                try:
                    message = sock.recv(_NOBLOCK)
                except zmq.Again:
                    break
                if message[:1] == b"\x01":
                    prefix = message[1:]
                    self._prefixes.add(prefix)
                    beat = beat or _HEARTBEAT_TOPIC.startswith(prefix)
                elif message[:1] == b"\x00":
                    self._prefixes.discard(message[1:])
                else:
                    continue
                self._wanted.clear()
            if not beat or self.closed:
                return
            self._beat()  # then read again: the send may have taken in more

    def _send(self, topic: bytes, event: Event) -> None:
        """Send one event; a trailing heartbeat is due after it."""
        self._send_frames(topic, event)
        if not self._sent_since_beat:
            self._sent_since_beat = True
            if self._activity is not None:
                self._activity.set()
        self._read_subscriptions()  # the send may have taken in queued subscriptions

    def _send_frames(self, topic: bytes, event: Event) -> None:
        try:
            self._sock.send_multipart((topic, encode_event(event)), _NOBLOCK)
        except zmq.Again:  # XPUB only raises this with XPUB_NODROP, which we never set
            pass

    async def run_heartbeats(
        self, interval: float = IDLE_HEARTBEAT_S, *, trailing: float = TRAILING_HEARTBEAT_S
    ) -> None:
        """The heartbeats (module docstring): at once for each new subscription, one
        ``trailing`` s after events were sent, one every ``interval`` s of nothing."""
        trailing = min(trailing, interval)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.serve_subscriptions)
            while True:
                self._activity = trio.Event()
                if not self._sent_since_beat:
                    with trio.move_on_after(interval):
                        await self._activity.wait()
                if self._sent_since_beat:
                    await trio.sleep(trailing)  # events sent meanwhile: one beat covers them
                self.heartbeat()

    async def serve_subscriptions(self) -> None:
        """Read subscriptions as they arrive (a new subscriber's heartbeat is due then),
        not only when an event is about to be published."""
        fd = int(self._sock.getsockopt(zmq.FD))
        self._read_subscriptions()
        while not self.closed:
            try:
                await trio.lowlevel.wait_readable(fd)
            except trio.ClosedResourceError:  # close() while waiting
                return
            if self.closed:
                return
            self._read_subscriptions()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            try:  # a task waiting on the socket's fd is woken first (serve_subscriptions)
                trio.lowlevel.notify_closing(int(self._sock.getsockopt(zmq.FD)))
            except RuntimeError:  # not inside trio
                pass
            self._sock.close(linger=0)
            unlink_ipc(self._ipc_files)
