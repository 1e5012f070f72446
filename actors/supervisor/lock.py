"""The single-instance lock: one ``orcad`` per profile (``ORCA_HOME``).

An ``flock`` on ``<runtime dir>/orcad.lock`` (``orca.fsio.FileLock``), held for the life
of the process, so the kernel releases it however the process dies; the file says who
holds it (``orca.contracts.supervisor.LockInfo``, the one format, read by
``read_lock_info``), so a second ``orca up`` can say where the running instance is.
"""

from __future__ import annotations

from pathlib import Path

from orca.contracts.supervisor import LockInfo, decode_lock_info, encode_lock_info
from orca.fsio import FileLock, LockHeld


class AlreadyRunning(Exception):
    def __init__(self, info: LockInfo) -> None:
        super().__init__(f"orcad is already running (pid {info.pid})")
        self.info = info


class InstanceLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = FileLock(path)

    def acquire(self, info: LockInfo) -> None:
        try:
            self._lock.acquire(encode_lock_info(info))
        except LockHeld as held:
            holder = LockInfo() if held.holder is None else decode_lock_info(held.holder)
            raise AlreadyRunning(holder) from None

    def release(self) -> None:
        self._lock.release()
