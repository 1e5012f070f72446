"""The event publisher: a PUB socket stamping every event with ``epoch`` and ``seq``.

``epoch`` is fresh for every process start, ``seq`` counts events of this epoch from 1.
A subscriber that sees a gap in ``seq`` or a new ``epoch`` re-snapshots (zguide "Clone").
PUB drops messages for a subscriber whose queue is full instead of blocking, which is
exactly what we want: the publisher never waits for a slow reader, the reader notices
the gap and catches up from a snapshot.

A heartbeat (type ``sys.heartbeat``, carrying the *current* seq without consuming one)
goes out periodically, so a subscriber that lost the *last* events of a burst, and would
otherwise wait forever for a next event to reveal the gap, notices within one period.

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

# How often an idle publisher restates its seq: bounds how long a subscriber can stay
# unknowingly behind after losing the tail of a burst; 1 Hz costs nothing measurable.
HEARTBEAT_INTERVAL_S = 1.0
# Topics whose "is anyone subscribed?" answer is remembered until the subscriptions
# change (ptyd's output topics are one per session): beyond this it starts over.
WANTED_CACHE_MAX = 4096
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
        self.endpoints: list[str] = []
        self._ipc_files: list[tuple[str, int]] = []
        self.closed = False
        # Subscribed prefixes (XPUB passes a prefix's first subscribe and its last
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
        topic = HEARTBEAT_TYPE.encode()
        if self._is_wanted(topic):
            self._send(topic, self._event(HEARTBEAT_TYPE, None))

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
        ``\x00`` + prefix: unsubscribe; anything else is not XPUB's and is ignored)."""
        sock = self._sock
        while int(sock.getsockopt(_EVENTS)) & _POLLIN:
            try:
                message = sock.recv(_NOBLOCK)
            except zmq.Again:
                return
            if message[:1] == b"\x01":
                self._prefixes.add(message[1:])
            elif message[:1] == b"\x00":
                self._prefixes.discard(message[1:])
            else:
                continue
            self._wanted.clear()

    def _send(self, topic: bytes, event: Event) -> None:
        try:
            self._sock.send_multipart((topic, encode_event(event)), _NOBLOCK)
        except zmq.Again:  # XPUB only raises this with XPUB_NODROP, which we never set
            pass

    async def run_heartbeats(self, interval: float = HEARTBEAT_INTERVAL_S) -> None:
        while True:
            await trio.sleep(interval)
            self.heartbeat()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._sock.close(linger=0)
            unlink_ipc(self._ipc_files)
