"""The one rule of where an escape sequence ends (``orca.model.vt``), shared by ptyd and
the attaching clients (issue 35: two copies disagreed on ``ESC ( B``)."""

from __future__ import annotations

import pytest

from orca.model.vt import (
    QueryFilter,
    end_of_escape_containing,
    ends_inside_sequence,
    sequence_end,
)


@pytest.mark.parametrize(
    ("buf", "end"),
    [
        (b"\x1b(Bx", 3),  # a character set designation: ESC, intermediate, final
        (b"\x1b#8x", 3),  # DECALN
        (b"\x1b 7x", 3),  # intermediates run on (0x20-0x2F) until the final
        (b"\x1b7x", 2),  # DECSC: ESC and a final only
        (b"\x1b[1;31mx", 7),  # CSI: parameters, then a final
        (b"\x1b[?25hx", 6),
        (b"\x1b]0;title\x07x", 10),  # OSC ends at BEL
        (b"\x1b]0;title\x1b\\x", 11),  # ... or at ST
        (b"\x1bPq#0\x1b\\x", 7),  # DCS ends at ST only
    ],
)
def test_a_complete_sequence_ends_after_its_final_byte(buf: bytes, end: int) -> None:
    assert sequence_end(buf, 0) == end
    assert not ends_inside_sequence(buf[:end])


@pytest.mark.parametrize(
    "buf", [b"\x1b", b"\x1b(", b"\x1b (", b"\x1b[", b"\x1b[1;3", b"\x1b]0;tit", b"\x1bPq#0"]
)
def test_a_cut_sequence_has_no_end_yet(buf: bytes) -> None:
    assert sequence_end(buf, 0) is None
    assert ends_inside_sequence(b"text" + buf)


def test_the_designated_character_set_is_not_text() -> None:
    """``ESC ( B`` is three bytes: its ``B`` is not printed, nor a safe cut point."""
    assert end_of_escape_containing(b"a\x1b(Bb", 3) == 4
    assert end_of_escape_containing(b"a\x1b(", 2) == 3  # open: the whole buffer


def test_the_query_filter_holds_a_designation_cut_before_its_final() -> None:
    f = QueryFilter()
    assert f.feed(b"ab\x1b(") == b"ab"
    assert not f.idle
    assert f.feed(b"Bc\x1b[6n") == b"\x1b(Bc"  # the cursor query is stripped
