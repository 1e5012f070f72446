"""Reading complete lines of a growing file in bounded steps (actors/vault/linereader.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.vault.linereader import read_lines


@pytest.fixture
def fd(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"")
    handle = os.open(path, os.O_RDONLY)
    yield path, handle
    os.close(handle)


def test_an_unfinished_last_line_is_left_for_the_next_read(fd: tuple[Path, int]) -> None:
    """A line without its newline is not consumed; once finished it is read whole."""
    path, handle = fd
    path.write_bytes(b'{"a":1}\n{"b":')
    first = read_lines(handle, 0, path.stat().st_size, 1 << 20)
    assert (first.lines, first.end, first.more) == ([b'{"a":1}'], 8, False)
    with path.open("ab") as f:
        f.write(b"2}\n")
    second = read_lines(handle, first.end, path.stat().st_size, 1 << 20)
    assert (second.lines, second.end) == ([b'{"b":2}'], path.stat().st_size)


def test_a_step_stops_at_its_budget_on_a_line_boundary(fd: tuple[Path, int]) -> None:
    path, handle = fd
    path.write_bytes(b"".join(b"%05d\n" % n for n in range(1000)))  # 6 bytes a line
    seen: list[bytes] = []
    start = 0
    steps = 0
    while True:
        batch = read_lines(handle, start, path.stat().st_size, 600)
        seen.extend(batch.lines)
        steps += 1
        start = batch.end
        if not batch.more:
            break
    assert seen == [b"%05d" % n for n in range(1000)]
    assert steps >= 10  # 6000 bytes in steps of about 600


def test_an_overlong_line_is_dropped_without_being_buffered(fd: tuple[Path, int]) -> None:
    """A line over the limit is skipped, also when a step ends inside it: the next step
    drops its rest instead of reading it as a line."""
    path, handle = fd
    path.write_bytes(b"short\n" + b"x" * 5000)
    batch = read_lines(handle, 0, path.stat().st_size, 1 << 20, max_line=1000)
    assert (batch.lines, batch.skipped, batch.mid_line) == ([b"short"], 1, True)
    with path.open("ab") as f:
        f.write(b"x" * 3000 + b"\nafter\n")
    rest = read_lines(handle, batch.end, path.stat().st_size, 1 << 20, mid_line=True, max_line=1000)
    assert (rest.lines, rest.mid_line, rest.end) == ([b"after"], False, path.stat().st_size)


@given(st.lists(st.binary(min_size=1, max_size=40).map(lambda b: b.replace(b"\n", b"_")), max_size=40),
       st.integers(min_value=1, max_value=64), st.integers(min_value=1, max_value=7))  # fmt: skip
def test_any_appends_in_any_pieces_read_every_line_once(lines: list[bytes], budget: int, pieces: int) -> None:
    """However the writer splits its appends and the reader its steps, the lines read
    are the lines written, in order, each once."""
    import tempfile

    data = b"".join(line + b"\n" for line in lines)
    with tempfile.NamedTemporaryFile() as f:
        handle = f.fileno()
        got: list[bytes] = []
        offset = 0
        mid = False
        for cut in [len(data) * (i + 1) // pieces for i in range(pieces)]:
            os.pwrite(handle, data[:cut], 0)
            while True:
                batch = read_lines(handle, offset, cut, budget, mid_line=mid)
                got.extend(batch.lines)
                offset, mid = batch.end, batch.mid_line
                if not batch.more:
                    break
    assert got == [line for line in lines if line.strip()]
