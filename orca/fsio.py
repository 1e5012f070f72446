"""Crash-safe files: the one atomic write, the one private directory, the one lock.

Every file Orca rewrites (``orca-data.json`` and its backups, ``last-status.json``,
``endpoint.env``, the hook script, an agent's settings file, terminal-history metadata)
is replaced the same way, so all of them give the same guarantee:

1. write a temp file *in the same directory* (a rename across file systems is a copy),
   created exclusive with the target's final mode (never the umask's);
2. write all of it and ``fsync`` it (the data is on disk before any name points at it);
3. ``rename`` it over the target (atomic on POSIX: a reader sees old or new, never torn);
4. ``fsync`` the directory (the rename itself survives a power cut).

A crash at any step leaves the old file or the new one (seed 02 §13). The temp name
starts with ``.`` and ends ``.tmp`` so a start-up sweep can remove orphans.

Locks are ``flock`` on a file whose content names the holder: the kernel releases it
however the holder dies (``kill -9`` included), so a stale file is never a holder.

No trio here: the CLI and every actor import this module.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from pathlib import Path

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
TEMP_SUFFIX = ".tmp"


class UnsafeDirectory(OSError):
    """A directory Orca must keep private is owned by someone else (refused, never used)."""


def ensure_private_dir(path: Path, *, mode: int = PRIVATE_DIR_MODE) -> Path:
    """Create ``path`` (and missing parents, each with ``mode``), tighten it if wider,
    and check that we own it: a directory another user made could be swapped under us."""
    missing = [p for p in (path, *path.parents) if not os.path.lexists(p)]
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # a racing process of ours made it
            directory.mkdir(mode=mode)
            directory.chmod(mode)  # mkdir's mode is masked by the umask
    st = path.lstat()
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeDirectory(f"{path} is not a directory (a symlink or file is in its place)")
    if st.st_uid != os.geteuid():
        raise UnsafeDirectory(f"{path} is owned by uid {st.st_uid}, not by us ({os.geteuid()})")
    if st.st_mode & 0o777 != mode:
        path.chmod(mode)
    return path


def verify_ancestors(path: Path) -> None:
    """Refuse a path below a directory another user could rename things in: every
    existing ancestor must be ours or root's, and not group/other-writable unless
    sticky (``/tmp`` is 1777: others can add entries, but not replace ours)."""
    me = os.geteuid()
    for ancestor in path.absolute().parents:
        try:
            st = ancestor.stat()
        except FileNotFoundError:
            continue  # created by us, below an ancestor that passed
        if st.st_uid not in (me, 0):
            raise UnsafeDirectory(f"{ancestor} (above {path}) is owned by uid {st.st_uid}")
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            raise UnsafeDirectory(
                f"{ancestor} (above {path}) is writable by other users and not sticky"
            )


def temp_name(path: Path) -> Path:
    import secrets  # here: the CLI imports this module (lock files) and writes nothing

    return path.with_name(f".{path.name}.{secrets.token_hex(6)}{TEMP_SUFFIX}")


def write_all(fd: int, data: bytes | memoryview) -> None:
    """``os.write`` until every byte is written (a short write is not an error)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_temp(
    path: Path, data: bytes | memoryview, *, mode: int = PRIVATE_FILE_MODE, durable: bool = True
) -> Path:
    """Create a fresh temp file beside ``path`` holding ``data``, fsync'd unless not
    ``durable``; return its name. (The first two steps; ``write_atomic`` does all four.)
    On error nothing is left."""
    tmp = temp_name(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        try:
            os.fchmod(fd, mode)  # O_CREAT's mode is masked by the umask
            write_all(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return tmp


def write_atomic(
    path: Path,
    data: bytes | memoryview,
    *,
    mode: int = PRIVATE_FILE_MODE,
    private_parent: bool = False,
    durable: bool = True,
) -> None:
    """Replace ``path`` with ``data`` atomically and durably (the four steps above);
    ``private_parent`` first (re)creates and checks its directory (``ensure_private_dir``).
    ``durable=False`` skips both fsyncs (still atomic: a reader, or a process restarted
    after a crash, sees old or new): for caches that can be rebuilt, written where an
    fsync would stall an event loop.

    Raises ``OSError`` (ENOSPC, EIO...) with the old file untouched and no temp left.
    """
    if private_parent:
        ensure_private_dir(path.parent)
    tmp = write_temp(path, data, mode=mode, durable=durable)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    if durable:
        fsync_dir(path.parent)


def remove_orphan_temps(directory: Path, stem: str) -> int:
    """Delete temp files ``write_atomic`` left for ``stem`` by a crash; returns how many."""
    removed = 0
    for orphan in directory.glob(f".{stem}.*{TEMP_SUFFIX}"):
        with contextlib.suppress(FileNotFoundError):
            orphan.unlink()
            removed += 1
    return removed


class LockHeld(RuntimeError):
    """Another live process holds the lock; ``holder`` is what it wrote in the file."""

    def __init__(self, path: Path, holder: bytes | None) -> None:
        super().__init__(f"{path} is held by another process")
        self.path = path
        self.holder = holder


class FileLock:
    """An exclusive, non-blocking ``flock`` held for the life of the process."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self, holder: bytes) -> None:
        """Take the lock and write ``holder`` into the file; ``LockHeld`` if taken."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LockHeld(self.path, read_lock_holder(self.path)) from None
        try:
            os.fchmod(fd, PRIVATE_FILE_MODE)
            os.ftruncate(fd, 0)
            write_all(fd, holder)
            os.fsync(fd)
        except BaseException:
            os.close(fd)  # a full disk: let go of the lock too, or a retry finds us holding it
            raise
        self._fd = fd

    def release(self) -> None:
        """Let go (the content is cleared first, so a reader never sees a past holder)."""
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.close(self._fd)
            self._fd = None


def read_lock_holder(path: Path) -> bytes | None:
    """What the holder of ``path``'s lock wrote, or None if nobody holds it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # held: the content is the holder's
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        return os.read(fd, 65536)
    finally:
        os.close(fd)
