"""A pane's rows read straight into segments (``screen.row_segments``, the echo path)
show what Rich's own parse of the same VT text shows (``screen.row_text``), cell for
cell: same characters, same styles, the cursor on the same cell. The rows come from
the real emulator (libghostty-vt) fed random styled text."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.cells import cell_len, split_graphemes
from rich.console import Console
from rich.segment import Segment
from rich.style import Style

from actors.ui.screen import PaneScreen, row_segments, row_text

CONSOLE = Console(width=300, force_terminal=True, color_system="truecolor")
SGRS = [
    "0", "1", "2", "3", "4", "4:3", "5", "7", "9", "22", "23", "24", "27", "31", "42",
    "38;5;208", "48;5;17", "38;2;10;200;30", "48;2;1;2;3", "39", "49", "91", "105", "53",
]  # fmt: skip
TEXT = st.text(alphabet="abc XYZ-_=|#01 é", min_size=1, max_size=12)
# wide characters, and clusters of code points a cell (or two) each: ZWJ, a variation
# selector, a flag, a combining mark
WIDE = st.sampled_from(["日本", "語", "😀", "한", "👨\u200d👩\u200d👧", "❤️", "🇺🇸", "e\u0301"])
PIECE = st.one_of(
    TEXT.map(str.encode),
    WIDE.map(str.encode),
    st.sampled_from(SGRS).map(lambda p: f"\x1b[{p}m".encode()),
    st.just(b"\r\n"),
    st.just(b"\x1b[2K"),
)


def cells(segments: list[Segment]) -> list[tuple[str, Style]]:
    """(character, style) per character, the null style for none."""
    return [(char, style or Style.null()) for text, style, _ in segments for char in text]


def placed(segments: list[Segment]) -> list[tuple[str, Style, int]]:
    """(code point, style, the first cell of its grapheme) for each code point."""
    out, at = [], 0
    for text, style, _ in segments:
        spans, _width = split_graphemes(text)
        for first, last, width in spans:
            out += [(char, style or Style.null(), at) for char in text[first:last]]
            at += width
    return out


def cursor_cells(drawn: list[Segment], plain: list[Segment]) -> list[int]:
    """The first cells of the graphemes ``drawn`` styles differently from ``plain``,
    each checked to be ``plain``'s style reversed."""
    found = set()
    for (char, style, at), (same, base, _) in zip(placed(drawn), placed(plain), strict=True):
        assert char == same
        if style != base:
            assert style == base + Style(reverse=True)
            found.add(at)
    return sorted(found)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cols=st.integers(4, 40),
    rows=st.integers(1, 6),
    feed=st.lists(PIECE, max_size=40),
    cursor=st.integers(0, 45),
)
def test_rows_read_directly_show_what_rich_parses(
    cols: int, rows: int, feed: list[bytes], cursor: int
) -> None:
    screen = PaneScreen(cols, rows)
    try:
        screen.feed(b"".join(feed))
        for vt in screen.rows():
            direct = row_segments(vt, cols)
            assert direct is not None, vt
            assert sum(cell_len(s.text) for s in direct) == cols
            assert cells(direct) == cells(list(row_text(vt, cols).render(CONSOLE))), vt
            at = cursor if cursor < cols else None
            drawn = row_segments(vt, cols, at)
            assert drawn is not None
            assert sum(cell_len(s.text) for s in drawn) == cols, (vt, at)
            expected = [] if at is None else [_cell_of(direct, at)]
            if expected and _style_at(direct, expected[0]).reverse:
                expected = []  # reversed already: Rich's cursor does not show there either
            assert cursor_cells(drawn, direct) == expected
            if vt.isascii():  # Rich places the cursor by character: the same cell here
                parsed = cells(list(row_text(vt, cols, at).render(CONSOLE)))
                assert cells(drawn) == parsed, (vt, at)
    finally:
        screen.close()


def _cell_of(segments: list[Segment], cell: int) -> int:
    """The first cell of the grapheme covering ``cell`` (a wide one starts left)."""
    at = 0
    for text, _style, _ in segments:
        spans, _width = split_graphemes(text)
        for _first, _last, width in spans:
            if at + width > cell:
                return at
            at += width
    return cell


def _style_at(segments: list[Segment], cell: int) -> Style:
    return next(style for _char, style, at in placed(segments) if at == cell)


def test_the_cursor_after_wide_characters_is_on_its_cell() -> None:
    """Cell 6 after "日本" (4 cells) and "ab" is the "c"; Rich's by-character place
    would have been two cells further right."""
    screen = PaneScreen(12, 1)
    try:
        screen.feed("日本abcd".encode())
        [vt] = screen.rows()
        drawn = row_segments(vt, 12, 6)
        assert drawn is not None
        assert [s.text for s in drawn if s.style and s.style.reverse] == ["c"]
    finally:
        screen.close()


def test_the_cursor_on_or_after_a_cluster_keeps_the_row_its_width() -> None:
    """A cluster of code points (ZWJ, a variation selector) is one character: the
    cursor reverses it whole, or the one after it, and the row stays ``cols`` cells."""
    for text, cell, reversed_ in (("👨\u200d👩\u200d👧ab", 2, "a"), ("❤️xy", 0, "❤️")):
        screen = PaneScreen(12, 1)
        try:
            screen.feed(b"\x1b[?2027h" + text.encode())  # the emulator clusters too
            [vt] = screen.rows()
            drawn = row_segments(vt, 12, cell)
            assert drawn is not None
            assert sum(cell_len(s.text) for s in drawn) == 12, drawn
            assert [s.text for s in drawn if s.style and s.style.reverse] == [reversed_]
        finally:
            screen.close()


def test_a_row_with_another_escape_is_left_to_rich() -> None:
    assert row_segments("ab\x1b[5Ccd", 10) is None


def test_the_size_follows_a_programs_column_switch() -> None:
    """DECCOLM (with mode 40 allowed) makes the emulator 132 columns: the size the
    pane reads its rows at follows it, then the pane's own resize."""
    screen = PaneScreen(80, 24)
    try:
        assert screen.size == (80, 24)
        screen.feed(b"\x1b[?40h\x1b[?3h")
        assert screen.size == (132, 24)
        screen.resize(100, 30)
        assert screen.size == (100, 30)
        assert len(screen.rows()) == 30
    finally:
        screen.close()
