"""The supervisor's files: the single-instance lock and rotating per-actor logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.supervisor.lock import AlreadyRunning, InstanceLock, read_lock_info
from actors.supervisor.logs import RotatingLog


def test_second_lock_holder_learns_who_holds_it(tmp_path: Path) -> None:
    """A second acquire fails with the holder's pid and endpoint; release frees it."""
    first = InstanceLock(tmp_path / "orcad.lock")
    first.acquire({"pid": 1234, "endpoint": "ipc://x"})
    with pytest.raises(AlreadyRunning) as info:
        InstanceLock(tmp_path / "orcad.lock").acquire({"pid": 5})
    assert info.value.info == {"pid": 1234, "endpoint": "ipc://x"}
    assert read_lock_info(tmp_path / "orcad.lock") == {"pid": 1234, "endpoint": "ipc://x"}
    first.release()
    assert read_lock_info(tmp_path / "orcad.lock") is None


def test_stale_lock_file_is_not_a_holder(tmp_path: Path) -> None:
    """A lock file left by a dead process (no flock held) does not block a new start."""
    (tmp_path / "orcad.lock").write_text('{"pid": 99999}')
    assert read_lock_info(tmp_path / "orcad.lock") is None
    InstanceLock(tmp_path / "orcad.lock").acquire({"pid": 1})


def test_log_rotates_at_size_and_keeps_n_backups(tmp_path: Path) -> None:
    """Past max_bytes the log moves to .1, older ones shift, at most `backups` are kept."""
    log = RotatingLog(tmp_path / "a.log", max_bytes=100, backups=2)
    for i in range(7):
        log.write(f"{i}".encode() * 60)
    log.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["a.log", "a.log.1", "a.log.2"]
    assert (tmp_path / "a.log").read_bytes() == b"6" * 60
    assert (tmp_path / "a.log.1").read_bytes() == b"4" * 60 + b"5" * 60
    assert (tmp_path / "a.log.2").read_bytes() == b"2" * 60 + b"3" * 60
