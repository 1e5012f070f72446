"""In-process attached readers: bounded queues that a busy PTY never waits for."""

from __future__ import annotations

from typing import Protocol

import trio

from actors.ptyd.scrollback import Chunk

# Chunks an in-process subscription may queue before it is marked lagged.
SUBSCRIPTION_QUEUE = 256


class Subscription:
    """An in-process attached reader: a bounded queue of chunks plus a lag flag."""

    def __init__(self, capacity: int = SUBSCRIPTION_QUEUE) -> None:
        self._send, self.receive = trio.open_memory_channel[Chunk](capacity)
        self.lagged = False

    def offer(self, chunk: Chunk) -> None:
        try:
            self._send.send_nowait(chunk)
        except trio.WouldBlock:
            self.lagged = True  # dropped: the reader resyncs by offset
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    def close(self) -> None:
        self._send.close()


class StreamPeer(Protocol):
    """A client attached over the attach stream (``actors/ptyd/stream.py``), as the
    session it is attached to sees it."""

    flat: bool

    @property
    def answer_rank(self) -> float:
        """Higher answers queries: when it last typed (or attached, before it typed)."""
        ...

    @property
    def can_answer(self) -> bool:
        """Whether it is live enough to be the one whose terminal answers queries."""
        ...

    def deliver(self, chunk: Chunk, *, answer: bool, switched: bool) -> bool:
        """Send one chunk (``switched``: the program switched screens in it); True if
        the client got it as is."""
        ...

    def ended(self, exit_code: int | None, end_offset: int) -> None:
        """The session's output is final."""
        ...
