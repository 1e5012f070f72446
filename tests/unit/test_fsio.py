"""The one crash-safe write, private directory and lock (orca.fsio)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from orca import fsio


def test_write_atomic_replaces_the_file_with_its_own_mode_whatever_the_umask(
    tmp_path: Path,
) -> None:
    """The new content is in place with the requested mode, and no temp file remains."""
    target = tmp_path / "state.json"
    target.write_bytes(b"old")
    old_umask = os.umask(0)
    try:
        fsio.write_atomic(target, b"new", mode=0o600)
    finally:
        os.umask(old_umask)
    assert target.read_bytes() == b"new"
    assert target.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC during fsync: the caller gets the OSError, the old bytes stay, nothing is left."""
    target = tmp_path / "state.json"
    target.write_bytes(b"old")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fsio.os, "fsync", full)
    with pytest.raises(OSError) as caught:
        fsio.write_atomic(target, b"new")
    assert caught.value.errno == errno.ENOSPC
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_orphan_temps_of_a_crashed_write_are_swept(tmp_path: Path) -> None:
    """A temp left by a crash between write and rename is found by its stem and removed."""
    target = tmp_path / "state.json"
    orphan = fsio.write_temp(target, b"half")
    (tmp_path / "other.json").write_bytes(b"x")
    assert fsio.remove_orphan_temps(tmp_path, "state.json") == 1
    assert not orphan.exists() and (tmp_path / "other.json").exists()


def test_private_dir_is_created_and_tightened(tmp_path: Path) -> None:
    """0700 on creation; a wider existing mode is tightened."""
    made = fsio.ensure_private_dir(tmp_path / "a" / "b")
    assert made.stat().st_mode & 0o777 == 0o700
    wide = tmp_path / "wide"
    wide.mkdir(mode=0o777)
    wide.chmod(0o777)
    fsio.ensure_private_dir(wide)
    assert wide.stat().st_mode & 0o777 == 0o700


@pytest.mark.skipif(os.geteuid() != 0, reason="making a directory another user owns needs root")
def test_a_private_dir_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    """A directory someone else created (and could swap things in) is never used."""
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    with pytest.raises(fsio.UnsafeDirectory, match="owned by uid 65534"):
        fsio.ensure_private_dir(theirs)


def test_a_symlink_in_place_of_a_private_dir_is_refused(tmp_path: Path) -> None:
    """A link planted where the directory should be is not followed."""
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "run").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(fsio.UnsafeDirectory, match="not a directory"):
        fsio.ensure_private_dir(tmp_path / "run")


def test_a_second_holder_is_refused_and_told_who_holds_it(tmp_path: Path) -> None:
    """The lock is exclusive; the refusal carries the holder's note; release frees it."""
    path = tmp_path / "x.lock"
    first = fsio.FileLock(path)
    first.acquire(b'{"pid": 1}')
    second = fsio.FileLock(path)
    with pytest.raises(fsio.LockHeld) as caught:
        second.acquire(b"me")
    assert caught.value.holder == b'{"pid": 1}'
    assert fsio.read_lock_holder(path) == b'{"pid": 1}'
    first.release()
    assert fsio.read_lock_holder(path) is None
    second.acquire(b"me")
    assert second.held and path.stat().st_mode & 0o777 == 0o600
    second.release()


def test_a_cache_write_skips_fsync_but_stays_atomic(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``durable=False``: no fsync at all (it would stall a loop), the rename still atomic."""
    target = tmp_path / "model.ckpt"
    target.write_bytes(b"old")
    calls: list[int] = []
    monkeypatch.setattr(fsio.os, "fsync", lambda fd: calls.append(fd))
    fsio.write_atomic(target, b"new", durable=False)
    assert target.read_bytes() == b"new" and calls == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.ckpt"]
    fsio.write_atomic(target, b"newer")
    assert len(calls) == 2  # the durable default: the file and its directory
