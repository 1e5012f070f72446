"""The inotify event parser and the ctypes binding."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from orca.actor.inotify import Inotify
from orca.actor.inotifyabi import (
    IN_CLOSE_WRITE,
    IN_CREATE,
    IN_IGNORED,
    InotifyEvent,
    encode_event,
    parse_events,
)

_name = st.text(
    st.characters(blacklist_characters="\0/", blacklist_categories=("Cs",)), max_size=40
)
_event = st.builds(
    InotifyEvent,
    wd=st.integers(-1, 2**31 - 1),
    mask=st.integers(0, 2**32 - 1),
    cookie=st.integers(0, 2**32 - 1),
    name=_name,
)


@given(st.lists(_event, max_size=20))
def test_parse_inverts_kernel_layout(events: list[InotifyEvent]) -> None:
    """Any sequence of kernel-formatted events parses back to the same events."""
    assert parse_events(b"".join(encode_event(e) for e in events)) == events


async def test_created_file_is_reported_with_its_name(tmp_path: Path) -> None:
    """A file written in a watched directory yields IN_CREATE and IN_CLOSE_WRITE with its name."""
    with trio.fail_after(5), Inotify() as inotify:
        wd = inotify.add_watch(str(tmp_path), IN_CREATE | IN_CLOSE_WRITE)
        (tmp_path / "f.txt").write_text("x")
        events = await inotify.read()
        assert [(e.wd, e.name) for e in events][:1] == [(wd, "f.txt")]
        assert {e.mask & (IN_CREATE | IN_CLOSE_WRITE) for e in events} >= {IN_CREATE}


async def test_removed_watch_ends_with_ignored(tmp_path: Path) -> None:
    """rm_watch makes the kernel send IN_IGNORED; removing it twice is harmless."""
    with trio.fail_after(5), Inotify() as inotify:
        wd = inotify.add_watch(str(tmp_path), IN_CREATE)
        inotify.rm_watch(wd)
        inotify.rm_watch(wd)
        events = await inotify.read()
        assert events[0].wd == wd and events[0].mask & IN_IGNORED


def test_missing_directory_raises_oserror(tmp_path: Path) -> None:
    """Watching a path that does not exist raises OSError (ENOENT), not a bare -1."""
    with Inotify() as inotify, pytest.raises(FileNotFoundError):
        inotify.add_watch(str(tmp_path / "nope"), IN_CREATE)


def test_read_nowait_is_empty_when_idle(tmp_path: Path) -> None:
    """With nothing queued, a non-blocking read returns no events instead of blocking."""
    with Inotify() as inotify:
        inotify.add_watch(str(tmp_path), IN_CREATE)
        assert inotify.read_nowait() == []
