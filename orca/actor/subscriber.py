"""A typed subscription: one publisher's events, decoded by its contract, to a callback.

Every actor that follows another actor's events (hooks and ptyd follow ``store``,
gitwatch mirrors it) uses this one class, so every consumer decodes an event with the
same ``EventSpec`` and treats a malformed one the same way: logged once, counted in
``stats.malformed``, dropped; the loop never sees an exception from a peer's bytes.

Topics: by default the SUB socket subscribes to each followed event's type (ZeroMQ
topic filters are prefixes, and each type is its own topic); an event with a per-key
topic (a session's output) is followed by passing ``topics`` explicitly. Heartbeats
and events of types not followed reach ``on_other`` when one is given (a follower
that wants to notice a lost tail), else they are dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

import trio
import zmq

from orca.actor.zsocket import ZSocket, new_socket
from orca.contracts.base import DecodeStats, EventSpec, decode_event_data, specs_by_type
from orca.contracts.sys import HEARTBEAT_TYPE
from orca.wire.envelope import Event, decode_event
from orca.wire.errors import BadFrame

log = logging.getLogger(__name__)

EventHandler = Callable[[Event, Any], None]


class Subscriber:
    """Decode the events of ``specs`` from ``endpoint`` and hand them to ``on_event``."""

    def __init__(
        self,
        endpoint: str,
        specs: Iterable[EventSpec[Any]],
        on_event: EventHandler,
        *,
        consumer: str,
        topics: Iterable[str] | None = None,
        on_other: Callable[[Event], None] | None = None,
        rcvhwm: int = 100_000,
    ) -> None:
        self.endpoint = endpoint
        self.consumer = consumer
        self.stats = DecodeStats()
        self._specs = specs_by_type(specs)
        self._on_event = on_event
        self._on_other = on_other
        sock = new_socket(zmq.SUB)
        sock.setsockopt(zmq.RCVHWM, rcvhwm)
        wanted = list(self._specs) if topics is None else list(topics)
        if on_other is not None and topics is None:
            wanted.append(HEARTBEAT_TYPE)
        for topic in wanted:
            sock.setsockopt(zmq.SUBSCRIBE, topic.encode())
        sock.connect(endpoint)
        self._zs = ZSocket(sock, self._on_message)

    def _on_message(self, frames: list[bytes]) -> None:
        try:
            event = decode_event(frames[-1])
        except BadFrame as exc:
            self.stats.malformed += 1
            log.warning(
                "%s: ignoring an undecodable event from %s: %s", self.consumer, self.endpoint, exc
            )
            return
        if event.type not in self._specs:
            if self._on_other is not None:
                self._on_other(event)
            return
        data = decode_event_data(event, self._specs, consumer=self.consumer, stats=self.stats)
        if data is not None:
            try:
                self._on_event(event, data)
            except Exception:
                # A valid event this consumer's handler failed on: our bug, logged with
                # its traceback and counted; the follower keeps following.
                self.stats.handler_errors += 1
                log.exception("%s: handling %s failed", self.consumer, event.type)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Receive until cancelled (the socket is connected from construction on)."""
        try:
            await self._zs.run(task_status=task_status)
        finally:
            self._zs.close()

    def close(self) -> None:
        self._zs.close()
