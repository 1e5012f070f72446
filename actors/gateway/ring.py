"""The gateway's event ring (pure): the local actors' events, bounded, for long-polls.

Every event keeps its publisher's ``src``/``epoch``/``seq`` (a remote mirror applies the
Clone rules per source); the ring adds its own position, so a client resumes a
long-poll where it left off. Bounded by count and by bytes: the oldest events go
first; a client whose position fell off the end is told ``gap`` and re-snapshots.
Invariant: positions are consecutive integers; ``first`` is the oldest one held.
"""

from __future__ import annotations

import secrets
from collections import deque
from dataclasses import dataclass

from orca.contracts.gateway import RelayedEvent

MAX_EVENTS = 20_000
MAX_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class Slice:
    events: list[RelayedEvent]
    next: int
    gap: bool


class EventRing:
    def __init__(self, max_events: int = MAX_EVENTS, max_bytes: int = MAX_BYTES) -> None:
        self.epoch = secrets.token_hex(8)
        self.max_events = max_events
        self.max_bytes = max_bytes
        self._items: deque[tuple[RelayedEvent, int]] = deque()
        self.first = 0  # position of _items[0]
        self.bytes = 0
        self.dropped = 0

    @property
    def head(self) -> int:
        """The position the next appended event gets."""
        return self.first + len(self._items)

    def append(self, event: RelayedEvent, size: int) -> None:
        self._items.append((event, size))
        self.bytes += size
        while len(self._items) > self.max_events or (
            self.bytes > self.max_bytes and len(self._items) > 1
        ):
            _, old = self._items.popleft()
            self.bytes -= old
            self.first += 1
            self.dropped += 1

    def read(self, epoch: str | None, after: int, limit: int) -> Slice:
        """Events from position ``after`` on (the ``next`` of the previous read; at most
        ``limit``); ``after < 0``: none, just the head to start from."""
        if after < 0:
            return Slice([], self.head, False)
        if epoch != self.epoch or after < self.first or after > self.head:
            return Slice([], self.head, True)
        start = after - self.first
        stop = min(len(self._items), start + max(1, limit))
        events = [self._items[i][0] for i in range(start, stop)]
        return Slice(events, self.first + stop, False)
