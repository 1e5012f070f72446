"""Bounded per-session scrollback addressed by a monotonic byte offset.

Every byte a session ever output (after OSC 9999 stripping) has an offset: the first
byte is offset 0 and offsets never repeat or go back, even across trims. A client that
holds offset ``k`` asks for everything since ``k``; if ``k`` was already trimmed away it
gets a :class:`Gap` and must resync from :meth:`Scrollback.snapshot` (which a live
stream event carrying its start offset makes detectable: ``event.offset != k``).

Trimming keeps the buffer under ``capacity`` bytes and cuts only at a *safe boundary*,
so a replay never starts inside an escape sequence or a UTF-8 character:

1. preferably just after a newline (a terminal line start);
2. if no newline lies within ``_NEWLINE_SEARCH`` bytes after the required cut (a
   full-screen program that never prints one), at a point that is outside the escape
   sequence containing the cut (if any) and not on a UTF-8 continuation byte.

Trims remove at least ``capacity // 8`` extra bytes (hysteresis), so a busy session
trims once per ~1/8 capacity of output instead of on every append; ``bytearray``
deletes from the front without moving the rest, so a trim is cheap.
"""

from __future__ import annotations

import logging
import zlib
from dataclasses import dataclass
from typing import Protocol

from orca.model.vt import end_of_escape_containing

log = logging.getLogger(__name__)

# Default 1 MiB per session: several thousand lines of agent output, and 100 sessions
# stay around 100 MB (issue 6 RSS goal: scrollback bound x 100 + 30 MB).
DEFAULT_CAPACITY = 1024 * 1024
# How far past the required cut we look for a newline before falling back to an
# escape-sequence-aware cut; one long line of a TUI redraw is usually shorter.
_NEWLINE_SEARCH = 16 * 1024
# zlib level for idle compaction: level 1 compresses 1 MiB in a few ms and gets most
# of the ratio on terminal output.
_COMPACT_LEVEL = 1


@dataclass(frozen=True)
class Chunk:
    """Data starting at ``offset``; ``end`` is the offset just after it."""

    offset: int
    data: bytes

    @property
    def end(self) -> int:
        return self.offset + len(self.data)


@dataclass(frozen=True)
class Gap:
    """The requested offset was trimmed: resync from a snapshot starting at ``start``."""

    requested: int
    start: int


class OffsetInFuture(ValueError):
    """The caller asked for an offset the session has not produced (caller's fault)."""


class SpillStore(Protocol):
    """Where a cold scrollback's compressed bytes wait out a long idle period (ptyd: a
    private file beside the journal, ``history.SpillFile``), out of the process's memory."""

    def save(self, data: bytes) -> bool:
        """Keep ``data`` (replacing what was kept); False if it could not (disk full)."""
        ...

    def load(self) -> bytes | None:
        """What ``save`` kept; None if it is gone."""
        ...

    def discard(self) -> None: ...


class Scrollback:
    """Bounded bytes with monotonic offsets; the pure core of a session's history."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY, spill: SpillStore | None = None) -> None:
        if capacity < 64:
            raise ValueError("scrollback capacity must be at least 64 bytes")
        self.capacity = capacity
        self._buf = bytearray()
        self._start = 0  # offset of the first byte held
        # Idle compaction: while set, the content is this zlib stream and _buf is empty.
        self._packed: bytes | None = None
        self._packed_len = 0
        # Cold (``spill``): the zlib stream is in the store, neither _packed nor _buf hold it.
        self._spill = spill
        self._spilled = False

    @property
    def start(self) -> int:
        """Offset of the oldest byte still held."""
        return self._start

    @property
    def end(self) -> int:
        """Offset just after the newest byte; the total ever appended."""
        return self._start + len(self)

    def __len__(self) -> int:
        return self._packed_len if self.compacted else len(self._buf)

    @property
    def compacted(self) -> bool:
        return self._packed is not None or self._spilled

    @property
    def cold(self) -> bool:
        return self._spilled

    def compact(self) -> None:
        """Hold the content compressed until the next append (for idle sessions).

        Terminal output compresses several-fold; 50 agents waiting for input are the
        common case, and their scrollbacks are most of ptyd's memory.
        """
        if self._packed is None and self._buf:
            self._packed = zlib.compress(self._buf, _COMPACT_LEVEL)
            self._packed_len = len(self._buf)
            self._buf = bytearray()

    def go_cold(self) -> bool:
        """Move the compacted content to the spill store (a session idle for long);
        False if there is none, or it refused (the content then stays packed here)."""
        if self._spill is None or self._packed is None:
            return False
        if not self._spill.save(self._packed):
            return False
        self._packed = None
        self._spilled = True
        return True

    def _inflated(self) -> bytes:
        """The compacted content, decompressed (from the spill store when cold)."""
        packed = self._packed
        if packed is None:
            assert self._spill is not None
            packed = self._spill.load()
        if packed is not None:
            try:
                return zlib.decompress(packed)
            except zlib.error:
                pass
        # The spilled content went away or was damaged under us (nobody but ptyd writes
        # there): it is lost, the offsets go on, so a reader of the lost part gets a gap.
        how = "gone" if packed is None else "damaged"
        log.error("scrollback: the spilled history is %s; %d bytes lost", how, self._packed_len)
        self._start += self._packed_len
        self._packed_len = 0
        self._packed = None
        self._spilled = False
        return b""

    def _content(self) -> bytes | bytearray:
        """The held bytes; a temporary decompressed copy while compacted (reads stay packed)."""
        return self._inflated() if self.compacted else self._buf

    def _unpack(self) -> None:
        if not self.compacted:
            return
        was_cold = self._spilled
        self._buf = bytearray(self._inflated())
        self._packed = None
        self._spilled = False
        if was_cold:
            assert self._spill is not None
            self._spill.discard()

    def append(self, data: bytes) -> Chunk:
        """Record ``data``; returns it as a chunk with its offset. Trims when over capacity."""
        self._unpack()
        chunk = Chunk(self.end, bytes(data))
        self._buf += data
        if len(self._buf) > self.capacity:
            self._trim(len(self._buf) - self.capacity + self.capacity // 8)
        return chunk

    def restore(self, start: int, data: bytes) -> None:
        """Refill an empty scrollback from durable history that begins at ``start``.

        Only the newest ``capacity`` bytes are kept, cut at a safe boundary.
        """
        if self.end:
            raise ValueError("restore needs an empty scrollback")
        self._start = start
        self._buf = bytearray(data)
        if len(self._buf) > self.capacity:
            self._trim(len(self._buf) - self.capacity)

    def snapshot(self) -> Chunk:
        """Everything held, starting at a safe boundary."""
        content = self._content()  # first: a lost spill moves the start
        return Chunk(self._start, bytes(content))

    def read_since(self, offset: int, limit: int | None = None) -> Chunk | Gap:
        """Data from ``offset`` (at most ``limit`` bytes), or a :class:`Gap` if trimmed."""
        if offset > self.end:
            raise OffsetInFuture(f"offset {offset} is beyond the end {self.end}")
        if offset < self._start:
            return Gap(offset, self._start)
        if offset == self.end:
            return Chunk(offset, b"")  # caught up: nothing to unpack (or load, when cold)
        content = self._content()  # (a lost spill moves the start: a gap after all)
        if offset < self._start:
            return Gap(offset, self._start)
        lo = offset - self._start
        hi = len(content) if limit is None else min(len(content), lo + limit)
        return Chunk(offset, bytes(content[lo:hi]))

    def _trim(self, minimum: int) -> None:
        cut = self._safe_cut(minimum)
        del self._buf[:cut]
        self._start += cut

    def _safe_cut(self, minimum: int) -> int:
        buf = self._buf
        minimum = min(minimum, len(buf))
        newline = buf.find(b"\n", minimum, minimum + _NEWLINE_SEARCH)
        if newline != -1:
            return newline + 1
        cut = end_of_escape_containing(buf, minimum)
        while cut < len(buf) and 0x80 <= buf[cut] <= 0xBF:
            cut += 1  # UTF-8 continuation byte: move to the next character start
        return cut
