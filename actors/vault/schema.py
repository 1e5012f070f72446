"""The index file: one SQLite database, its schema and its migrations.

The index is a cache (seed 02 §11: "可丢弃缓存"): every row can be rebuilt from the
agents' own transcripts, so the file can always be thrown away. That decides the
choices here:

* WAL (readers never wait for the writer: a search runs while a file is indexed) and
  ``synchronous=NORMAL`` (a power cut may lose the last commits; the next scan reads
  those lines again from the transcripts, whose offsets were lost with them);
* STRICT tables (a wrong type is an error at the insert, not a surprise at a query);
* ``PRAGMA user_version`` numbers the schema; :data:`MIGRATIONS` takes a file from
  any older version to :data:`SCHEMA_VERSION` in order, each step in one transaction.
  A file *newer* than this build (written by a later Orca, then downgraded) is never
  opened: :func:`open_index` renames it aside and starts an empty index, which the
  scan fills again;
* one FTS5 table over ``entries.text``, tokenized ``unicode61`` with ``_ . - /`` as
  token characters, so ``src/app.py``, ``fix-login`` and ``TOKEN_LIMIT`` are each one
  token (searchable whole), not four. It is contentless and fed by triggers with
  ``vault_indexed_text(text)`` (``terms.indexed_text``: the row as shown, a sentence's
  final full stop cut off its last word), a Python function every connection
  registers (:func:`connect`). The table is not built by a migration but by
  :func:`ensure_text_rules`, from the rules' fingerprint (``meta.text_rules``): FTS5
  removes a row only with the tokens it was given, so an index built under other rules
  is emptied (rows, token counts, read marks) and the scan reads every transcript
  again. Schema 2 introduced this, so an older build (whose connections lack the
  function) sets such a file aside instead of failing on every insert;
* ``AUTOINCREMENT`` on entries: a row id is never reused, so a paging cursor
  (``rowid < N``) never lands on a row that was not there when the search began.

The file is created 0600 in a 0700 directory (SQLite gives the ``-wal``/``-shm``
files the database's own mode).
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import time
from pathlib import Path

from actors.vault.terms import INDEXED_TEXT_SQL, TEXT_RULES, TOKENIZER, indexed_text
from orca import sqlite_schema
from orca.fsio import ensure_private_dir

log = logging.getLogger(__name__)

INDEX_NAME = "index.sqlite3"
# STRICT tables arrived in SQLite 3.37 (2021-11).
MIN_SQLITE = (3, 37, 0)

_V1 = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) STRICT;
INSERT INTO meta VALUES ('generation', 1), ('revision', 0);
CREATE TABLE transcripts (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    agent TEXT NOT NULL,
    dev INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    offset INTEGER NOT NULL,
    mid_line INTEGER NOT NULL DEFAULT 0,
    head_len INTEGER NOT NULL DEFAULT 0,
    head_hash TEXT NOT NULL DEFAULT '',
    session_id TEXT NOT NULL DEFAULT '',
    cwd TEXT NOT NULL DEFAULT '',
    project_hash TEXT NOT NULL DEFAULT '',
    title TEXT NOT NULL DEFAULT '',
    facts TEXT NOT NULL DEFAULT '{{}}',
    first_ts INTEGER NOT NULL DEFAULT 0,
    last_ts INTEGER NOT NULL DEFAULT 0,
    entries INTEGER NOT NULL DEFAULT 0,
    text_bytes INTEGER NOT NULL DEFAULT 0,
    bad_lines INTEGER NOT NULL DEFAULT 0,
    skipped_lines INTEGER NOT NULL DEFAULT 0,
    text_evicted INTEGER NOT NULL DEFAULT 0,
    error TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX transcripts_by_session ON transcripts (agent, session_id);
CREATE TABLE entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    transcript_id INTEGER NOT NULL,
    ts INTEGER NOT NULL,
    kind TEXT NOT NULL,
    msg_key TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL
) STRICT;
CREATE INDEX entries_by_transcript ON entries (transcript_id, msg_key);
CREATE VIRTUAL TABLE entries_fts USING fts5(
    text, content='entries', content_rowid='id', tokenize="{TOKENIZER}"
);
-- Merge 8 segments of a level at a time instead of 4: fewer merges while a large
-- transcript is read (bench/vault.py: ~15% faster indexing), queries unaffected.
INSERT INTO entries_fts (entries_fts, rank) VALUES ('automerge', 8);
CREATE TRIGGER entries_indexed AFTER INSERT ON entries BEGIN
    INSERT INTO entries_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER entries_unindexed AFTER DELETE ON entries BEGIN
    INSERT INTO entries_fts (entries_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TABLE usage (
    id INTEGER PRIMARY KEY,
    transcript_id INTEGER NOT NULL,
    agent TEXT NOT NULL,
    ts INTEGER NOT NULL,
    model TEXT NOT NULL,
    msg_key TEXT,
    req_key TEXT NOT NULL,
    sidechain INTEGER NOT NULL,
    input INTEGER NOT NULL,
    cache_write_5m INTEGER NOT NULL,
    cache_write_1h INTEGER NOT NULL,
    cache_read INTEGER NOT NULL,
    output INTEGER NOT NULL,
    reasoning INTEGER NOT NULL,
    total INTEGER NOT NULL,
    counted INTEGER NOT NULL DEFAULT 1
) STRICT;
CREATE UNIQUE INDEX usage_once_per_transcript ON usage (transcript_id, msg_key, req_key);
CREATE INDEX usage_by_request ON usage (agent, msg_key, req_key);
CREATE TABLE bindings (
    agent TEXT NOT NULL,
    session_id TEXT NOT NULL,
    transcript_path TEXT NOT NULL,
    pane_key TEXT NOT NULL,
    tab_id TEXT NOT NULL,
    worktree_id TEXT NOT NULL,
    bound_at_ms INTEGER NOT NULL,
    PRIMARY KEY (agent, session_id)
) STRICT;
"""

# Schema 2: the full-text table is :data:`_TEXT_INDEX`'s, rebuilt with the rows whenever
# ``text_rules`` differs from the build's (0: never built; V1's table is replaced).
_V2 = "INSERT INTO meta VALUES ('text_rules', 0);"

# MIGRATIONS[i] takes user_version i to i + 1.
MIGRATIONS: tuple[str, ...] = (_V1, _V2)
SCHEMA_VERSION = len(MIGRATIONS)

# The full-text table and the rows it indexes, emptied together: the triggers go first
# (a row deleted while they exist would be removed from the index with tokens the
# index may never have been given), then every row a scan writes, so the scan reads
# every transcript again. The generation changes only if there were rows a cursor
# could point into.
_TEXT_INDEX = f"""
DROP TRIGGER IF EXISTS entries_indexed;
DROP TRIGGER IF EXISTS entries_unindexed;
DROP TABLE IF EXISTS entries_fts;
UPDATE meta SET value = value + 1
    WHERE key IN ('generation', 'revision') AND EXISTS (SELECT 1 FROM transcripts);
DELETE FROM entries;
DELETE FROM usage;
DELETE FROM transcripts;
CREATE VIRTUAL TABLE entries_fts USING fts5(text, content='', tokenize="{TOKENIZER}");
-- Merge 8 segments of a level at a time instead of 4: fewer merges while a large
-- transcript is read (bench/vault.py: ~15% faster indexing), queries unaffected.
INSERT INTO entries_fts (entries_fts, rank) VALUES ('automerge', 8);
-- A row is given to the full-text table after the scan, not as it is written: usage
-- is answered from what a first pass reads, and the tokenizing (five sixths of a cold
-- index's time, bench/vault.py) follows (``IndexWriter.index_text``). ``text_upto`` is
-- the highest row id the table holds (ids only grow): a row above it was never given,
-- so its delete must not be told to the table either.
INSERT OR REPLACE INTO meta VALUES ('text_upto', 0);
CREATE TRIGGER entries_unindexed AFTER DELETE ON entries
WHEN old.id <= (SELECT value FROM meta WHERE key = 'text_upto') BEGIN
    INSERT INTO entries_fts (entries_fts, rowid, text)
        VALUES ('delete', old.id, {INDEXED_TEXT_SQL}(old.text));
END;
UPDATE meta SET value = {TEXT_RULES} WHERE key = 'text_rules';
"""


class IndexUnavailable(RuntimeError):
    """This Python's SQLite cannot hold the index (too old, no FTS5)."""


def check_sqlite() -> None:
    if sqlite3.sqlite_version_info < MIN_SQLITE:
        raise IndexUnavailable(
            f"SQLite {sqlite3.sqlite_version} is older than 3.37 (STRICT tables)"
        )
    probe = sqlite3.connect(":memory:")
    try:
        probe.execute(f'CREATE VIRTUAL TABLE t USING fts5(x, tokenize="{TOKENIZER}")')
    except sqlite3.OperationalError as exc:
        raise IndexUnavailable(f"this SQLite has no FTS5 ({exc})") from None
    finally:
        probe.close()


def connect(path: Path) -> sqlite3.Connection:
    """A connection with the index's pragmas (used from worker threads, one at a time)."""
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30.0)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA temp_store=MEMORY")
    # 16 MiB of page cache (the default 2 MiB makes every FTS segment merge re-read
    # its pages); two connections, so at most 32 MiB of the vault's memory.
    conn.execute("PRAGMA cache_size=-16384")
    # The triggers that keep the full-text table call it (``_TEXT_INDEX``).
    conn.create_function(INDEXED_TEXT_SQL, 1, indexed_text, deterministic=True)
    return conn


def ensure_text_rules(conn: sqlite3.Connection) -> bool:
    """Build the full-text table anew (emptying the rows) if the file's was built under
    other rules than this build's; True if it did."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'text_rules'").fetchone()
    if row is not None and row[0] == TEXT_RULES:
        return False
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in sqlite_schema.statements(_TEXT_INDEX):
            conn.execute(statement)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    log.info("index: built for these search rules; every transcript is read again")
    return True


def open_index(directory: Path) -> tuple[Path, sqlite3.Connection]:
    """The index under ``directory`` (0700), migrated; a newer file is set aside."""
    check_sqlite()
    ensure_private_dir(directory)
    path = directory / INDEX_NAME
    for _attempt in range(2):
        sqlite_schema.create_private(path)
        conn = connect(path)
        try:
            if sqlite_schema.migrate(conn, MIGRATIONS, path.name):
                ensure_text_rules(conn)
                return path, conn
        except sqlite3.DatabaseError as exc:
            log.error("%s: damaged (%s); starting a new index", path, exc)
        conn.close()
        _set_aside(path)
    raise IndexUnavailable(f"{path}: cannot be opened or recreated")


def _set_aside(path: Path) -> None:
    """Keep the refused file next to the new one (only the latest: it is a cache)."""
    for old in path.parent.glob(f"{path.name}.aside-*"):
        with contextlib.suppress(OSError):
            old.unlink()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for suffix in ("", "-wal", "-shm"):
        source = Path(f"{path}{suffix}")
        with contextlib.suppress(FileNotFoundError):
            source.replace(Path(f"{path}.aside-{stamp}{suffix}"))
    log.warning("%s: not this build's schema or damaged; kept aside, index rebuilt", path.name)


def remove_index(directory: Path) -> None:
    """Delete the index files (``vault.rebuild``; the caller closed its connections)."""
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            Path(f"{directory / INDEX_NAME}{suffix}").unlink()
