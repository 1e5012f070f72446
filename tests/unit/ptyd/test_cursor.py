"""A client's stream cursor: dedupe overlaps, detect gaps by offset (issue 6: attach)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from orca.client.cursor import StreamCursor


def test_gap_is_reported_and_catch_up_fills_it() -> None:
    """A chunk starting past our offset is a gap; a catch-up read then continues."""
    cursor = StreamCursor(0)
    assert cursor.accept(0, b"abc") == b"abc"
    assert cursor.accept(5, b"fg") is None
    assert cursor.accept(3, b"defg") == b"defg"
    assert cursor.accept(5, b"fg") == b""
    assert cursor.offset == 7


@given(
    st.binary(min_size=1, max_size=200),
    st.lists(st.tuples(st.integers(0, 199), st.integers(1, 60)), max_size=40),
)
def test_overlapping_deliveries_reassemble_the_stream(
    data: bytes, pieces: list[tuple[int, int]]
) -> None:
    """Hypothesis: any overlapping, repeated chunks plus catch-ups yield the exact stream."""
    cursor = StreamCursor(0)
    out = b""
    for start, length in pieces:
        start %= len(data)
        fresh = cursor.accept(start, data[start : start + length])
        if fresh is None:  # gap: catch up from the source, as term.read does
            fresh = cursor.accept(cursor.offset, data[cursor.offset :]) or b""
        out += fresh
    out += cursor.accept(cursor.offset, data[cursor.offset :]) or b""
    assert out == data
