"""The client-side terminal model of one embedded pane: pyghostty in, Rich text out.

The UI feeds a pane's model exactly what ``orca term attach`` writes to a real terminal
(ptyd's attach snapshot, then the live stream), so the embedded view and a raw attach
show the same screen. Rendering asks libghostty-vt's formatter for the shown area as
a VT stream (text and SGR only: no palette, modes or other state), one native pass
per frame (~10 us for 80x24), instead of reading cells one by one through cffi. The
formatter resets the pen at the end of every styled run and starts each row afresh,
so a row's VT text stands alone: the view caches a row's strip by its text
(:meth:`PaneScreen.rows`) and reads only new rows (a scrolling pane's rows move up
unchanged), straight into segments (:func:`row_segments`, each pen's style parsed by
Rich once; :func:`row_text`, Rich's own parse, for the rest).

Terminal replies the model produces (it answers DSR, DA, DECRQM, OSC 10/11... like a
terminal would) go to ``on_reply``: the pane sends them to the program. They only
arise from the chunks ptyd's attach stream marks ``answer`` (this pane typed last, so
it is the terminal that answers, docs/protocols.md §4); every other chunk reaches the
model with its queries stripped (``QueryFilter``), so a query is answered once. OSC
10/11 are answered with the colours the pane is drawn in (:meth:`PaneScreen.set_colors`).
Keys are encoded here too (:func:`encode_key`), honouring the modes the program set
(application cursor keys).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pyghostty import Terminal, ffi, lib  # type: ignore[import-untyped]
from pyghostty._ffi import union_fn  # type: ignore[import-untyped]
from pyghostty.core import check, init_sized  # type: ignore[import-untyped]
from rich.cells import cell_len, set_cell_size, split_graphemes
from rich.segment import Segment
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
# What OSC 10/11 report until the pane knows its colours (ptyd's model's defaults).
DEFAULT_FG = (229, 229, 229)
DEFAULT_BG = (0, 0, 0)


class PaneScreen:
    """One pane's emulated screen; ``version`` changes whenever the screen may have."""

    def __init__(
        self,
        cols: int = 80,
        rows: int = 24,
        on_reply: Callable[[bytes], None] | None = None,
    ) -> None:
        self._term = Terminal(cols, rows, scrollback=CLIENT_SCROLLBACK_LINES)
        self._on_reply = on_reply
        self._term.on_reply(self._reply)
        self.replies = 0
        self.scroll = 0  # lines scrolled back into the history (0: the live screen)
        self.set_colors(DEFAULT_FG, DEFAULT_BG)
        self.version = 0
        self.bells = 0
        self.closed = False
        self._cache: tuple[int, list[Text]] | None = None
        self._rows: tuple[int, list[str]] | None = None
        # The formatter's output buffer, kept (one native pass per format, not two:
        # a size query then a fill), grown when a screen needs more; and the structs
        # each read fills in, allocated once (a read is on every echo's path).
        self._buf = ffi.new("uint8_t[]", 1 << 16)
        self._written = ffi.new("size_t*")
        self._formatter = ffi.new("GhosttyFormatter*")
        self._selection_buf = init_sized("GhosttySelection")
        self._start = ffi.addressof(self._selection_buf[0], "start")
        self._end = ffi.addressof(self._selection_buf[0], "end")
        self._size: tuple[int, int, int] = (-1, 0, 0)  # (version, cols, rows)
        self._point = ffi.new("GhosttyPointS*")
        self._u16 = ffi.new("uint16_t*")
        self._mode = ffi.new("GhosttyTerminalModeConfig*")
        self._options = init_sized("GhosttyFormatterTerminalOptions")
        self._options.emit = lib.GHOSTTY_FORMATTER_FORMAT_VT
        self._options.unwrap = self._options.trim = False
        # The cells' text and SGR only: no palette (256 OSC 4 strings per read), modes,
        # cursor, hyperlinks or other terminal state.
        extra = self._options.extra
        extra.palette = extra.modes = extra.scrolling_region = extra.tabstops = False
        extra.pwd = extra.keyboard = False
        extra.screen.cursor = extra.screen.hyperlink = extra.screen.protection = False
        extra.screen.kitty_keyboard = extra.screen.charsets = False
        extra.screen.style = True
        self._options.selection = self._selection_buf

    def _reply(self, data: bytes) -> None:
        self.replies += 1
        if self._on_reply is not None and not self.closed:
            self._on_reply(bytes(data))

    def set_colors(self, fg: tuple[int, int, int], bg: tuple[int, int, int]) -> None:
        """The default colours the model reports to OSC 10/11 queries."""
        self.colors = (fg, bg)
        term = self._term._t[0]
        for opt, (r, g, b) in (
            (lib.GHOSTTY_TERMINAL_OPT_COLOR_FOREGROUND, fg),
            (lib.GHOSTTY_TERMINAL_OPT_COLOR_BACKGROUND, bg),
        ):
            lib.ghostty_terminal_set(
                term, opt, ffi.new("GhosttyColorRgb*", {"r": r, "g": g, "b": b})
            )

    def close(self) -> None:
        self.closed = True
        self._term.close()

    def feed(self, data: bytes) -> None:
        if not data or self.closed:
            return
        self.bells += data.count(b"\x07")
        if self.scroll:
            # Scrolled back: keep showing the same lines while new ones arrive below.
            before = self.history_rows()
            self._term.feed(data)
            self.scroll = min(self.scroll + self.history_rows() - before, self.history_rows())
        else:
            self._term.feed(data)
        self.version += 1

    def repaint(self, data: bytes) -> None:
        """A fresh screen (attach snapshot): reset, then feed."""
        if self.closed:
            return
        self.scroll = 0
        self._term.feed(b"\x1bc")
        self.feed(data)

    def resize(self, cols: int, rows: int) -> None:
        if not self.closed and (cols, rows) != self.size:
            self._term.resize(max(1, cols), max(1, rows))
            self.version += 1

    @property
    def size(self) -> tuple[int, int]:
        """(cols, rows), as the model has them (``resize``, or a program's DECCOLM:
        asked again whenever ``version`` moved)."""
        version, cols, rows = self._size
        if version != self.version:
            cols = self._get16(lib.GHOSTTY_TERMINAL_DATA_COLS)
            rows = self._get16(lib.GHOSTTY_TERMINAL_DATA_ROWS)
            self._size = (self.version, cols, rows)
        return cols, rows

    def _get16(self, key: int) -> int:
        check(lib.ghostty_terminal_get(self._term._t[0], key, self._u16), "terminal_get")
        return int(self._u16[0])

    @property
    def cursor(self) -> tuple[int, int]:
        return (
            self._get16(lib.GHOSTTY_TERMINAL_DATA_CURSOR_X),
            self._get16(lib.GHOSTTY_TERMINAL_DATA_CURSOR_Y),
        )

    def mode(self, number: int) -> bool:
        if self.closed:
            return False
        config = self._mode
        config.mode = number & 0x7FFF  # a DEC private mode (pyghostty's packing)
        check(
            lib.ghostty_terminal_get(self._term._t[0], lib.GHOSTTY_TERMINAL_DATA_MODE, config),
            "terminal_get mode",
        )
        return bool(config.value)

    def text(self) -> str:
        """The visible screen as plain text (rows, trailing blanks trimmed)."""
        if self.closed:
            return ""
        return str(self._term.text())

    # -- scrollback browsing (the primary screen's history in this model) ----------------
    def history_rows(self) -> int:
        """Lines above the screen that can be scrolled back to (none on the alternate
        screen: a full-screen program's history is its own)."""
        if self.closed or self.alternate_screen:
            return 0
        return int(self._term.get("scrollback_rows", "size_t"))

    @property
    def alternate_screen(self) -> bool:
        return not self.closed and int(self._term.get("active_screen", "int")) != 0

    def scroll_by(self, lines: int) -> None:
        """Scroll the view ``lines`` back (negative: towards the live screen)."""
        target = max(0, min(self.history_rows(), self.scroll + lines))
        if target != self.scroll:
            self.scroll = target
            self.version += 1

    def scroll_to_bottom(self) -> None:
        self.scroll_by(-self.scroll)

    def _select_shown(self) -> object:
        """The kept selection set to what the view shows (the live screen, or the
        history scrolled back to). Grid refs are good only until the screen changes,
        so it is set afresh for each read."""
        cols, rows = self.size
        top = self.history_rows() - self.scroll if self.scroll else 0
        tag = lib.GHOSTTY_POINT_TAG_SCREEN if self.scroll else lib.GHOSTTY_POINT_TAG_ACTIVE
        call = union_fn(
            "ghostty_terminal_grid_ref",
            "GhosttyResult(*)(GhosttyTerminal, GhosttyPointS, GhosttyGridRef*)",
        )
        point = self._point
        point.tag = tag
        for out, x, y in ((self._start, 0, top), (self._end, cols - 1, top + rows - 1)):
            point.value.x, point.value.y = x, y
            check(call(self._term._t[0], point[0], out), "grid_ref")
        return self._selection_buf

    def shown_text(self) -> str:
        """What the view shows as plain text: the live screen, or the history lines
        scrolled back to."""
        if self.closed:
            return ""
        return str(self._term._format_sel(self._select_shown()))

    def _vt(self) -> str:
        """The shown rows as VT text (SGR only), one formatter pass into the kept
        buffer; the formatter holds the selection, so it is made afresh for each read
        too (into a kept struct)."""
        self._select_shown()
        formatter = self._formatter
        check(
            lib.ghostty_formatter_terminal_new(
                ffi.NULL, formatter, self._term._t[0], self._options[0]
            ),
            "formatter",
        )
        try:
            written = self._written
            result = lib.ghostty_formatter_format_buf(
                formatter[0], self._buf, len(self._buf), written
            )
            if result == lib.GHOSTTY_OUT_OF_SPACE:
                self._buf = ffi.new("uint8_t[]", max(int(written[0]), 2 * len(self._buf)))
                result = lib.ghostty_formatter_format_buf(
                    formatter[0], self._buf, len(self._buf), written
                )
            check(result, "format")
            return bytes(ffi.buffer(self._buf, int(written[0]))).decode("utf-8", "replace")
        finally:
            lib.ghostty_formatter_free(formatter[0])

    def rows(self) -> list[str]:
        """What the view shows, one VT string (SGR only) per row, ``rows`` of them; each
        row's string stands alone (the pen is reset at its start and end)."""
        if self._rows is not None and self._rows[0] == self.version:
            return self._rows[1]
        _cols, rows = self.size
        vt = self._vt()
        if "\x1b]" in vt:  # none are asked for; should a build emit one, it is no text
            vt = _OSC.sub("", vt)
        found = vt.split("\r\n")[:rows]
        found += [""] * (rows - len(found))
        self._rows = (self.version, found)
        return found

    def shown_cursor(self) -> tuple[int, int] | None:
        """The cell the cursor is drawn on (live screen, cursor visible), or None."""
        if self.scroll or not self.mode(MODE_CURSOR_VISIBLE):
            return None
        cols, rows = self.size
        x, y = self.cursor
        return (x, y) if 0 <= y < rows and 0 <= x < cols else None

    def lines(self, *, show_cursor: bool = True) -> list[Text]:
        """The screen as ``rows`` Rich lines of ``cols`` cells, the cursor drawn reversed."""
        if self._cache is not None and self._cache[0] == self.version and not show_cursor:
            return self._cache[1]
        cols, _rows = self.size
        lines = [row_text(row, cols) for row in self.rows()]
        cursor = self.shown_cursor() if show_cursor else None
        if cursor is not None:
            x, y = cursor
            lines[y] = row_text(self.rows()[y], cols, cursor=x)
        else:
            self._cache = (self.version, lines)
        return lines


_SGR = re.compile(r"\x1b\[([0-9;:]*)m")
# Rich's style for a pen (the SGR parameters since the last reset), parsed once per pen.
_PEN_STYLES: dict[str, Style] = {}
_PEN_STYLES_MAX = 4096
_NULL_STYLE = Style.null()


def _pen_style(pen: str) -> Style:
    style = _PEN_STYLES.get(pen)
    if style is None:
        spans = Text.from_ansi(f"\x1b[{pen}m.", no_wrap=True, end="").spans
        found = spans[0].style if spans else _NULL_STYLE
        style = found if isinstance(found, Style) else Style.parse(found)
        if len(_PEN_STYLES) < _PEN_STYLES_MAX:
            _PEN_STYLES[pen] = style
    return style


def row_segments(vt: str, cols: int, cursor: int | None = None) -> list[Segment] | None:
    """One row's VT text (:meth:`PaneScreen.rows`) as Rich segments of exactly ``cols``
    cells, the cell ``cursor`` drawn reversed: what :func:`row_text` renders to, read
    directly (the formatter emits text and SGR only, and each pen's style is parsed by
    Rich once), as a row is on every echo's path. None for a row holding any other
    escape: :func:`row_text` renders it."""
    segments: list[Segment] = []
    pen = ""
    used = 0
    for index, part in enumerate(_SGR.split(vt)):
        if index & 1:  # an SGR's parameters: the pen since the last reset
            if part in ("", "0"):
                pen = ""
            elif part.startswith("0;"):
                pen = part[2:]
            else:
                pen = f"{pen};{part}" if pen else part
            continue
        if not part:
            continue
        if "\x1b" in part:
            return None
        width = cell_len(part)
        if used + width > cols:
            part = set_cell_size(part, cols - used)
            width = cell_len(part)
        if part:  # (a run of zero width, a lone combining mark, is kept as Rich keeps it)
            segments.append(Segment(part, _pen_style(pen) if pen else _NULL_STYLE))
            used += width
        if used >= cols:
            break
    if used < cols:
        segments.append(Segment(" " * (cols - used), _NULL_STYLE))
    if cursor is not None and 0 <= cursor < cols:
        _draw_cursor(segments, cursor)
    return segments


def _draw_cursor(segments: list[Segment], cell: int) -> None:
    """Reverse the character on ``cell`` (a wide one whole, a cluster of code points
    whole: cut on grapheme boundaries only) in ``segments``."""
    start = 0
    for index, (text, style, _control) in enumerate(segments):
        spans, width = split_graphemes(text)
        if start + width <= cell:
            start += width
            continue
        cut = (0, len(text))
        for span_first, span_last, span_width in spans:
            if start + span_width > cell:
                cut = (span_first, span_last)
                break
            start += span_width
        first, last = cut
        style = style or _NULL_STYLE
        pieces = [
            Segment(text[:first], style),
            Segment(text[first:last], style + _CURSOR_STYLE),
            Segment(text[last:], style),
        ]
        segments[index : index + 1] = [piece for piece in pieces if piece.text]
        return


def row_text(vt: str, cols: int, cursor: int | None = None) -> Text:
    """One row's VT text (:meth:`PaneScreen.rows`) as ``cols`` cells of Rich text, with
    the cursor drawn reversed at column ``cursor``."""
    line = Text.from_ansi(vt, no_wrap=True, end="")
    line.truncate(cols, pad=True)
    if cursor is not None:
        line.stylize(_CURSOR_STYLE, cursor, cursor + 1)
    return line


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


# Mouse reporting (xterm's ctlseqs, "Mouse Tracking"; the modes a program sets):
#   9 X10 (presses), 1000 presses and releases, 1002 + motion while a button is held,
#   1003 + any motion; encodings: 1006 SGR ``CSI < b;x;y M|m``, 1015 urxvt
#   ``CSI b+32;x;y M``, else the default ``CSI M`` + three bytes (coordinates <= 223).
#   https://invisible-island.net/xterm/ctlseqs/ctlseqs.html#h2-Mouse-Tracking
MOUSE_X10, MOUSE_NORMAL, MOUSE_BUTTON_MOTION, MOUSE_ANY_MOTION = 9, 1000, 1002, 1003
MOUSE_SGR, MOUSE_URXVT = 1006, 1015
WHEEL_UP, WHEEL_DOWN = 64, 65
_MOTION = 32
RELEASE = -1  # ``encode_mouse``'s button for a release


def mouse_modes(mode: Callable[[int], bool]) -> tuple[int | None, int | None]:
    """(tracking mode, encoding) the program asked for; (None, None) when it did not."""
    tracking = next(
        (m for m in (MOUSE_ANY_MOTION, MOUSE_BUTTON_MOTION, MOUSE_NORMAL, MOUSE_X10) if mode(m)),
        None,
    )
    encoding = next((m for m in (MOUSE_SGR, MOUSE_URXVT) if mode(m)), None)
    return tracking, encoding


def encode_mouse(
    tracking: int | None,
    encoding: int | None,
    button: int,
    x: int,
    y: int,
    *,
    motion: bool = False,
    held: int | None = None,
    shift: bool = False,
    meta: bool = False,
    ctrl: bool = False,
) -> bytes | None:
    """One mouse report for cell (``x``, ``y``) (0-based), or None when the program's
    mode does not want this event. ``button``: 0 left, 1 middle, 2 right, ``RELEASE``,
    ``WHEEL_UP``/``WHEEL_DOWN``; ``motion`` with ``held`` (the button down, or None)."""
    if tracking is None:
        return None
    if motion:
        wanted = tracking == MOUSE_ANY_MOTION or (
            tracking == MOUSE_BUTTON_MOTION and held is not None
        )
        if not wanted:
            return None
        code = (3 if held is None else held) + _MOTION
    elif button == RELEASE:
        if tracking == MOUSE_X10:
            return None
        code = 3 if encoding != MOUSE_SGR or held is None else held
    else:
        code = button
    if tracking != MOUSE_X10:
        code += (4 if shift else 0) + (8 if meta else 0) + (16 if ctrl else 0)
    col, row = x + 1, y + 1
    if encoding == MOUSE_SGR:
        final = "m" if button == RELEASE and not motion else "M"
        return f"\x1b[<{code};{col};{row}{final}".encode()
    if encoding == MOUSE_URXVT:
        return f"\x1b[{code + 32};{col};{row}M".encode()
    if col > 223 or row > 223:
        return None  # the default encoding cannot say it
    return b"\x1b[M" + bytes([32 + code, 32 + col, 32 + row])


def bracketed(text: str, enabled: bool) -> bytes:
    """A paste as the program asked for it (bracketed paste mode 2004)."""
    data = text.replace("\r\n", "\r").replace("\n", "\r").encode("utf-8", "replace")
    return b"\x1b[200~" + data + b"\x1b[201~" if enabled else data


__all__ = [
    "PaneScreen",
    "bracketed",
    "encode_key",
    "encode_mouse",
    "mouse_modes",
    "row_segments",
    "row_text",
]
