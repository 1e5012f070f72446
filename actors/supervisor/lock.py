"""The single-instance lock: one ``orcad`` per profile (``ORCA_HOME``).

An ``flock`` on ``<runtime dir>/orcad.lock``, held for the life of the process, so the
kernel releases it however the process dies; the file says who holds it, so a second
``orca up`` can say where the running instance is.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import Any


class AlreadyRunning(Exception):
    def __init__(self, info: dict[str, Any]) -> None:
        super().__init__(f"orcad is already running (pid {info.get('pid')})")
        self.info = info


def read_lock_info(path: Path) -> dict[str, Any] | None:
    """Who holds the lock, or None if nobody does (a stale file is not a holder)."""
    try:
        fd = os.open(path, os.O_RDONLY)
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
        raw = os.read(fd, 65536)
    finally:
        os.close(fd)
    try:
        info = json.loads(raw)
    except ValueError:
        return {"pid": None}
    return info if isinstance(info, dict) else {"pid": None}


class InstanceLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self, info: dict[str, Any]) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise AlreadyRunning(read_lock_info(self.path) or {"pid": None}) from None
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(info).encode())
        os.fsync(fd)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.close(self._fd)
            self._fd = None
