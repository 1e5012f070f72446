"""The orchestration database file: ``data/orch/orch.sqlite3``, its schema, migrations.

Unlike the vault's index this file is an authority, not a cache (seed 02 §12): runs,
tasks, the spawn fence, messages and receipts exist nowhere else. Hence:

* WAL with ``synchronous=FULL``: a committed transition survives a power cut, and the
  fence's *intent* is on disk before the act it announces (seed 02 §13);
* STRICT tables; ``PRAGMA user_version`` numbers the schema and :data:`MIGRATIONS`
  takes an older file forward one transaction per step. A file *newer* than this build
  is refused (:class:`LedgerUnavailable`), never rebuilt over: it holds the only copy;
* the file is created 0600 in a 0700 directory checked by ``ensure_private_dir``
  (SQLite gives ``-wal``/``-shm`` the database's own mode).
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from orca import sqlite_schema
from orca.fsio import ensure_private_dir

log = logging.getLogger(__name__)

DB_NAME = "orch.sqlite3"
MIN_SQLITE = (3, 37, 0)  # STRICT tables

_V1 = """
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    repo_id TEXT NOT NULL,
    repo_label TEXT NOT NULL,
    prompt TEXT NOT NULL,
    base TEXT NOT NULL,
    check_cmd TEXT NOT NULL,
    state TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    revision INTEGER NOT NULL,
    merged_variant TEXT NOT NULL DEFAULT '',
    merge_commit TEXT NOT NULL DEFAULT '',
    create_key TEXT UNIQUE
) STRICT;
CREATE TABLE tasks (
    run_id TEXT NOT NULL,
    variant TEXT NOT NULL,
    agent TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    phase TEXT NOT NULL,
    failed TEXT NOT NULL DEFAULT '',
    archived INTEGER NOT NULL DEFAULT 0,
    removed INTEGER NOT NULL DEFAULT 0,
    worktree_name TEXT NOT NULL,
    worktree_id TEXT NOT NULL DEFAULT '',
    worktree_path TEXT NOT NULL DEFAULT '',
    branch TEXT NOT NULL DEFAULT '',
    pane_key TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL DEFAULT '',
    launch_sha TEXT NOT NULL DEFAULT '',
    pid INTEGER NOT NULL DEFAULT 0,
    spawned_ms INTEGER,
    prompted_ms INTEGER,
    idle_ms INTEGER,
    check_exit INTEGER,
    check_tail TEXT NOT NULL DEFAULT '',
    check_ms INTEGER,
    check_duration_ms INTEGER,
    report TEXT NOT NULL DEFAULT '',
    report_status TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, variant)
) STRICT;
CREATE TABLE dispatches (
    key TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    variant TEXT NOT NULL,
    step TEXT NOT NULL,
    intent_ms INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 1,
    outcome TEXT,
    result TEXT,
    done_ms INTEGER
) STRICT;
CREATE TABLE messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    run_id TEXT NOT NULL,
    sender TEXT NOT NULL,
    recipient TEXT NOT NULL,
    body TEXT NOT NULL,
    created_ms INTEGER NOT NULL
) STRICT;
CREATE TABLE deliveries (
    run_id TEXT NOT NULL,
    variant TEXT NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (run_id, variant, seq)
) STRICT;
CREATE TABLE cursors (
    run_id TEXT NOT NULL,
    variant TEXT NOT NULL,
    acked INTEGER NOT NULL,
    PRIMARY KEY (run_id, variant)
) STRICT;
CREATE TABLE receipts (
    key TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    result TEXT NOT NULL,
    created_ms INTEGER NOT NULL
) STRICT;
CREATE TABLE agent_sessions (
    pane_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    seen_ms INTEGER NOT NULL,
    PRIMARY KEY (pane_key, session_id)
) STRICT;
"""

# MIGRATIONS[i] takes user_version i to i + 1.
MIGRATIONS: tuple[str, ...] = (_V1,)
SCHEMA_VERSION = len(MIGRATIONS)


class LedgerUnavailable(RuntimeError):
    """The database cannot be opened by this build (SQLite too old, a newer schema)."""


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30.0)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def migrate(conn: sqlite3.Connection) -> None:
    if not sqlite_schema.migrate(conn, MIGRATIONS, DB_NAME):
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        raise LedgerUnavailable(
            f"schema {version} is newer than this build's {SCHEMA_VERSION}: upgrade Orca"
        )


def open_db(directory: Path) -> tuple[Path, sqlite3.Connection]:
    """The database under ``directory`` (0700), created 0600, migrated."""
    if sqlite3.sqlite_version_info < MIN_SQLITE:
        raise LedgerUnavailable(f"SQLite {sqlite3.sqlite_version} is older than 3.37")
    ensure_private_dir(directory)
    path = directory / DB_NAME
    sqlite_schema.create_private(path)
    conn = connect(path)
    try:
        migrate(conn)
    except BaseException:
        conn.close()
        raise
    return path, conn
