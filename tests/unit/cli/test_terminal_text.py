"""Cells as a terminal draws them: one line, measured in columns, cut within them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from orca.cli.terminal_text import cut_to_width, display_width, one_line, pad_to_width

# Mixed scripts: ASCII, accents precomposed and combining, wide CJK, controls.
texts = st.lists(
    st.sampled_from(["a", " ", "ü", "u\u0308", "日", "本", "\n", "\r", "\t", "\x1b"])
).map("".join)


def test_wide_characters_take_two_columns_and_combining_marks_none() -> None:
    """`日` is two columns, a combining mark zero, precomposed accents one."""
    assert display_width("ünïcødé-日本") == 12
    assert display_width("u\u0308ber-cafe\u0301") == 9
    assert display_width("plain") == 5


def test_a_multi_line_command_is_one_line_with_its_breaks_marked() -> None:
    """Each line break (\\n, \\r\\n, \\r) is one ⏎; other controls are escaped."""
    assert one_line("python3 -c 'import sys\nprint(1)\r\nprint(2)\r'") == (
        "python3 -c 'import sys⏎print(1)⏎print(2)⏎'"
    )
    assert one_line("a\tb\x1b[31m") == "a\\tb\\x1b[31m"
    assert one_line("ünïcødé-日本 ok") == "ünïcødé-日本 ok"


def test_a_cut_keeps_whole_wide_characters() -> None:
    """A wide character that would straddle the edge is left out, a space in its place."""
    assert cut_to_width("日本語テキスト", 6) == "日本 …"
    assert cut_to_width("abcdefgh", 6) == "abcde…"
    assert cut_to_width("日本", 4) == "日本"


@given(texts, st.integers(min_value=2, max_value=20))
def test_a_cut_one_line_fits_its_width_exactly_when_padded(text: str, width: int) -> None:
    """Whatever the text, one line of it cut and padded to `width` is `width` columns."""
    line = one_line(text)
    assert "\n" not in line and "\r" not in line
    cut = cut_to_width(line, width)
    assert display_width(cut) <= width
    assert display_width(pad_to_width(cut, width)) == width
    assert cut == line or cut.endswith("…")
