"""The supervisor's files: the single-instance lock and rotating per-actor logs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.supervisor.lock import (
    SERVICE_MANAGER_ENV,
    AlreadyRunning,
    InstanceLock,
    service_manager,
)
from actors.supervisor.logs import RotatingLog
from orca.contracts.supervisor import (
    LockInfo,
    decode_lock_info,
    encode_lock_info,
    read_abandoned_lock_info,
    read_lock_info,
)

REPO = Path(__file__).resolve().parents[3]


def test_second_lock_holder_learns_who_holds_it(tmp_path: Path) -> None:
    """A second acquire fails with the holder's pid and endpoint; release frees it."""
    holder = LockInfo(pid=1234, endpoint="ipc://x", home="/h", started_at=1.5)
    first = InstanceLock(tmp_path / "orcad.lock")
    first.acquire(holder)
    with pytest.raises(AlreadyRunning) as info:
        InstanceLock(tmp_path / "orcad.lock").acquire(LockInfo(pid=5))
    assert info.value.info == holder
    assert read_lock_info(tmp_path / "orcad.lock") == holder
    first.release()
    assert read_lock_info(tmp_path / "orcad.lock") is None


def test_lock_file_is_the_documented_json(tmp_path: Path) -> None:
    """The writer's bytes are JSON {pid, endpoint, home, startedAt, manager} (older CLIs
    read the first four and ignore the rest)."""
    lock = InstanceLock(tmp_path / "orcad.lock")
    lock.acquire(LockInfo(pid=7, endpoint="ipc://e", home=None, started_at=2.0))
    try:
        raw = (tmp_path / "orcad.lock").read_bytes()
        assert json.loads(raw) == {
            "pid": 7,
            "endpoint": "ipc://e",
            "home": None,
            "startedAt": 2.0,
            "manager": None,
        }
    finally:
        lock.release()


def test_only_a_holder_that_died_without_releasing_leaves_an_abandoned_lock(
    tmp_path: Path,
) -> None:
    """Held: not abandoned. Released (an orderly stop empties the file): not abandoned.
    A holder that exits without releasing (kill -9, a crash): the file names it."""
    path = tmp_path / "orcad.lock"
    lock = InstanceLock(path)
    lock.acquire(LockInfo(pid=7, started_at=2.0))
    assert read_abandoned_lock_info(path) is None
    lock.release()
    assert read_abandoned_lock_info(path) is None
    crashed = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, sys; from pathlib import Path;"
            " from actors.supervisor.lock import InstanceLock;"
            " from orca.contracts.supervisor import LockInfo;"
            " InstanceLock(Path(sys.argv[1])).acquire(LockInfo(pid=os.getpid(), started_at=3.0));"
            " os._exit(1)",
            str(path),
        ],
        cwd=REPO,
    )
    assert crashed.wait(timeout=60) == 1
    assert read_lock_info(path) is None, "the kernel let go of the flock"
    assert read_abandoned_lock_info(path) == LockInfo(pid=crashed.pid, started_at=3.0)


def test_service_manager_is_named_or_detected_only_as_our_parent() -> None:
    """ORCA_SERVICE_MANAGER names it; INVOCATION_ID alone (a shell in a systemd-run
    terminal) is no manager unless systemd itself is orcad's parent."""
    assert service_manager({SERVICE_MANAGER_ENV: "runit"}) == "runit"
    assert service_manager({}) is None
    assert service_manager({"INVOCATION_ID": "abc"}) is None  # our parent is pytest


def test_held_lock_with_damaged_content_still_means_running(tmp_path: Path) -> None:
    """A held lock whose file is not LockInfo JSON names a holder with no pid, not nobody."""
    path = tmp_path / "orcad.lock"
    path.write_text("{not json")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR);"
            " fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()",
            str(path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=REPO,
        env=dict(os.environ),
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        assert read_lock_info(path) == LockInfo(pid=None)
    finally:
        holder.kill()
        holder.wait()
        for pipe in (holder.stdin, holder.stdout):
            if pipe is not None:
                pipe.close()


@given(
    st.builds(
        LockInfo,
        pid=st.none() | st.integers(min_value=1, max_value=2**22),
        endpoint=st.none() | st.text(),
        home=st.none() | st.text(),
        started_at=st.none() | st.floats(allow_nan=False, allow_infinity=False),
    )
)
def test_lock_info_round_trips(info: LockInfo) -> None:
    """decode_lock_info reads back exactly what encode_lock_info wrote."""
    assert decode_lock_info(encode_lock_info(info)) == info


@given(st.binary(max_size=200))
def test_any_lock_file_content_decodes_to_a_holder(raw: bytes) -> None:
    """Garbage in a held lock file never raises: it names a holder (pid unknown at worst)."""
    assert isinstance(decode_lock_info(raw), LockInfo)


def test_stale_lock_file_is_not_a_holder(tmp_path: Path) -> None:
    """A lock file left by a dead process (no flock held) does not block a new start."""
    (tmp_path / "orcad.lock").write_text('{"pid": 99999}')
    assert read_lock_info(tmp_path / "orcad.lock") is None
    InstanceLock(tmp_path / "orcad.lock").acquire(LockInfo(pid=1))


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


def test_unwritable_log_degrades_counts_and_recovers(tmp_path: Path) -> None:
    """A log that cannot be written drops and counts lines, never raises, and is written
    again once it can be (here: its directory vanished, then came back)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    log = RotatingLog(logs / "a.log", max_bytes=0, backups=1, retry_interval_s=0.0)
    log.write(b"one\n")
    assert log.health() is None
    (logs / "a.log").unlink()
    logs.rmdir()
    log.close()  # forget the fd: the next write must reopen (and fail)
    log.write(b"two\nthree\n")
    health = log.health()
    assert health is not None and health.dropped_lines == 2 and health.dropped_bytes == 10
    assert health.error is not None and "ENOENT" in health.error
    logs.mkdir()
    log.write(b"four\n")
    assert (logs / "a.log").read_bytes() == b"four\n"
    assert (logs / "a.log").stat().st_mode & 0o777 == 0o600
    health = log.health()
    assert health is not None and health.error is None and health.dropped_lines == 2
    log.close()


def test_a_degraded_log_retries_at_most_once_per_interval(tmp_path: Path) -> None:
    """Within the retry interval a degraded log drops output without touching the disk."""
    log = RotatingLog(tmp_path / "gone" / "a.log", max_bytes=0, backups=1, retry_interval_s=3600)
    (tmp_path / "gone").mkdir()
    log.write(b"x\n")
    assert not (tmp_path / "gone" / "a.log").exists(), "no retry before the interval"
    health = log.health()
    assert health is not None and health.dropped_lines == 1
