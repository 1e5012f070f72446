"""Bounded scrollback with monotonic offsets and safe trim points (issue 6: output)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.ptyd.scrollback import Chunk, Gap, OffsetInFuture, Scrollback
from orca.model.vt import sequence_end


def inside_positions(stream: bytes) -> set[int]:
    """Positions strictly inside an escape sequence or a UTF-8 character (reference)."""
    inside: set[int] = set()
    i = 0
    while i < len(stream):
        b = stream[i]
        if b == 0x1B:
            end = sequence_end(stream, i) or len(stream)
            inside.update(range(i + 1, end))
            i = end
        elif b >= 0xC0:
            width = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
            inside.update(range(i + 1, min(i + width, len(stream))))
            i += width
        else:
            i += 1
    return inside


def test_offsets_are_monotonic_across_appends() -> None:
    """Each append is numbered by the byte offset where it starts."""
    sb = Scrollback(1024)
    assert sb.append(b"abc") == Chunk(0, b"abc")
    assert sb.append(b"de") == Chunk(3, b"de")
    assert sb.end == 5
    assert sb.read_since(1) == Chunk(1, b"bcde")


def test_trimmed_offset_answers_gap_with_resync_point() -> None:
    """Reading from a trimmed offset returns a Gap naming the oldest available offset."""
    sb = Scrollback(100)
    for i in range(50):
        sb.append(b"line %02d\n" % i)
    result = sb.read_since(0)
    assert isinstance(result, Gap)
    assert result.start == sb.start > 0
    snap = sb.snapshot()
    assert snap.offset == result.start and snap.end == sb.end == 400


def test_trim_starts_replay_at_a_line_start() -> None:
    """With newlines present the replay starts right after one."""
    sb = Scrollback(100)
    for i in range(50):
        sb.append(b"line %02d\n" % i)
    snap = sb.snapshot()
    assert snap.data.startswith(b"line ")
    assert len(snap.data) <= 100


def test_future_offset_is_the_callers_fault() -> None:
    """Asking beyond the end is rejected as a caller error."""
    sb = Scrollback(100)
    sb.append(b"x")
    with pytest.raises(OffsetInFuture):
        sb.read_since(2)


def test_read_since_end_is_empty() -> None:
    """A client that is up to date gets no data and keeps its offset."""
    sb = Scrollback(100)
    sb.append(b"hello")
    assert sb.read_since(5) == Chunk(5, b"")


_tokens = st.one_of(
    st.sampled_from(
        [
            b"\x1b[38;5;196m",
            b"\x1b[0m",
            b"\x1b]0;a window title\x07",
            b"\x1b]8;;http://example.com\x1b\\",
            b"\x1b(B",
            b"\x1b7",
            "héllo wörld ✓ 漢字".encode(),
            "🚀".encode(),
            b"\r\n",
        ]
    ),
    st.text(alphabet="abc xyz", max_size=40).map(str.encode),
)


@given(st.lists(st.lists(_tokens, max_size=8).map(b"".join), max_size=60), st.booleans())
def test_replay_never_starts_inside_a_sequence_or_character(
    appends: list[bytes], no_newlines: bool
) -> None:
    """Hypothesis: after any trims, the snapshot starts at a safe point and fits the bound."""
    if no_newlines:
        appends = [a.replace(b"\r\n", b"") for a in appends]
    sb = Scrollback(256)
    for data in appends:
        sb.append(data)
    stream = b"".join(appends)
    snap = sb.snapshot()
    assert snap.data == stream[snap.offset :]
    assert snap.end == len(stream)
    assert len(snap.data) <= 256
    assert snap.offset not in inside_positions(stream)


def test_compacted_scrollback_reads_the_same_and_unpacks_on_output() -> None:
    """An idle (compacted) scrollback serves reads unchanged; new output unpacks it."""
    sb = Scrollback(4096)
    for i in range(300):
        sb.append(b"agent line %d\n" % i)
    before = sb.snapshot()
    sb.compact()
    assert sb.compacted
    assert sb.snapshot() == before and len(sb) == len(before.data)
    assert sb.read_since(before.end - 4) == Chunk(before.end - 4, before.data[-4:])
    assert sb.compacted  # reads do not unpack
    assert sb.append(b"more\n") == Chunk(before.end, b"more\n")
    assert not sb.compacted
    assert sb.snapshot().data.endswith(b"agent line 299\nmore\n")


class MemorySpill:
    """A spill store in a list (the real one is ``history.SpillFile``)."""

    def __init__(self, accept: bool = True) -> None:
        self.accept = accept
        self.kept: bytes | None = None
        self.discarded = 0

    def save(self, data: bytes) -> bool:
        if self.accept:
            self.kept = data
        return self.accept

    def load(self) -> bytes | None:
        return self.kept

    def discard(self) -> None:
        self.kept = None
        self.discarded += 1


def filled(spill: MemorySpill) -> Scrollback:
    sb = Scrollback(4096, spill=spill)
    for i in range(300):
        sb.append(b"agent line %d\n" % i)
    return sb


def test_a_cold_scrollback_is_kept_in_its_store_reads_the_same_and_warms_on_output() -> None:
    spill = MemorySpill()
    sb = filled(spill)
    before = sb.snapshot()
    assert not sb.go_cold()  # only a compacted scrollback goes cold
    sb.compact()
    assert sb.go_cold() and sb.cold and spill.kept is not None
    assert sb._packed is None and not sb._buf  # nothing of it left in memory
    assert sb.snapshot() == before and len(sb) == len(before.data) and sb.end == before.end
    assert sb.read_since(before.end - 4) == Chunk(before.end - 4, before.data[-4:])
    assert sb.cold  # reads leave it cold
    assert sb.append(b"more\n") == Chunk(before.end, b"more\n")
    assert not sb.cold and spill.kept is None and spill.discarded == 1
    assert sb.snapshot().data == before.data + b"more\n"


def test_a_refused_spill_keeps_the_scrollback_compacted_in_memory() -> None:
    spill = MemorySpill(accept=False)  # a full disk
    sb = filled(spill)
    before = sb.snapshot()
    sb.compact()
    assert not sb.go_cold() and sb.compacted and not sb.cold
    assert sb.snapshot() == before


@pytest.mark.parametrize("damage", [None, b"not zlib at all"])
def test_a_lost_or_damaged_spill_is_a_gap_not_a_crash(damage: bytes | None) -> None:
    """Someone removed or overwrote the file: its bytes are lost, offsets go on, readers
    of the lost part are told of a gap, and new output is kept."""
    spill = MemorySpill()
    sb = filled(spill)
    end = sb.end
    sb.compact()
    assert sb.go_cold()
    spill.kept = damage
    assert sb.read_since(end - 10) == Gap(end - 10, end)
    assert sb.end == end and len(sb) == 0
    assert sb.append(b"next\n") == Chunk(end, b"next\n")
    assert sb.snapshot() == Chunk(end, b"next\n")
