"""A client's position in a session's output stream: dedupe, and detect gaps by offset.

Every output event carries the offset of its first byte. A client remembers the offset
it has shown up to; an event that starts *after* it reveals lost events (PUB dropped
them for a slow subscriber, or the client was away), and the client catches up with
``term.read {since: offset}``. If even that was trimmed, it resyncs from the snapshot
(the scrollback, which always starts at a safe boundary).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class StreamCursor:
    """The offset a client has consumed up to; pure, shared by CLI, tests and bench."""

    offset: int = 0

    def accept(self, offset: int, data: bytes) -> bytes | None:
        """New bytes of a chunk starting at ``offset``, or None if a gap precedes it.

        Bytes already seen (a catch-up read overlapping live events) are skipped.
        """
        if offset > self.offset:
            return None
        end = offset + len(data)
        if end <= self.offset:
            return b""
        fresh = data[self.offset - offset :]
        self.offset = end
        return fresh

    def restart_at(self, offset: int) -> None:
        """Resync: the client replaced its screen with a snapshot starting at ``offset``."""
        self.offset = offset
