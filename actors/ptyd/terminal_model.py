"""A headless terminal emulator per session: the screen a reattaching client is shown.

Essay: why a model, and what its snapshot promises.

Replaying raw scrollback to a reattaching client shows the tail of a byte stream, not
a screen, and replays the terminal *queries* programs sent long ago (DSR ``ESC[6n``,
DA ``ESC[c``, OSC 10/11): the client's terminal answers them again and the answers
reach the program as typed keys. So ``ptyd`` feeds every session's (OSC 9999-stripped)
output through an emulator, inline, and an attach gets :meth:`TerminalModel.snapshot`:
an escape stream *generated from the model's state*, never copied from the output, so
it contains no query. Fed to a terminal of the session's size it reproduces the cells,
their attributes, the cursor and the modes (alternate screen with the primary screen
kept beneath it, bracketed paste, mouse reporting, keypad, cursor visibility), the
title, and a sequence the program had half written when the snapshot was taken (its
continuation), so the live bytes that follow at the snapshot's offset apply exactly.

Queries are answered by the model (:meth:`TerminalModel.take_replies`): its cursor is
the program's, its size the PTY's. ``ptyd`` writes those replies to the PTY, and
clients strip queries from what they show (``orca.client.terminal``), so every query
gets exactly one answer whether zero, one or ten clients are attached.

The emulator is libghostty-vt (``pyghostty``, chosen by ``bench/terminal_model.py``:
about 300 MB/s and ~1 MiB per session with 2,000 lines of history, against pyte's
well under 1 MB/s and tens of MiB). It is used only here, through the ``ffi``/``lib``
of the pinned binding, so swapping it means rewriting this module alone.

Checkpoints (:meth:`checkpoint` / :meth:`restore`) are libghostty's own binary
snapshot; one can only be taken while the parser is between sequences (``None``
otherwise: the caller tries again later).
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyghostty import ffi, lib  # type: ignore[import-untyped]

from orca.model.vt import RESET_TERMINAL_MODES, RESTORE_USER_TERMINAL

# Lines of scrollback the model keeps per session: bounded memory (~1 MiB per session
# measured with full lines), and what a reattach can scroll back through.
DEFAULT_SCROLLBACK_LINES = 2000
# The colours the model reports for OSC 10/11 queries (a dark theme's defaults).
DEFAULT_FG = (229, 229, 229)
DEFAULT_BG = (0, 0, 0)

# DEC private modes a snapshot states explicitly, after the formatter's own mode dump
# (whose order can let a later mode reset an earlier one).
MODE_CURSOR_KEYS = 1  # DECCKM: application cursor keys
MODE_KEYPAD = 66  # DECNKM: application keypad (also set by ESC =)
MODE_MOUSE = (9, 1000, 1002, 1003)
MODE_MOUSE_ENCODINGS = (1005, 1006, 1015)
MODE_FOCUS = 1004
MODE_BRACKETED_PASTE = 2004

CLEAR_SCREEN = b"\x1b[H\x1b[2J"
# Screen switches (47, 1047, 1049 set or reset, alone or among other modes): what a
# flat snapshot leaves out and a flat attachment is repainted after (``stream.py``).
SCREEN_SWITCH = re.compile(rb"\x1b\[\?(?:[0-9]*;)*(?:47|1047|1049)(?:;[0-9]*)*[hl]")
_CELL_KEYS = [
    lib.GHOSTTY_CELL_DATA_CONTENT_TAG,
    lib.GHOSTTY_CELL_DATA_WIDE,
    lib.GHOSTTY_CELL_DATA_CODEPOINT,
    lib.GHOSTTY_CELL_DATA_STYLE_ID,
]


_TERMINAL_FREE = lib.ghostty_terminal_free


class ModelError(RuntimeError):
    """libghostty refused an operation (out of memory, a corrupt checkpoint)."""


@dataclass(frozen=True)
class Modes:
    """The modes a client's terminal must share with the model to show its screen."""

    alt_screen: bool
    bracketed_paste: bool
    mouse: bool
    keypad: bool
    cursor_keys: bool
    cursor_visible: bool


# One cell: its text ("" when empty), the SGR parameters of its style, its wide kind.
Cell = tuple[str, str, int]
# A cursor position (CUP) in formatter output: what follows the last one is the pen.
_CUP = re.compile(rb"\x1b\[\d+;\d+H")
_SGR = re.compile(rb"\x1b\[[0-9;:]*m")
# The scrolling region (DECSTBM) in formatter output: ``ESC [ top ; bottom r``.
_DECSTBM = re.compile(rb"\x1b\[(\d+);(\d+)r")


@dataclass(frozen=True)
class ScreenState:
    """Everything visible, for comparing two models: rows of (text, style) cells."""

    cells: tuple[tuple[tuple[str, str], ...], ...]
    cursor: tuple[int, int]
    modes: Modes
    title: str


def _check(result: int, what: str) -> None:
    if result:
        raise ModelError(f"libghostty-vt: {what} failed ({result})")


def _read_alloc(call: Callable[[Any, Any, Any], int]) -> bytes | None:
    """Bytes from a ``*_alloc(…, allocator, out_ptr, out_len)`` call; None on refusal."""
    ptr = ffi.new("uint8_t**")
    size = ffi.new("size_t*")
    if call(ffi.NULL, ptr, size):
        return None
    try:
        return bytes(ffi.buffer(ptr[0], size[0]))
    finally:
        lib.ghostty_free(ffi.NULL, ptr[0], size[0])


class TerminalModel:
    """One session's emulated terminal: feed it output, ask it for a redraw."""

    def __init__(
        self,
        cols: int = 80,
        rows: int = 24,
        *,
        scrollback_lines: int = DEFAULT_SCROLLBACK_LINES,
        colors: tuple[tuple[int, int, int], tuple[int, int, int]] = (DEFAULT_FG, DEFAULT_BG),
        _handle: Any = None,
    ) -> None:
        """``colors``: the (foreground, background) reported to OSC 10/11 queries."""
        self._t = ffi.new("GhosttyTerminal*")
        if _handle is None:
            _check(lib.ghostty_terminal_new(ffi.NULL, self._t, cols, rows), "terminal_new")
        else:
            self._t[0] = _handle
        # A finalizer, not __del__: it may run inside cffi's type parser (which holds a
        # lock that any ``lib`` attribute lookup takes), so it calls a pre-bound function.
        self._free = weakref.finalize(self, _TERMINAL_FREE, self._t[0])
        self._scrollback_lines = scrollback_lines
        self._replies: list[bytes] = []
        self._configure(colors)

    def _configure(self, colors: tuple[tuple[int, int, int], tuple[int, int, int]]) -> None:
        t = self._t[0]
        lines = ffi.new("size_t*", self._scrollback_lines)
        _check(
            lib.ghostty_terminal_set(t, lib.GHOSTTY_TERMINAL_OPT_SCROLLBACK_MAX_LINES, lines),
            "scrollback",
        )
        for opt, (r, g, b) in (
            (lib.GHOSTTY_TERMINAL_OPT_COLOR_FOREGROUND, colors[0]),
            (lib.GHOSTTY_TERMINAL_OPT_COLOR_BACKGROUND, colors[1]),
        ):
            _check(
                lib.ghostty_terminal_set(
                    t, opt, ffi.new("GhosttyColorRgb*", {"r": r, "g": g, "b": b})
                ),
                "colour",
            )
        # Invariant: the callback object lives as long as the terminal that calls it.
        self._on_reply = ffi.callback(
            "GhosttyTerminalWritePtyFn",
            lambda _t, _u, data, n: self._replies.append(bytes(ffi.buffer(data, n))),
        )
        _check(
            lib.ghostty_terminal_set(t, lib.GHOSTTY_TERMINAL_OPT_WRITE_PTY, self._on_reply),
            "write_pty",
        )

    def close(self) -> None:
        """Free the native terminal now (idempotent); garbage collection does otherwise."""
        self._free()

    # -- input -------------------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        """Apply output bytes (any chunking gives the same state)."""
        lib.ghostty_terminal_vt_write(self._t[0], data, len(data))

    def take_replies(self) -> list[bytes]:
        """The answers to the queries fed since the last call (DSR, DA, OSC 10/11...)."""
        replies, self._replies = self._replies, []
        return replies

    def resize(self, cols: int, rows: int) -> None:
        _check(lib.ghostty_terminal_resize(self._t[0], cols, rows, 8, 16), "resize")

    def compress(self) -> None:
        """Compact the history's memory (an idle session's; the next output is unaffected)."""
        out = ffi.new("GhosttyTerminalCompressionResult*")
        lib.ghostty_terminal_compress(self._t[0], lib.GHOSTTY_TERMINAL_COMPRESSION_MODE_FULL, out)

    # -- state ---------------------------------------------------------------------------
    def _get(self, key: str, ctype: str = "uint16_t") -> Any:
        out = ffi.new(ctype + "*")
        _check(
            lib.ghostty_terminal_get(self._t[0], getattr(lib, f"GHOSTTY_TERMINAL_DATA_{key}"), out),
            key,
        )
        return out[0]

    def _string(self, key: str) -> str:
        s = self._get(key, "GhosttyString")
        return bytes(ffi.buffer(s.ptr, s.len)).decode("utf-8", "replace") if s.len else ""

    def mode(self, number: int) -> bool:
        """Whether DEC private mode ``number`` is set."""
        config = ffi.new("GhosttyTerminalModeConfig*")
        config.mode = number & 0x7FFF
        _check(lib.ghostty_terminal_get(self._t[0], lib.GHOSTTY_TERMINAL_DATA_MODE, config), "mode")
        return bool(config.value)

    @property
    def size(self) -> tuple[int, int]:
        return int(self._get("COLS")), int(self._get("ROWS"))

    @property
    def cursor(self) -> tuple[int, int]:
        """(column, row), zero-based, in the active screen."""
        return int(self._get("CURSOR_X")), int(self._get("CURSOR_Y"))

    @property
    def title(self) -> str:
        return self._string("TITLE")

    @property
    def cwd(self) -> str:
        """The working directory the program announced (OSC 7), as sent."""
        return self._string("PWD")

    @property
    def alt_screen(self) -> bool:
        """Whether the alternate screen is active (one call: the output path asks it)."""
        return bool(int(self._get("ACTIVE_SCREEN", "int")) == lib.GHOSTTY_TERMINAL_SCREEN_ALTERNATE)

    @property
    def modes(self) -> Modes:
        return Modes(
            alt_screen=self.alt_screen,
            bracketed_paste=self.mode(MODE_BRACKETED_PASTE),
            mouse=any(self.mode(m) for m in MODE_MOUSE),
            keypad=self.mode(MODE_KEYPAD),
            cursor_keys=self.mode(MODE_CURSOR_KEYS),
            cursor_visible=bool(self._get("CURSOR_VISIBLE", "bool")),
        )

    # -- redraw ------------------------------------------------------------------------
    def _format(self, *, modes: bool) -> bytes:
        opts = ffi.new("GhosttyFormatterTerminalOptions*")
        opts.size = ffi.sizeof("GhosttyFormatterTerminalOptions")
        opts.extra.size = ffi.sizeof("GhosttyFormatterTerminalExtra")
        opts.extra.screen.size = ffi.sizeof("GhosttyFormatterScreenExtra")
        opts.emit = lib.GHOSTTY_FORMATTER_FORMAT_VT
        opts.unwrap = False
        opts.trim = False  # blank cells drawn: positions come out exact
        # Not the palette (it would repaint the user's theme) nor the cwd (sent as
        # OSC 7 below: the formatter's copy carries a NUL).
        opts.extra.modes = modes
        opts.extra.scrolling_region = True
        opts.extra.tabstops = True
        opts.extra.keyboard = modes
        screen = opts.extra.screen
        screen.cursor = screen.style = screen.hyperlink = screen.protection = True
        screen.charsets = True
        screen.kitty_keyboard = modes
        opts.selection = ffi.NULL
        formatter = ffi.new("GhosttyFormatter*")
        _check(
            lib.ghostty_formatter_terminal_new(ffi.NULL, formatter, self._t[0], opts[0]),
            "formatter",
        )
        try:
            out = _read_alloc(
                lambda a, p, n: lib.ghostty_formatter_format_alloc(formatter[0], a, p, n)
            )
        finally:
            lib.ghostty_formatter_free(formatter[0])
        if out is None:
            raise ModelError("libghostty-vt: format failed")
        return out

    def snapshot(self, *, flat: bool = False) -> bytes:
        """An escape stream that redraws this screen and its modes on a terminal of the
        model's size: generated from state, so it contains no terminal query.

        ``flat``: for a client that keeps the user's own screen in an outer alternate
        screen (``orca term attach``): only the active screen is drawn, and nothing in
        the stream switches screens (the caller repaints when the program does)."""
        parts = [RESET_TERMINAL_MODES if flat else RESTORE_USER_TERMINAL, CLEAR_SCREEN]
        modes = self.modes
        if modes.alt_screen and not flat:
            # The primary screen lies beneath: draw it first (from a copy that left the
            # alternate screen), so the program's exit from it shows the right screen.
            beneath = self.copy()
            if beneath is not None:
                beneath.feed(b"\x1b[?1049l")
                parts.append(beneath._redraw_cells(beneath._cells(), beneath._row_wraps()))
                x, y = beneath.cursor
                parts.append(b"\x1b[%d;%dH" % (y + 1, x + 1))
                beneath.close()
        # The formatter states the modes, margins, tab stops, charsets and pen; its
        # text skips blank cells, so every cell is then drawn again, exactly.
        formatted = self._format(modes=True)
        if flat:
            formatted = SCREEN_SWITCH.sub(b"", formatted)
        cells = self._cells()
        parts.append(formatted)
        parts.append(self._redraw_cells(cells, self._row_wraps(), _bottom_margin(formatted)))
        parts.append(self._mode_trailer(modes))
        parts.append(self._cursor_and_pen(formatted, cells))
        if self.title:
            parts.append(b"\x1b]2;" + _printable(self.title) + b"\x1b\\")
        if self.cwd:
            parts.append(b"\x1b]7;" + _printable(self.cwd) + b"\x1b\\")
        parts.append(self.continuation())
        return b"".join(parts)

    def _mode_trailer(self, modes: Modes) -> bytes:
        out = [b"\x1b[?25" + (b"h" if modes.cursor_visible else b"l")]
        # Resetting any mouse tracking mode turns every one off (xterm, tmux): resets
        # first, then the modes that are on, so a later reset cannot undo a set.
        numbers = (
            MODE_CURSOR_KEYS,
            MODE_KEYPAD,
            MODE_BRACKETED_PASTE,
            *MODE_MOUSE,
            *MODE_MOUSE_ENCODINGS,
            MODE_FOCUS,
        )
        states = [(number, self.mode(number)) for number in numbers]
        out.extend(b"\x1b[?%dl" % number for number, on in states if not on)
        out.extend(b"\x1b[?%dh" % number for number, on in states if on)
        out.append(b"\x1b=" if modes.keypad else b"\x1b>")
        return b"".join(out)

    def continuation(self) -> bytes:
        """The bytes of a sequence the output is in the middle of (b"" between sequences)."""
        return (
            _read_alloc(
                lambda a, p, n: lib.ghostty_terminal_continuation_alloc(self._t[0], a, p, n)
            )
            or b""
        )

    # -- checkpoints -------------------------------------------------------------------
    def checkpoint(self) -> bytes | None:
        """The model as bytes for :meth:`restore`; None while inside a sequence."""
        return _read_alloc(lambda a, p, n: lib.ghostty_snapshot_encode_alloc(self._t[0], a, p, n))

    def copy(self) -> TerminalModel | None:
        """An independent model in the same state (None while inside a sequence)."""
        data = self.checkpoint()
        return (
            None
            if data is None
            else TerminalModel.restore(data, scrollback_lines=self._scrollback_lines)
        )

    @classmethod
    def restore(
        cls, data: bytes, *, scrollback_lines: int = DEFAULT_SCROLLBACK_LINES
    ) -> TerminalModel:
        """A model from a :meth:`checkpoint`; raises ModelError if the bytes are not one."""
        decoder = ffi.new("GhosttySnapshotDecoder*")
        _check(lib.ghostty_snapshot_decoder_new_buf(ffi.NULL, decoder, data, len(data)), "decoder")
        try:
            handle = ffi.new("GhosttyTerminal*")
            _check(lib.ghostty_snapshot_decoder_decode(decoder[0], handle), "decode checkpoint")
        finally:
            lib.ghostty_snapshot_decoder_free(decoder[0])
        return cls(scrollback_lines=scrollback_lines, _handle=handle[0])

    # -- cells ---------------------------------------------------------------------------
    def _cells(self) -> list[list[Cell]]:
        """Every cell of the active screen: (text, SGR parameters, wide kind).

        Hot (a snapshot reads every cell): one grid ref and one ``cell_get_multi`` per
        cell into buffers allocated once; graphemes, style and background colour are
        asked only of the cells that have them; a style's SGR is computed once per row
        and style id (ids are per page, and a row lives in one page).
        """
        cols, rows = self.size
        grid_ref = _grid_ref()
        t = self._t[0]
        ref = ffi.new("GhosttyGridRef*")
        ref.size = ffi.sizeof("GhosttyGridRef")
        point = ffi.new("GhosttyPointS*")
        point.tag = lib.GHOSTTY_POINT_TAG_ACTIVE
        cell = ffi.new("GhosttyCell*")
        keys = ffi.new("GhosttyCellData[4]", _CELL_KEYS)
        tag = ffi.new("int*")
        wide = ffi.new("int*")
        codepoint = ffi.new("uint32_t*")
        style_id = ffi.new("uint16_t*")
        values = ffi.new("void*[4]", [tag, wide, codepoint, style_id])
        written = ffi.new("size_t*")
        buf = ffi.new("uint32_t[16]")
        n = ffi.new("size_t*")
        style = ffi.new("GhosttyStyle*")
        style.size = ffi.sizeof("GhosttyStyle")
        index = ffi.new("uint8_t*")
        rgb = ffi.new("GhosttyColorRgb*")
        ref_cell, cell_get_multi, cell_get = (
            lib.ghostty_grid_ref_cell,
            lib.ghostty_cell_get_multi,
            lib.ghostty_cell_get,
        )
        grapheme_tag = lib.GHOSTTY_CELL_CONTENT_CODEPOINT_GRAPHEME
        palette_tag = lib.GHOSTTY_CELL_CONTENT_BG_COLOR_PALETTE
        rgb_tag = lib.GHOSTTY_CELL_CONTENT_BG_COLOR_RGB
        out: list[list[Cell]] = []
        for y in range(rows):
            row: list[Cell] = []
            styles: dict[int, str] = {0: "0"}
            point.value.y = y
            for x in range(cols):
                point.value.x = x
                if grid_ref(t, point[0], ref) or ref_cell(ref, cell):
                    raise ModelError(f"libghostty-vt: cell {x},{y} failed")
                cell_get_multi(cell[0], 4, keys, values, written)
                kind = tag[0]
                if kind == grapheme_tag:
                    text = ""
                    if lib.ghostty_grid_ref_graphemes(ref, buf, 16, n) == 0:
                        text = "".join(chr(buf[i]) for i in range(min(n[0], 16)))
                else:
                    text = chr(codepoint[0]) if codepoint[0] and kind < palette_tag else ""
                sgr = styles.get(style_id[0])
                if sgr is None:
                    _check(lib.ghostty_grid_ref_style(ref, style), "style")
                    sgr = styles[style_id[0]] = _sgr(style)
                if kind == palette_tag:
                    cell_get(cell[0], lib.GHOSTTY_CELL_DATA_COLOR_PALETTE, index)
                    sgr += f";48;5;{index[0]}"
                elif kind == rgb_tag:
                    cell_get(cell[0], lib.GHOSTTY_CELL_DATA_COLOR_RGB, rgb)
                    sgr += f";48;2;{rgb.r};{rgb.g};{rgb.b}"
                row.append((text, sgr, int(wide[0])))
            out.append(row)
        return out

    def _row_wraps(self) -> list[bool]:
        """Per row of the active screen: whether the program's text wrapped out of it
        onto the next row (a soft wrap, which a terminal joins again when it reflows)."""
        _cols, rows = self.size
        grid_ref, t = _grid_ref(), self._t[0]
        ref = ffi.new("GhosttyGridRef*")
        ref.size = ffi.sizeof("GhosttyGridRef")
        point = ffi.new("GhosttyPointS*")
        point.tag = lib.GHOSTTY_POINT_TAG_ACTIVE
        row, wrap = ffi.new("GhosttyRow*"), ffi.new("bool*")
        wraps = []
        for y in range(rows):
            point.value.x, point.value.y = 0, y
            if (
                grid_ref(t, point[0], ref)
                or lib.ghostty_grid_ref_row(ref, row)
                or lib.ghostty_row_get(row[0], lib.GHOSTTY_ROW_DATA_WRAP, wrap)
            ):
                raise ModelError(f"libghostty-vt: row {y} failed")
            wraps.append(bool(wrap[0]))
        return wraps

    def _redraw_cells(
        self, cells: list[list[Cell]], wraps: list[bool], bottom_margin: int | None = None
    ) -> bytes:
        """The cells of the active screen that hold something, from the top left.

        A client's terminal must end up with the same cells *and* the same lines, or
        it breaks the screen when it reflows it to another width (a resized window, a
        pane narrowed by a split): so a row is drawn only up to its last written or
        styled cell and the rest is erased (blanks written out would be wrapped as
        text), and a row the program's text wrapped out of is
        drawn whole with no cursor move after it, so its continuation wraps onto the
        next row in the client as it did here (and joins again on a wider reflow).
        Not at the scrolling region's bottom (``bottom_margin``, 0-based): a wrap there
        would scroll the region.
        """
        out = bytearray()
        pen = None
        joined = False  # the previous row wrapped onto this one: no cursor move
        last = len(cells) - 1
        for y, row in enumerate(cells):
            wraps_on = wraps[y] and y < last and y != bottom_margin
            end = len(row) if wraps_on else _content_end(row)
            if wraps_on and row[-1][2] == lib.GHOSTTY_CELL_WIDE_SPACER_HEAD:
                end -= 1  # a wide character that did not fit: the client wraps it too
            if not joined:
                out += b"\x1b[%d;1H" % (y + 1)
            for text, sgr, wide in row[:end]:
                if wide == lib.GHOSTTY_CELL_WIDE_SPACER_TAIL:
                    continue  # drawn by the wide character before it
                if sgr != pen:
                    out += b"\x1b[" + sgr.encode() + b"m"
                    pen = sgr
                out += (text or " ").encode("utf-8", "replace")
            if end < len(row):
                # The rest erased, with no colour: the formatter's text is under it.
                # (Never at a full row: the cursor waits on its last cell to wrap.)
                out += b"\x1b[K" if pen == "0" else b"\x1b[0m\x1b[K"
                pen = "0"
            joined = wraps_on
        out += b"\x1b[0m"
        return bytes(out)

    def _cursor_and_pen(self, formatted: bytes, cells: list[list[Cell]]) -> bytes:
        """The cursor position and the pen (SGR for what is printed next), as the
        formatter states them at its end; the pending-wrap state re-created."""
        x, y = self.cursor
        tail = b""
        positions = list(_CUP.finditer(formatted))
        if positions:
            match = positions[-1]
            # Only its SGR: the formatter may re-print a cell itself (pending wrap).
            tail = b"".join(_SGR.findall(formatted, match.end()))
        if bool(self._get("CURSOR_PENDING_WRAP", "bool")):
            # Re-print the last cell of the line: the terminal is then about to wrap.
            text, sgr, _wide = cells[y][x]
            redraw = b"\x1b[%d;%dH\x1b[%sm" % (y + 1, x + 1, sgr.encode()) + (text or " ").encode()
            return redraw + tail
        return b"\x1b[%d;%dH" % (y + 1, x + 1) + tail

    # -- comparison (tests, golden files) ------------------------------------------------
    def text_lines(self) -> list[str]:
        """The visible rows as text, each right-trimmed (what a person reads there)."""
        # A wide character's spacer cells (wide kind 2 and up, no text) are not text.
        return [
            "".join(t or " " for t, _s, w in row if t or w < 2).rstrip() for row in self._cells()
        ]

    def screen_state(self) -> ScreenState:
        """The visible cells with their styles, the cursor, the modes and the title."""
        # An empty cell and a space of the same style look the same: both are " ".
        cells = tuple(tuple((t or " ", s) for t, s, _w in row) for row in self._cells())
        return ScreenState(cells=cells, cursor=self.cursor, modes=self.modes, title=self.title)


def _content_end(row: list[Cell]) -> int:
    """How many cells of ``row`` to draw: up to its last written or styled one."""
    for x in range(len(row) - 1, -1, -1):
        text, sgr, _wide = row[x]
        if text or sgr != "0":
            return x + 1
    return 0


def _bottom_margin(formatted: bytes) -> int | None:
    """The scrolling region's bottom row (0-based) as the formatter set it, if it did."""
    regions = _DECSTBM.findall(formatted)
    return int(regions[-1][1]) - 1 if regions else None


def _grid_ref() -> Any:
    """``ghostty_terminal_grid_ref``, callable with its point passed by value (cffi's
    ABI mode cannot pass that union: the binding's layout twin stands in)."""
    from pyghostty._ffi import union_fn  # type: ignore[import-untyped]

    return union_fn(
        "ghostty_terminal_grid_ref",
        "GhosttyResult(*)(GhosttyTerminal, GhosttyPointS, GhosttyGridRef*)",
    )


def _sgr(style: Any) -> str:
    """SGR parameters that select ``style`` from a reset pen."""
    params = ["0"]
    for code, name in (
        ("1", "bold"),
        ("2", "faint"),
        ("3", "italic"),
        ("5", "blink"),
        ("7", "inverse"),
        ("8", "invisible"),
        ("9", "strikethrough"),
        ("53", "overline"),
    ):
        if getattr(style, name):
            params.append(code)
    if style.underline:
        params.append(f"4:{style.underline}")
    for base, colour in ((38, style.fg_color), (48, style.bg_color), (58, style.underline_color)):
        if colour.tag == lib.GHOSTTY_STYLE_COLOR_PALETTE:
            params.append(f"{base};5;{colour.value.palette}")
        elif colour.tag == lib.GHOSTTY_STYLE_COLOR_RGB:
            rgb = colour.value.rgb
            params.append(f"{base};2;{rgb.r};{rgb.g};{rgb.b}")
    return ";".join(params)


def _printable(text: str) -> bytes:
    """``text`` for an OSC string: without controls (which would end or break it)."""
    return "".join(ch for ch in text if ch >= " " and ch != "\x7f").encode()
