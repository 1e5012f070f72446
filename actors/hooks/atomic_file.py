"""Private, atomic files under ``agent-hooks/`` (no trio: the CLI imports this).

Files here hold a secret (``endpoint.env``) or the user's activity, so the directory is
0700 and every file 0600. A write is temp file (created 0600, exclusive) + fsync +
rename + directory fsync: a crash leaves either the old file or the new one, never a
torn one (seed 02 §13 "文件临时写了一半").
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` 0700, tightening it if it already exists with wider modes."""
    path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    if path.stat().st_mode & 0o777 != DIR_MODE:
        path.chmod(DIR_MODE)


def write_file_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably, mode 0600."""
    ensure_private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
