"""The event publisher: a PUB socket stamping every event with ``epoch`` and ``seq``.

``epoch`` is fresh for every process start, ``seq`` counts events of this epoch from 1.
A subscriber that sees a gap in ``seq`` or a new ``epoch`` re-snapshots (zguide "Clone").
PUB drops messages for a subscriber whose queue is full instead of blocking, which is
exactly what we want: the publisher never waits for a slow reader, the reader notices
the gap and catches up from a snapshot.

A heartbeat (type ``sys.heartbeat``, carrying the *current* seq without consuming one)
goes out periodically, so a subscriber that lost the *last* events of a burst, and would
otherwise wait forever for a next event to reveal the gap, notices within one period.
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


def new_epoch() -> str:
    return secrets.token_hex(8)


class EventPublisher:
    """Publish typed events on one or more PUB endpoints."""

    def __init__(self, src: str, epoch: str | None = None, *, sndhwm: int = 100_000) -> None:
        self.src = src
        self.epoch = epoch or new_epoch()
        self.seq = 0
        self._sock = new_socket(zmq.PUB)
        # Generous queue per subscriber; beyond it PUB drops and the subscriber resyncs.
        self._sock.setsockopt(zmq.SNDHWM, sndhwm)
        self.endpoints: list[str] = []
        self._ipc_files: list[tuple[str, int]] = []
        self.closed = False

    @property
    def socket(self) -> zmq.Socket[bytes]:
        """The PUB socket, for options that must be set before a bind (CURVE)."""
        return self._sock

    def bind(self, endpoint: str) -> str:
        return bind_endpoint(self._sock, endpoint, self.endpoints, self._ipc_files)

    def emit(self, event: msgspec.Struct) -> int:
        """Publish a contract event Struct under its declared type and topic; returns its
        seq. Never blocks. (``KeyError`` if ``event`` is no declared event: a bug.)"""
        spec = spec_of(event)
        return self.publish(spec.type, for_wire(event), topic=spec.topic(event))

    def publish(self, type: str, data: Any = None, *, topic: str | None = None) -> int:
        """Publish one event by name (the untyped primitive under ``emit``); returns its seq."""
        self.seq += 1
        self._send(
            topic or type, Event(PROTOCOL_VERSION, self.src, self.epoch, self.seq, type, data)
        )
        return self.seq

    def heartbeat(self) -> None:
        self._send(
            HEARTBEAT_TYPE, Event(PROTOCOL_VERSION, self.src, self.epoch, self.seq, HEARTBEAT_TYPE)
        )

    def _send(self, topic: str, event: Event) -> None:
        if self.closed:
            return
        try:
            self._sock.send_multipart((topic.encode(), encode_event(event)), zmq.NOBLOCK)
        except zmq.Again:  # PUB only raises this with XPUB_NODROP, which we never set
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
