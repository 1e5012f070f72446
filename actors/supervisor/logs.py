"""Per-actor log files with size-based rotation, written by the supervisor.

Each actor's stdout and stderr (tracebacks included) arrive on one pipe; the
supervisor appends them to ``<log dir>/<actor>.log`` and rotates it to ``.1``..``.N``
when it passes the size limit. One writer per file, so rotation never races.
"""

from __future__ import annotations

import os
from pathlib import Path


class RotatingLog:
    def __init__(self, path: Path, max_bytes: int, backups: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backups = backups
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._size = os.fstat(self._fd).st_size

    def write(self, data: bytes | bytearray) -> None:
        os.write(self._fd, data)
        self._size += len(data)
        if self.max_bytes and self._size >= self.max_bytes:
            self.rotate()

    def rotate(self) -> None:
        os.close(self._fd)
        for i in range(self.backups - 1, 0, -1):
            src = self.path.with_name(f"{self.path.name}.{i}")
            if src.exists():
                src.replace(self.path.with_name(f"{self.path.name}.{i + 1}"))
        if self.backups > 0:
            self.path.replace(self.path.with_name(f"{self.path.name}.1"))
        else:
            self.path.unlink(missing_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._size = 0

    def close(self) -> None:
        os.close(self._fd)
