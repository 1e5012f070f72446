"""Where an ECMA-48 escape sequence ends: the one question a safe trim point needs.

Only 7-bit sequences are recognised (terminals in UTF-8 mode do not use 8-bit C1
controls, whose bytes are UTF-8 continuation bytes there):

* CSI ``ESC [`` parameters (0x30-0x3F), intermediates (0x20-0x2F), a final (0x40-0x7E);
* strings - OSC ``ESC ]``, DCS ``ESC P``, SOS ``ESC X``, PM ``ESC ^``, APC ``ESC _`` -
  end at ST ``ESC \\``; OSC also at BEL;
* anything else: ``ESC``, intermediates (0x20-0x2F), one final byte.

Strings cannot contain ESC except as their terminator, so the last ESC before a
position is the start of the sequence that may contain it (or the start of an ST,
which parses as a complete two-byte sequence).
"""

from __future__ import annotations

ESC = 0x1B
BEL = 0x07
_STRING_INTRODUCERS = frozenset(b"]PX^_")
# Look back this far for the ESC starting a sequence around a cut point. OSC 52
# (clipboard) and hyperlinks can be long; beyond this the cut is taken as is.
LOOKBACK = 64 * 1024


def sequence_end(buf: bytes | bytearray, start: int) -> int:
    """Index just after the escape sequence that begins with ESC at ``start``.

    Returns ``len(buf)`` if the sequence is not complete within ``buf``.
    """
    n = len(buf)
    i = start + 1
    if i >= n:
        return n
    kind = buf[i]
    if kind == 0x5B:  # '[' CSI
        i += 1
        while i < n and 0x20 <= buf[i] <= 0x3F:
            i += 1
        return min(i + 1, n) if i < n else n
    if kind in _STRING_INTRODUCERS:
        esc = buf.find(b"\x1b\\", i + 1)
        ends = [e + 2 for e in (esc,) if e != -1]
        if kind == 0x5D:  # ']' OSC may also end at BEL
            bel = buf.find(b"\x07", i + 1, esc if esc != -1 else n)
            if bel != -1:
                ends.append(bel + 1)
        return min(ends) if ends else n
    while i < n and 0x20 <= buf[i] <= 0x2F:
        i += 1
    return min(i + 1, n)


def end_of_escape_containing(buf: bytes | bytearray, pos: int) -> int:
    """The smallest index >= ``pos`` that is not inside an escape sequence."""
    esc = buf.rfind(b"\x1b", max(0, pos - LOOKBACK), pos)
    if esc == -1:
        return pos
    return max(pos, sequence_end(buf, esc))
