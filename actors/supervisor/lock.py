"""The single-instance lock: one ``orcad`` per profile (``ORCA_HOME``).

An ``flock`` on ``<runtime dir>/orcad.lock``, held for the life of the process, so the
kernel releases it however the process dies; the file says who holds it
(``orca.contracts.supervisor.LockInfo``, the one format, read by
``read_lock_info``), so a second ``orca up`` can say where the running instance is.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from orca.contracts.supervisor import LockInfo, encode_lock_info, read_lock_info


class AlreadyRunning(Exception):
    def __init__(self, info: LockInfo) -> None:
        super().__init__(f"orcad is already running (pid {info.pid})")
        self.info = info


class InstanceLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self, info: LockInfo) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise AlreadyRunning(read_lock_info(self.path) or LockInfo()) from None
        os.ftruncate(fd, 0)
        os.write(fd, encode_lock_info(info))
        os.fsync(fd)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.close(self._fd)
            self._fd = None
