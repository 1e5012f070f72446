"""Per-actor log files with size-based rotation, written by the supervisor.

Each actor's stdout and stderr (tracebacks included) arrive on one pipe; the
supervisor appends them to ``<log dir>/<actor>.log`` and rotates it to ``.1``..``.N``
when it passes the size limit. One writer per file, so rotation never races.

A log is never worth an actor. When the disk is full or failing (ENOSPC, EDQUOT, EIO,
EFBIG, a log dir that vanished) the writer degrades instead of raising: it drops what it
cannot write, counts the dropped bytes and lines, remembers the error, and tries again
at most every ``RETRY_INTERVAL_S`` (the next chunk after that, so a full disk costs one
failed syscall per interval, not one per line). The supervisor keeps reading the pipe
meanwhile, so an actor never blocks on its own stderr. ``health()`` is what
``sup.status`` reports (``orca status`` prints it); counts are cumulative, ``error`` is
cleared by the first write that succeeds again.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import time
from pathlib import Path

from orca.contracts.supervisor import LogHealth
from orca.fsio import PRIVATE_FILE_MODE

log = logging.getLogger(__name__)

# How often a degraded log retries the disk: often enough that lines come back within
# a second or two of space being freed, rarely enough to cost nothing while it is full.
RETRY_INTERVAL_S = 1.0
_OPEN_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC


def _describe(exc: OSError) -> str:
    name = errno.errorcode.get(exc.errno or 0, "error")
    return f"{name}: {exc.strerror or exc}"


class RotatingLog:
    def __init__(
        self,
        path: Path,
        max_bytes: int,
        backups: int,
        *,
        retry_interval_s: float = RETRY_INTERVAL_S,
    ) -> None:
        self.path = path
        self.retry_interval_s = retry_interval_s
        self.max_bytes = max_bytes
        self.backups = backups
        self._fd: int | None = None
        self._size = 0
        self.dropped_bytes = 0
        self.dropped_lines = 0
        self.error: str | None = None
        self._retry_at = 0.0
        self._reopen()

    # -- the degraded state ----------------------------------------------------------
    def _fail(self, exc: OSError, data: bytes | bytearray | memoryview) -> None:
        """Drop ``data`` (what could not be written), count it, retry later."""
        self.dropped_bytes += len(data)
        self.dropped_lines += bytes(data).count(b"\n") or (1 if data else 0)
        description = _describe(exc)
        if self.error is None:
            log.warning(
                "log %s: %s: dropping lines until it can be written", self.path, description
            )
        self.error = description
        self._retry_at = time.monotonic() + self.retry_interval_s

    def _reopen(self) -> bool:
        if self._fd is not None:
            return True
        try:
            fd = os.open(self.path, _OPEN_FLAGS, PRIVATE_FILE_MODE)
        except OSError as exc:
            self._fail(exc, b"")
            return False
        try:
            os.fchmod(fd, PRIVATE_FILE_MODE)  # O_CREAT's mode is masked by the umask
            self._size = os.fstat(fd).st_size
        except OSError as exc:
            os.close(fd)
            self._fail(exc, b"")
            return False
        self._fd = fd
        return True

    def health(self) -> LogHealth | None:
        """Dropped counts and the current error; None while nothing was ever dropped."""
        if not self.dropped_bytes and self.error is None:
            return None
        return LogHealth(
            dropped_bytes=self.dropped_bytes, dropped_lines=self.dropped_lines, error=self.error
        )

    # -- writing -----------------------------------------------------------------------
    def write(self, data: bytes | bytearray) -> None:
        """Append ``data``; on a disk error drop it and degrade (never raises OSError)."""
        if self.error is not None and time.monotonic() < self._retry_at:
            self._fail_quietly(data)
            return
        if not self._reopen():
            self._fail_quietly(data)
            return
        assert self._fd is not None
        view = memoryview(data)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
                self._size += written
        except OSError as exc:
            self._fail(exc, view)
            self._close_fd()  # the retry reopens: the file may be gone, the fd broken (EIO)
            return
        if self.error is not None:
            log.warning(
                "log %s: writing again (%d lines dropped in all)", self.path, self.dropped_lines
            )
            self.error = None
        if self.max_bytes and self._size >= self.max_bytes:
            self.rotate()

    def _fail_quietly(self, data: bytes | bytearray) -> None:
        self.dropped_bytes += len(data)
        self.dropped_lines += data.count(b"\n") or (1 if data else 0)

    def rotate(self) -> None:
        """Shift ``.1``..``.N`` up and start a fresh file; a failed rename degrades."""
        self._close_fd()
        try:
            for i in range(self.backups - 1, 0, -1):
                src = self.path.with_name(f"{self.path.name}.{i}")
                if src.exists():
                    src.replace(self.path.with_name(f"{self.path.name}.{i + 1}"))
            if self.backups > 0:
                self.path.replace(self.path.with_name(f"{self.path.name}.1"))
            else:
                self.path.unlink(missing_ok=True)
        except OSError as exc:
            self._fail(exc, b"")
            return
        self._reopen()

    def _close_fd(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):  # EIO on close: the data is gone either way
                os.close(fd)

    def close(self) -> None:
        self._close_fd()
