"""The raw output journal on disk (issue 6: durable bounded history; crash survival)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from actors.ptyd.history import RawJournal, SpillFile, remove_orphans
from actors.ptyd.osc import INTRODUCER, OscScanner

KEY = "r::/w@@0123abcd"


def test_journal_keeps_newest_bytes_within_bound(tmp_path: Path) -> None:
    """After far more output than the bound, disk holds the newest bytes, correctly offset."""
    journal = RawJournal(tmp_path, KEY, max_bytes=1000, resume=False)
    stream = b"".join(b"%06d\n" % i for i in range(2000))
    for i in range(0, len(stream), 70):
        journal.rotate_if_due(i, scanner_at_boundary=True)
        journal.append(stream[i : i + 70])
    replay = journal.replay()
    assert replay.raw == stream[replay.start.raw :]
    assert replay.start.stripped == replay.start.raw
    assert 430 <= len(replay.raw) <= 1000 + 2 * 70
    assert journal.raw_end == len(stream)
    disk = sum(p.stat().st_size for p in tmp_path.iterdir() if not p.name.endswith(".json"))
    assert disk <= 1000 + 2 * 70


def test_rotation_waits_for_scanner_boundary(tmp_path: Path) -> None:
    """No rotation while the OSC scanner is inside a sequence."""
    journal = RawJournal(tmp_path, KEY, max_bytes=100, resume=False)
    journal.append(b"x" * 80)
    journal.rotate_if_due(80, scanner_at_boundary=False)
    journal.append(b"y" * 10)
    assert journal.replay().start.raw == 0
    journal.rotate_if_due(90, scanner_at_boundary=True)
    journal.append(b"z")
    assert journal.replay().raw == b"x" * 80 + b"y" * 10 + b"z"


def test_journal_resumes_after_reopen(tmp_path: Path) -> None:
    """A restarted owner continues the same journal at the same offsets."""
    journal = RawJournal(tmp_path, KEY, max_bytes=100, resume=False)
    journal.append(b"a" * 80)
    journal.rotate_if_due(80, scanner_at_boundary=True)
    journal.close()
    again = RawJournal(tmp_path, KEY, max_bytes=100, resume=True)
    assert again.raw_end == 80
    again.append(b"b" * 30)
    replay = again.replay()
    assert replay.raw == (b"a" * 80 + b"b" * 30)[replay.start.raw :]


def test_splice_moves_pipe_content_into_journal(tmp_path: Path) -> None:
    """Bytes spliced from a pipe land in the journal and are returned for processing."""
    journal = RawJournal(tmp_path, KEY, resume=False)
    r, w = os.pipe2(os.O_NONBLOCK)
    try:
        os.write(w, b"hello ")
        os.write(w, b"world")
        assert journal.splice_from(r, 65536) == b"hello world"
        with pytest.raises(BlockingIOError):
            journal.splice_from(r, 65536)
        assert journal.replay().raw == b"hello world"
    finally:
        os.close(r)
        os.close(w)


def test_replay_through_scanner_restores_stripped_offsets(tmp_path: Path) -> None:
    """Replaying a rotated journal with a fresh scanner reproduces the stripped stream."""
    stream = b"".join(b"line %d\n" % i + INTRODUCER + b'{"n":%d}\x07' % i for i in range(300))
    journal = RawJournal(tmp_path, KEY, max_bytes=2000, resume=False)
    live = OscScanner()
    stripped = b""
    for i in range(0, len(stream), 37):
        journal.rotate_if_due(len(stripped), live.at_boundary)
        journal.append(stream[i : i + 37])
        stripped += live.feed(stream[i : i + 37]).output
    replay = RawJournal(tmp_path, KEY, max_bytes=2000, resume=True).replay()
    rebuilt = OscScanner().feed(replay.raw).output
    assert replay.start.raw > 0
    assert stripped[replay.start.stripped :] == rebuilt


def test_remove_deletes_every_file(tmp_path: Path) -> None:
    """Closing a session for good leaves no journal files behind."""
    journal = RawJournal(tmp_path, KEY, max_bytes=100, resume=False)
    journal.append(b"x" * 300)
    journal.remove()
    assert list(tmp_path.iterdir()) == []


def test_orphaned_journals_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    """At start, journals of sessions that did not survive are deleted."""
    RawJournal(tmp_path, "live", resume=False).append(b"keep")
    RawJournal(tmp_path, "lost", resume=False).append(b"drop")
    assert remove_orphans(tmp_path, {"live"}) == 1
    assert RawJournal(tmp_path, "live", resume=True).replay().raw == b"keep"
    assert len(list(tmp_path.iterdir())) == 2  # live's segment 0 and its meta


@pytest.mark.parametrize("damaged", [b"[]", b"null", b"42", b'"key"', b"{"])
def test_a_damaged_meta_file_starts_the_journal_afresh_and_is_swept(
    tmp_path: Path, damaged: bytes
) -> None:
    """Any JSON (or none) in a ``*.meta.json`` is no reason to crash: resume finds nothing."""
    journal = RawJournal(tmp_path, KEY, resume=False)
    journal.append(b"before")
    journal.close()
    (meta,) = tmp_path.glob("*.meta.json")
    meta.write_bytes(damaged)
    again = RawJournal(tmp_path, KEY, resume=True)
    assert again.raw_end == 0
    again.close()
    meta.write_bytes(damaged)
    assert remove_orphans(tmp_path, {KEY}) == 1  # its key cannot be read: unreachable


def test_journal_files_are_private_whatever_the_umask(tmp_path: Path) -> None:
    """Segments and meta are 0600 in a 0700 directory (terminal output is the user's)."""
    old = os.umask(0)
    try:
        RawJournal(tmp_path / "h", KEY, max_bytes=100, resume=False).append(b"x" * 300)
    finally:
        os.umask(old)
    assert (tmp_path / "h").stat().st_mode & 0o777 == 0o700
    modes = {
        p.name.rsplit(".", 1)[-1]: p.stat().st_mode & 0o777 for p in (tmp_path / "h").iterdir()
    }
    assert set(modes.values()) == {0o600} and "json" in modes


def test_spill_file_keeps_bytes_privately_and_says_when_it_cannot(tmp_path: Path) -> None:
    """``<h>.cold``: 0600; a refused write (here: its directory is gone) is False, not an
    exception; a removed file loads as None; discard is idempotent."""
    spill = SpillFile(tmp_path / "h")
    assert spill.save(b"packed") and spill.load() == b"packed"
    assert stat.S_IMODE(spill.path.stat().st_mode) == 0o600
    spill.discard()
    spill.discard()
    assert spill.load() is None
    assert not SpillFile(tmp_path / "missing" / "h").save(b"packed")
