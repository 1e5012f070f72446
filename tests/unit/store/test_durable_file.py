"""DurableFile: atomic saves, generation fence, hash skip, backup ring, recovery on load."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.store.durable_file import (
    DurableFile,
    OsFileWriter,
    SaveFailed,
    SaveSkippedStale,
    SaveSkippedUnchanged,
    SaveWritten,
)


def parse_json(raw: bytes) -> object:
    return json.loads(raw)


def doc(n: int) -> bytes:
    return json.dumps({"n": n, "pad": "x" * 64}).encode()


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class FailingWriter:
    """The file-write primitive failing with a chosen errno for the next ``count`` calls."""

    def __init__(self, code: int, count: int = 1) -> None:
        self.code = code
        self.count = count
        self.inner = OsFileWriter()

    def write_new_file(self, path: Path, data: bytes) -> None:
        if self.count > 0:
            self.count -= 1
            # A partial write first, as a full disk would leave it.
            path.write_bytes(data[: len(data) // 2])
            raise OSError(self.code, os.strerror(self.code), str(path))
        self.inner.write_new_file(path, data)


def test_save_then_load_round_trips(tmp_path: Path) -> None:
    """What a save commits is what the next load returns, from the primary."""
    f = DurableFile(tmp_path / "orca-data.json")
    assert isinstance(f.save(doc(1), 1), SaveWritten)
    value, report = DurableFile(tmp_path / "orca-data.json").load(parse_json)
    assert value == json.loads(doc(1))
    assert report.source == "primary" and not report.recovered


def test_unchanged_content_is_not_rewritten(tmp_path: Path) -> None:
    """A save whose content hash matches the committed file touches nothing (seed 02 §4)."""
    path = tmp_path / "orca-data.json"
    f = DurableFile(path)
    f.save(doc(1), 1)
    before = path.stat()
    assert isinstance(f.save(doc(1), 2), SaveSkippedUnchanged)
    after = path.stat()
    assert (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns)
    assert f.statistics().writes == 1


def test_loaded_primary_counts_as_committed(tmp_path: Path) -> None:
    """Re-saving exactly what was loaded writes nothing: idle start-up has no disk write."""
    path = tmp_path / "orca-data.json"
    DurableFile(path).save(doc(3), 1)
    f = DurableFile(path)
    f.load(parse_json)
    assert isinstance(f.save(doc(3), 1), SaveSkippedUnchanged)


def test_stale_generation_never_replaces_newer(tmp_path: Path) -> None:
    """A save older than the committed generation is dropped, not renamed over it."""
    path = tmp_path / "orca-data.json"
    f = DurableFile(path)
    f.save(doc(5), 5)
    outcome = f.save(doc(4), 4)
    assert outcome == SaveSkippedStale(4, 5)
    assert json.loads(path.read_bytes())["n"] == 5


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=12))
def test_disk_holds_highest_generation_whatever_the_order(gens: list[int]) -> None:
    """Whatever order saves arrive in, the file ends with the highest generation's bytes."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "orca-data.json"
        f = DurableFile(path)
        for g in gens:
            f.save(doc(g), g)
        assert json.loads(path.read_bytes())["n"] == max(gens)


def test_concurrent_saves_from_threads_keep_the_newest(tmp_path: Path) -> None:
    """Saves racing in worker threads never leave an older generation on disk."""
    path = tmp_path / "orca-data.json"
    f = DurableFile(path)
    barrier = threading.Barrier(8)

    def worker(g: int) -> None:
        barrier.wait()
        f.save(doc(g), g)

    threads = [threading.Thread(target=worker, args=(g,)) for g in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert json.loads(path.read_bytes())["n"] == 8
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_backup_ring_rotates_at_most_once_per_interval(tmp_path: Path) -> None:
    """Backups are taken after a successful write, at most one per hour (seed 02 §4)."""
    clock = Clock()
    f = DurableFile(tmp_path / "orca-data.json", wall_clock=clock)
    for n in range(1, 4):
        f.save(doc(n), n)
    assert json.loads(f.backup_path(0).read_bytes())["n"] == 1
    assert not f.backup_path(1).exists()
    clock.now += 3601
    f.save(doc(4), 4)
    assert json.loads(f.backup_path(0).read_bytes())["n"] == 4
    assert json.loads(f.backup_path(1).read_bytes())["n"] == 1


def test_a_burst_of_forced_backups_keeps_the_older_ring(tmp_path: Path) -> None:
    """Seed 02-09: six structural changes 1.3 s apart (six `worktree create`) left
    .bak.0-.bak.4 all from the last 8 s; a forced copy within the interval now replaces
    the newest copy, and the older ones stay one interval apart."""
    clock = Clock()
    f = DurableFile(tmp_path / "orca-data.json", wall_clock=clock)
    for n in (1, 2, 3):
        clock.now += 3601
        f.save(doc(n), n)
    for n in range(4, 10):
        clock.now += 1.3
        f.save(doc(n), n, backup="force")
    ring = [json.loads(f.backup_path(i).read_bytes())["n"] for i in range(3)]
    assert ring == [9, 2, 1] and not f.backup_path(3).exists()  # (was [9, 8, 7, 6, 5])
    clock.now += 3601
    f.save(doc(10), 10, backup="force")  # the interval passed: the ring moves on
    ring = [json.loads(f.backup_path(i).read_bytes())["n"] for i in range(4)]
    assert ring == [10, 9, 2, 1]


def test_backup_ring_keeps_five_newest(tmp_path: Path) -> None:
    """The ring holds five copies; the oldest falls off."""
    clock = Clock()
    f = DurableFile(tmp_path / "orca-data.json", wall_clock=clock)
    for n in range(1, 9):
        clock.now += 3601
        f.save(doc(n), n)
    ring = [json.loads(f.backup_path(i).read_bytes())["n"] for i in range(5)]
    assert ring == [8, 7, 6, 5, 4]
    assert not f.backup_path(5).exists()


def _seed_ring(tmp_path: Path) -> DurableFile:
    clock = Clock()
    f = DurableFile(tmp_path / "orca-data.json", wall_clock=clock)
    for n in (1, 2):
        clock.now += 3601
        f.save(doc(n), n)
    f.save(doc(3), 3)  # primary is newer than the newest backup
    return f


def test_truncated_primary_loads_newest_backup_and_keeps_it_aside(tmp_path: Path) -> None:
    """A torn primary is moved to .corrupt-<ts> and the newest parsable backup loads."""
    f = _seed_ring(tmp_path)
    raw = f.path.read_bytes()
    f.path.write_bytes(raw[: len(raw) // 2])
    value, report = DurableFile(f.path).load(parse_json)
    assert value == json.loads(doc(2))
    assert report.source == "backup" and report.loaded_from == "orca-data.json.bak.0"
    assert report.corrupt_kept_as is not None
    assert (tmp_path / report.corrupt_kept_as).read_bytes() == raw[: len(raw) // 2]
    assert not f.path.exists()
    assert report.problems and "does not parse" in report.problems[0]


def test_garbage_primary_and_garbage_newest_backup_fall_back_further(tmp_path: Path) -> None:
    """Garbage in the primary and in .bak.0 loads .bak.1; each rejection is reported."""
    f = _seed_ring(tmp_path)
    f.path.write_bytes(b"\x00\xffgarbage")
    f.backup_path(0).write_bytes(b"{not json")
    value, report = DurableFile(f.path).load(parse_json)
    assert value == json.loads(doc(1))
    assert report.loaded_from == "orca-data.json.bak.1"
    assert len(report.problems) == 2


def test_recovered_state_is_written_back_to_primary(tmp_path: Path) -> None:
    """After a recovery the next save rewrites the primary even with the backup's bytes."""
    f = _seed_ring(tmp_path)
    f.path.write_bytes(b"")
    g = DurableFile(f.path)
    g.load(parse_json)
    assert isinstance(g.save(doc(2), 1), SaveWritten)
    assert json.loads(f.path.read_bytes())["n"] == 2


def test_no_valid_copy_reports_and_returns_none(tmp_path: Path) -> None:
    """With every copy corrupt, load returns nothing and says so."""
    path = tmp_path / "orca-data.json"
    path.write_bytes(b"]]")
    value, report = DurableFile(path).load(parse_json)
    assert value is None and report.source == "no_valid_copy" and report.recovered


def test_missing_primary_is_a_fresh_start(tmp_path: Path) -> None:
    """No primary means defaults; backups are not resurrected."""
    f = _seed_ring(tmp_path)
    f.path.unlink()
    value, report = DurableFile(f.path).load(parse_json)
    assert value is None and report.source == "missing" and not report.recovered


def test_orphan_temp_files_are_swept_on_load(tmp_path: Path) -> None:
    """Temp files left by a crash mid-save are deleted at start."""
    path = tmp_path / "orca-data.json"
    DurableFile(path).save(doc(1), 1)
    (tmp_path / "orca-data.json.tmp-999-1").write_bytes(b"half")
    (tmp_path / "orca-data.json.bak.0.tmp-999-2").write_bytes(b"half")
    (tmp_path / "unrelated.txt").write_bytes(b"keep")
    _, report = DurableFile(path).load(parse_json)
    assert report.swept_temp_files == 2
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["orca-data.json", "orca-data.json.bak.0", "unrelated.txt"]


def test_eio_while_saving_keeps_last_good_file_then_retry_succeeds(tmp_path: Path) -> None:
    """EIO from the write primitive leaves the old primary, reports EIO, and a retry works."""
    path = tmp_path / "orca-data.json"
    writer = FailingWriter(errno.EIO)
    f = DurableFile(path, writer=writer)
    writer.count = 0
    f.save(doc(1), 1)
    writer.count = 1
    outcome = f.save(doc(2), 2)
    assert isinstance(outcome, SaveFailed) and outcome.error.errno_name == "EIO"
    assert json.loads(path.read_bytes())["n"] == 1
    assert f.statistics().last_error is not None
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]
    assert isinstance(f.save(doc(2), 2), SaveWritten)
    assert f.statistics().last_error is None


def test_failed_backup_leaves_ring_and_primary_intact(tmp_path: Path) -> None:
    """A backup that cannot be written does not fail the save nor disturb the ring."""
    clock = Clock()
    writer = FailingWriter(errno.ENOSPC, count=0)
    f = DurableFile(tmp_path / "orca-data.json", writer=writer, wall_clock=clock)
    f.save(doc(1), 1)
    clock.now += 3601

    class FailSecond:
        def __init__(self) -> None:
            self.calls = 0

        def write_new_file(self, path: Path, data: bytes) -> None:
            self.calls += 1
            if self.calls == 2:
                raise OSError(errno.ENOSPC, "full")
            OsFileWriter().write_new_file(path, data)

    f._writer = FailSecond()
    assert isinstance(f.save(doc(2), 2), SaveWritten)
    assert json.loads(f.backup_path(0).read_bytes())["n"] == 1
    stats = f.statistics()
    assert stats.last_backup_error is not None and stats.last_backup_error.errno_name == "ENOSPC"


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "tiny"
    mount.mkdir()
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_real_enospc_keeps_old_file_and_reports(tiny_tmpfs: Path) -> None:
    """On a genuinely full filesystem the old primary survives and ENOSPC is reported."""
    path = tiny_tmpfs / "orca-data.json"
    f = DurableFile(path)
    f.save(doc(1), 1)
    good = path.read_bytes()
    outcome = f.save(b'{"big": "' + b"y" * 200_000 + b'"}', 2)
    assert isinstance(outcome, SaveFailed) and outcome.error.errno_name == "ENOSPC"
    assert path.read_bytes() == good
    assert not [p for p in tiny_tmpfs.iterdir() if ".tmp-" in p.name]
    value, report = DurableFile(path).load(parse_json)
    assert value == json.loads(good) and report.source == "primary"


def test_second_writer_lock_is_refused_until_the_first_is_released(tmp_path: Path) -> None:
    """Only one store process may own the state file at a time."""
    from actors.store.writer_lock import StoreAlreadyRunning, WriterLock

    first = WriterLock(tmp_path / "store.lock")
    first.acquire()
    with pytest.raises(StoreAlreadyRunning):
        WriterLock(tmp_path / "store.lock").acquire()
    first.release()
    second = WriterLock(tmp_path / "store.lock")
    second.acquire()
    second.release()


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=64))
def test_any_bytes_in_the_primary_load_as_themselves_or_from_the_backup(junk: bytes) -> None:
    """Whatever the primary holds, load never raises: it parses or the backup serves."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "orca-data.json"
        DurableFile(path).save(doc(1), 1)
        path.write_bytes(junk)
        value, report = DurableFile(path).load(parse_json)
        if report.source == "primary":
            assert value == json.loads(junk)
        else:
            assert report.source == "backup" and value == json.loads(doc(1))
            assert report.corrupt_kept_as is not None
