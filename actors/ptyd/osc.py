"""The OSC 9999 scanner: agent-status payloads embedded in terminal output.

An agent (or its hook script) reports status by printing ``ESC ] 9999 ;`` followed by a
JSON document and a terminator, either BEL (``0x07``) or ST (``ESC \\``). The terminal
must never see these bytes, and the status must reach ``hooks`` (seed 03: the OSC
wire format is unchanged; the parse happens once, where the PTY is read).

The scanner is a pure state machine fed with arbitrary chunks of the PTY stream; it
returns the stream with every recognised sequence removed and the payloads found.

Invariants (tested with hypothesis):

* Chunking does not matter. Any split of the same byte stream - including a split
  inside the 7-byte introducer or between ``ESC`` and ``\\`` - yields the same payloads
  and the same stripped output once ``finish()`` is called.
* Memory is bounded: in the normal state at most ``len(INTRODUCER) - 1`` bytes are held
  back (a possible start of an introducer); inside a sequence at most
  ``MAX_PAYLOAD_BYTES`` of payload are held.
* Each input byte is examined a small constant number of times: the scanner jumps with
  ``bytes.find`` to the next ``ESC`` (normal state) or to the next ``BEL``/``ESC``
  (inside a sequence), and remembers the position of the next ``BEL`` and ``ESC`` in the
  current chunk, so several short sequences in one large chunk do not rescan it.

Decisions about malformed input:

* A sequence whose payload grows beyond ``MAX_PAYLOAD_BYTES`` without a terminator is
  abandoned: its introducer and its first ``MAX_PAYLOAD_BYTES`` payload bytes are dropped
  (nothing of them reaches the terminal), and scanning resumes in the normal state at the
  next byte, which passes through. Dropping everything up to an eventual terminator
  would let one stray introducer hide an unbounded amount of the agent's output.
* An ``ESC`` inside a payload that is not followed by ``\\`` aborts the sequence (as in
  terminal emulators: ESC always starts a new escape); the partial payload is dropped
  and the ``ESC`` is scanned again in the normal state.
* At end of stream (``finish()``), held-back introducer prefix bytes are released to the
  output and an unterminated sequence is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

ESC = 0x1B
BEL = 0x07
BACKSLASH = 0x5C
INTRODUCER = b"\x1b]9999;"
# Agent status documents are a few hundred bytes; 64 KiB bounds a runaway sequence
# (issue 6) while leaving room for large tool payloads.
MAX_PAYLOAD_BYTES = 64 * 1024


class _State(Enum):
    TEXT = 0  # passing output through
    PAYLOAD = 1  # inside ESC ] 9999 ; collecting the JSON


@dataclass(frozen=True)
class ScanResult:
    """What one ``feed`` produced: output for the terminal and completed payloads."""

    output: bytes
    payloads: list[bytes] = field(default_factory=list)


class _NextIndex:
    """Position of the next occurrence of one byte in a buffer, found at most once per byte.

    Invariant: ``_found`` is -1 (none left) or the smallest index >= every position
    asked for so far, so successive queries with growing ``pos`` scan each byte once.
    """

    def __init__(self, data: bytes, needle: int) -> None:
        self._data = data
        self._needle = needle
        self._found = -2  # not searched yet
        self._searched_from = 0

    def at_or_after(self, pos: int) -> int:
        if self._found == -1 and pos >= self._searched_from:
            return -1
        if self._found >= pos:
            return self._found
        self._searched_from = pos
        self._found = self._data.find(self._needle, pos)
        return self._found


class OscScanner:
    """Stateful OSC 9999 scanner; feed it PTY output chunks in order."""

    def __init__(self, max_payload: int = MAX_PAYLOAD_BYTES) -> None:
        self._max_payload = max_payload
        self._state = _State.TEXT
        # TEXT: a proper prefix of INTRODUCER held back; PAYLOAD: a trailing ESC that
        # may start the ST terminator. Either way at most len(INTRODUCER) - 1 bytes.
        self._held = b""
        self._payload = bytearray()
        self.abandoned = 0  # sequences dropped for length or a stray ESC

    @property
    def at_boundary(self) -> bool:
        """True when no sequence or introducer prefix is pending: a replay may start here."""
        return self._state is _State.TEXT and not self._held

    def feed(self, chunk: bytes) -> ScanResult:
        """Consume ``chunk``; return the stripped output and any completed payloads."""
        if self._state is _State.TEXT and not self._held and chunk.find(ESC) == -1:
            return ScanResult(chunk)  # plain text (a keystroke's echo): nothing to strip
        if self._held:
            data = self._held + chunk
            self._held = b""
        else:
            data = chunk
        out: list[bytes] = []
        payloads: list[bytes] = []
        esc = _NextIndex(data, ESC)
        bel = _NextIndex(data, BEL)
        pos = 0
        n = len(data)
        while pos < n:
            if self._state is _State.TEXT:
                pos = self._scan_text(data, pos, esc, out)
            else:
                pos = self._scan_payload(data, pos, esc, bel, payloads)
        return ScanResult(b"".join(out), payloads)

    def finish(self) -> bytes:
        """End of stream: release a held introducer prefix, drop an open sequence."""
        held, self._held = self._held, b""
        if self._state is _State.TEXT:
            return held
        self._abandon()
        return b""

    def _scan_text(self, data: bytes, pos: int, esc: _NextIndex, out: list[bytes]) -> int:
        n = len(data)
        i = esc.at_or_after(pos)
        while i != -1:
            tail = data[i : i + len(INTRODUCER)]
            if tail == INTRODUCER:
                out.append(data[pos:i])
                self._state = _State.PAYLOAD
                return i + len(INTRODUCER)
            if len(tail) < len(INTRODUCER) and INTRODUCER.startswith(tail):
                # Possibly an introducer split across chunks: hold it back.
                out.append(data[pos:i])
                self._held = bytes(tail)
                return n
            i = esc.at_or_after(i + 1)
        out.append(data[pos:])
        return n

    def _scan_payload(
        self,
        data: bytes,
        pos: int,
        esc: _NextIndex,
        bel: _NextIndex,
        payloads: list[bytes],
    ) -> int:
        n = len(data)
        i_esc = esc.at_or_after(pos)
        i_bel = bel.at_or_after(pos)
        candidates = [i for i in (i_esc, i_bel) if i != -1]
        room = self._max_payload - len(self._payload)
        if not candidates:
            if n - pos > room:
                return self._overflow(pos + room)
            self._payload += data[pos:]
            return n
        j = min(candidates)
        if j - pos > room:
            return self._overflow(pos + room)
        self._payload += data[pos:j]
        if j == i_bel:
            payloads.append(bytes(self._payload))
            self._reset()
            return j + 1
        if j + 1 == n:
            # ESC is the last byte: whether it starts ST is decided by the next chunk,
            # which will be scanned with this ESC prepended.
            self._held = b"\x1b"
            return n
        if data[j + 1] == BACKSLASH:
            payloads.append(bytes(self._payload))
            self._reset()
            return j + 2
        # ESC followed by anything else starts a new escape: abort this sequence and
        # scan the ESC again as ordinary output.
        self._abandon()
        return j

    def _overflow(self, resume_at: int) -> int:
        self._abandon()
        return resume_at

    def _abandon(self) -> None:
        self.abandoned += 1
        self._reset()

    def _reset(self) -> None:
        self._state = _State.TEXT
        self._payload = bytearray()
