"""The VT rules client and server share: where an escape sequence ends, which sequences
are terminal queries (:class:`QueryFilter`), and what a detach writes to the user's
terminal. Pure (bytes in, bytes or indices out): ptyd's relay, session, terminal model
and scrollback, and the attaching clients (``orca.client.terminal``, ``orca term
attach``, the UI) use the same rules.

Where an ECMA-48 escape sequence ends (:func:`sequence_end`, the one answer everyone
uses). Only 7-bit sequences are recognised (terminals in UTF-8 mode do not use 8-bit C1
controls, whose bytes are UTF-8 continuation bytes there):

* CSI ``ESC [`` parameters (0x30-0x3F), intermediates (0x20-0x2F), a final (0x40-0x7E);
* strings - OSC ``ESC ]``, DCS ``ESC P``, SOS ``ESC X``, PM ``ESC ^``, APC ``ESC _`` -
  end at ST ``ESC \\``; OSC also at BEL;
* anything else: ``ESC``, intermediates (0x20-0x2F), one final byte (``ESC ( B``
  designates a character set: three bytes, the ``B`` is not text).

Strings cannot contain ESC except as their terminator, so the last ESC before a
position is the start of the sequence that may contain it (or the start of an ST,
which parses as a complete two-byte sequence).
"""

from __future__ import annotations

import re

ESC = 0x1B
BEL = 0x07
_STRING_INTRODUCERS = frozenset(b"]PX^_")
# Look back this far for the ESC starting a sequence around a cut point. OSC 52
# (clipboard) and hyperlinks can be long; beyond this the cut is taken as is.
LOOKBACK = 64 * 1024


def sequence_end(buf: bytes | bytearray, start: int) -> int | None:
    """Index just after the escape sequence that begins with ESC at ``start``; None if
    ``buf`` ends inside it (its end is in a later chunk)."""
    n = len(buf)
    i = start + 1
    if i >= n:
        return None
    kind = buf[i]
    if kind == 0x5B:  # '[' CSI
        i += 1
        while i < n and 0x20 <= buf[i] <= 0x3F:
            i += 1
        return i + 1 if i < n else None
    if kind in _STRING_INTRODUCERS:
        st = buf.find(b"\x1b\\", i + 1)
        if kind == 0x5D:  # ']' OSC may also end at BEL
            bel = buf.find(b"\x07", i + 1, st if st != -1 else n)
            if bel != -1:
                return bel + 1
        return st + 2 if st != -1 else None
    while i < n and 0x20 <= buf[i] <= 0x2F:
        i += 1
    return i + 1 if i < n else None


def end_of_escape_containing(buf: bytes | bytearray, pos: int) -> int:
    """The smallest index >= ``pos`` that is not inside an escape sequence (``len(buf)``
    when the sequence around ``pos`` has not ended within ``buf``)."""
    esc = buf.rfind(b"\x1b", max(0, pos - LOOKBACK), pos)
    if esc == -1:
        return pos
    end = sequence_end(buf, esc)
    return max(pos, len(buf) if end is None else end)


# What a detach writes to the user's terminal (Ctrl-], a crash, ``orca down``): leave
# the alternate screen, soft reset (attributes, keypad, cursor keys, margins), mouse
# reporting, focus events and bracketed paste off, normal keypad, cursor shown.
RESET_TERMINAL_MODES = (
    b"\x1b[!p"
    + b"".join(b"\x1b[?%dl" % m for m in (9, 1000, 1002, 1003, 1005, 1006, 1015, 1004, 2004, 66, 1))
    + b"\x1b>\x1b[0m\x1b[?25h"
)
# The outer alternate screen ``orca term attach`` draws in (as tmux does with smcup):
# leaving it on detach shows what the user's terminal showed before the attach.
ENTER_ALTERNATE_SCREEN = b"\x1b[?1049h"
LEAVE_ALTERNATE_SCREEN = b"\x1b[?1049l"
RESTORE_USER_TERMINAL = LEAVE_ALTERNATE_SCREEN + RESET_TERMINAL_MODES

# Terminal queries: sequences a terminal answers by typing into its input.
#   CSI [?]Ps n (DSR)   CSI [>=]Ps c (DA1/2/3)   CSI [?]Ps $ p (DECRQM)   CSI > q (XTVERSION)
#   CSI ? u (kitty keyboard)   CSI 14/16/18/19/20/21 t (window reports)
#   OSC 4/10-19/52/104... with a "?" argument (colour and clipboard queries)
#   DCS $ q (DECRQSS), DCS + q (XTGETTCAP)
_QUERY = re.compile(
    rb"\x1b\[(?:[?]?[0-9;]*n|[>=]?[0-9;]*c|[?]?[0-9;]*\$p|>[0-9;]*q|\?u|(?:14|16|18|19|20|21)(?:;[0-9]*)*t)"
    rb"|\x1b\][0-9]+;(?:[^\x07\x1b]*;)?\?(?:\x07|\x1b\\)"
    rb"|\x1bP(?:\$q|\+q)[^\x1b]*\x1b\\"
)
# A sequence cut at a chunk's end is held back until its end arrives, up to this size.
_MAX_HELD = 4096


class QueryFilter:
    """Removes terminal queries from output on its way to the user's terminal.

    Chunking-invariant: a query split across chunks is held back until complete. Only
    what a terminal shows is filtered; offsets are the stream's, counted before it.
    """

    def __init__(self) -> None:
        self._held = b""

    def feed(self, data: bytes) -> bytes:
        if not self._held and b"\x1b" not in data:
            return data  # no sequence, none held: nothing to strip (a keystroke's echo)
        buf = self._held + data
        self._held = b""
        cut = _incomplete_tail(buf)
        if cut is not None and len(buf) - cut <= _MAX_HELD:
            buf, self._held = buf[:cut], buf[cut:]
        return _QUERY.sub(b"", buf)

    @property
    def idle(self) -> bool:
        """Nothing held back: plain text passes unchanged."""
        return not self._held

    def flush(self) -> bytes:
        """What is held back (the start of a sequence), unfiltered; the filter is empty after."""
        held, self._held = self._held, b""
        return held


def ends_inside_sequence(buf: bytes) -> bool:
    """Whether ``buf`` ends inside an escape sequence (its end is in a later chunk).

    Only the last ESC is looked at (cheap on the output path): strings cannot contain
    an ESC but their terminator, so the last one starts the sequence that may be open.
    """
    esc = buf.rfind(b"\x1b")
    return esc != -1 and sequence_end(buf, esc) is None


def _incomplete_tail(buf: bytes) -> int | None:
    """Index of an escape sequence that has not ended by the end of ``buf``, if any."""
    i = buf.find(b"\x1b", max(0, len(buf) - _MAX_HELD))
    while i != -1:
        end = sequence_end(buf, i)
        if end is None:
            return i
        i = buf.find(b"\x1b", end)
    return None
