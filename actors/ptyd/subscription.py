"""In-process attached readers: bounded queues that a busy PTY never waits for."""

from __future__ import annotations

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
