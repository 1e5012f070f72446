"""The client-side terminal model of one embedded pane: pyghostty in, Rich text out.

The UI feeds a pane's model exactly what ``orca term attach`` writes to a real terminal
(ptyd's attach snapshot, then the live stream), so the embedded view and a raw attach
show the same screen. Rendering asks libghostty-vt's formatter for the active area as
a VT stream (SGR only: colours and attributes) and lets Rich parse it into styled
lines, a native pass per frame (about a millisecond for 200x60), instead of reading
cells one by one through cffi.

Terminal replies the model produces (it answers DSR/DA like a terminal would) are
dropped: ptyd answers queries from its own model, and a second answer would reach the
program as typed keys (``orca.client.terminal``'s rule). Keys are encoded here too
(:func:`encode_key`), honouring the modes the program set (application cursor keys).
"""

from __future__ import annotations

import re

from pyghostty import Terminal, lib  # type: ignore[import-untyped]
from pyghostty.core import init_sized, read_buf  # type: ignore[import-untyped]
from rich.style import Style
from rich.text import Text

# Lines of history the client model keeps for scrollback browsing (ptyd holds more:
# ``term.read`` serves the rest).
CLIENT_SCROLLBACK_LINES = 1000
MODE_CURSOR_KEYS = 1  # DECCKM: application cursor keys
MODE_BRACKETED_PASTE = 2004
MODE_CURSOR_VISIBLE = 25
# OSC strings the formatter emits besides the cells (the palette): not text.
_OSC = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_CURSOR_STYLE = Style(reverse=True)


class PaneScreen:
    """One pane's emulated screen; ``version`` changes whenever the screen may have."""

    def __init__(self, cols: int = 80, rows: int = 24) -> None:
        self._term = Terminal(cols, rows, scrollback=CLIENT_SCROLLBACK_LINES)
        self._term.on_reply(lambda _data: None)  # ptyd answers queries, never us
        self.version = 0
        self.bells = 0
        self.closed = False
        self._cache: tuple[int, list[Text]] | None = None

    def close(self) -> None:
        self.closed = True
        self._term.close()

    def feed(self, data: bytes) -> None:
        if not data or self.closed:
            return
        self.bells += data.count(b"\x07")
        self._term.feed(data)
        self.version += 1

    def repaint(self, data: bytes) -> None:
        """A fresh screen (attach snapshot): reset, then feed."""
        if self.closed:
            return
        self._term.feed(b"\x1bc")
        self.feed(data)

    def resize(self, cols: int, rows: int) -> None:
        if not self.closed and (cols, rows) != self.size:
            self._term.resize(max(1, cols), max(1, rows))
            self.version += 1

    @property
    def size(self) -> tuple[int, int]:
        cols, rows = self._term.size
        return int(cols), int(rows)

    @property
    def cursor(self) -> tuple[int, int]:
        x, y = self._term.cursor
        return int(x), int(y)

    def mode(self, number: int) -> bool:
        return bool(self._term.mode(number))

    def text(self) -> str:
        """The visible screen as plain text (rows, trailing blanks trimmed)."""
        if self.closed:
            return ""
        return str(self._term.text())

    def _vt(self) -> str:
        cols, rows = self.size
        sel = init_sized("GhosttySelection")
        sel.start = self._term.ref(0, 0)[0]
        sel.end = self._term.ref(cols - 1, rows - 1)[0]
        opts = init_sized("GhosttyTerminalSelectionFormatOptions")
        opts.emit = lib.GHOSTTY_FORMATTER_FORMAT_VT
        opts.unwrap, opts.trim, opts.selection = False, False, sel
        term = self._term._t[0]
        out: str = read_buf(
            lambda b, n, o: lib.ghostty_terminal_selection_format_buf(term, opts[0], b, n, o)
        )
        return out

    def lines(self, *, show_cursor: bool = True) -> list[Text]:
        """The screen as ``rows`` Rich lines of ``cols`` cells, the cursor drawn reversed."""
        if self._cache is not None and self._cache[0] == self.version and not show_cursor:
            return self._cache[1]
        cols, rows = self.size
        parsed = Text.from_ansi(_OSC.sub("", self._vt()).replace("\r\n", "\n"), no_wrap=True)
        lines = parsed.split("\n", allow_blank=True)[:rows]
        lines += [Text() for _ in range(rows - len(lines))]
        for line in lines:
            line.truncate(cols, pad=True)
        if show_cursor and self.mode(MODE_CURSOR_VISIBLE):
            x, y = self.cursor
            if 0 <= y < rows and 0 <= x < cols:
                lines[y] = lines[y].copy()
                lines[y].stylize(_CURSOR_STYLE, x, x + 1)
        else:
            self._cache = (self.version, lines)
        return lines


# Textual key names → the bytes a terminal sends (xterm). Printable keys travel as
# their character; these are the rest.
_KEYS: dict[str, bytes] = {
    "enter": b"\r",
    "tab": b"\t",
    "shift+tab": b"\x1b[Z",
    "backspace": b"\x7f",
    "escape": b"\x1b",
    "delete": b"\x1b[3~",
    "insert": b"\x1b[2~",
    "home": b"\x1b[H",
    "end": b"\x1b[F",
    "pageup": b"\x1b[5~",
    "pagedown": b"\x1b[6~",
    "f1": b"\x1bOP",
    "f2": b"\x1bOQ",
    "f3": b"\x1bOR",
    "f4": b"\x1bOS",
}
_ARROWS = {"up": b"A", "down": b"B", "right": b"C", "left": b"D"}


def encode_key(key: str, character: str | None, *, app_cursor: bool) -> bytes | None:
    """The bytes for one Textual key event, or None when it carries nothing to send."""
    if key in _ARROWS:
        return (b"\x1bO" if app_cursor else b"\x1b[") + _ARROWS[key]
    if key in _KEYS:
        return _KEYS[key]
    if key.startswith("ctrl+") and len(key) == 6 and key[5].isalpha():
        return bytes([ord(key[5].lower()) - 96])
    if character:
        return character.encode("utf-8", "surrogateescape")
    return None


def bracketed(text: str, enabled: bool) -> bytes:
    """A paste as the program asked for it (bracketed paste mode 2004)."""
    data = text.replace("\r\n", "\r").replace("\n", "\r").encode("utf-8", "replace")
    return b"\x1b[200~" + data + b"\x1b[201~" if enabled else data


__all__ = ["PaneScreen", "bracketed", "encode_key"]
