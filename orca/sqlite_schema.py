"""What every SQLite file Orca owns shares (the vault's index, orch's database).

A file is created 0600 before SQLite opens it (SQLite would make it with the umask's
mode), and is brought to its schema by ``PRAGMA user_version`` migrations, one
transaction per step (``executescript`` would commit on its own, so a script is run
statement by statement).
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from orca.fsio import PRIVATE_FILE_MODE

log = logging.getLogger(__name__)


def create_private(path: Path) -> None:
    """``path`` exists, 0600 (never followed through a symlink)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, PRIVATE_FILE_MODE)
    os.close(fd)
    if path.stat().st_mode & 0o777 != PRIVATE_FILE_MODE:
        path.chmod(PRIVATE_FILE_MODE)


def statements(script: str) -> list[str]:
    """``script`` split into its statements."""
    out: list[str] = []
    current = ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            if current.strip():
                out.append(current.strip())
            current = ""
    return out


def migrate(conn: sqlite3.Connection, migrations: Sequence[str], name: str) -> bool:
    """Bring the file to ``len(migrations)``; False (nothing done) if it is newer."""
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if version > len(migrations):
        return False
    for step in range(version, len(migrations)):
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in statements(migrations[step]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {step + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        log.info("%s: schema %d -> %d", name, step, step + 1)
    return True
