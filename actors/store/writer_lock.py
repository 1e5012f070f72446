"""The single-writer lock: at most one store process owns ``orca-data.json``.

The generation fence in ``durable_file`` orders saves inside one process; two store
processes would each believe their own state, so the second one must refuse to start.
``flock`` is released by the kernel when the holder dies, even by ``kill -9``, so a
crashed store never blocks its replacement.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class StoreAlreadyRunning(RuntimeError):
    """Another live process holds the store's writer lock (operator error)."""


class WriterLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock without waiting; raise ``StoreAlreadyRunning`` if held."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            os.close(fd)
            raise StoreAlreadyRunning(f"{self.path} is held by another store process") from exc
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
