"""The single-writer lock: at most one store process owns ``orca-data.json``.

The generation fence in ``durable_file`` orders saves inside one process; two store
processes would each believe their own state, so the second one must refuse to start.
It is an ``orca.fsio.FileLock`` (``flock``), released by the kernel when the holder
dies, even by ``kill -9``, so a crashed store never blocks its replacement.
"""

from __future__ import annotations

import os
from pathlib import Path

from orca.fsio import FileLock, LockHeld


class StoreAlreadyRunning(RuntimeError):
    """Another live process holds the store's writer lock (operator error)."""


class WriterLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = FileLock(path)

    def acquire(self) -> None:
        """Take the lock without waiting; raise ``StoreAlreadyRunning`` if held."""
        try:
            self._lock.acquire(f"{os.getpid()}\n".encode())
        except LockHeld as exc:
            raise StoreAlreadyRunning(f"{self.path} is held by another store process") from exc

    def release(self) -> None:
        self._lock.release()
