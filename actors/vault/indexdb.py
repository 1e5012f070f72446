"""Writing the index: one transaction per scan step, counters kept with the rows.

Called from the vault's worker thread only (one writer; SQLite serializes anyway, and
WAL lets the query connection read meanwhile). Every method is one transaction, so a
crash leaves a transcript either before or after a step, never half way: its offset
moves in the same commit as its rows, and the next scan reads on from there.

Two counters in ``meta`` (published with ``vault.changed``):

* ``revision`` grows with every commit that changed a row (readers refresh on it);
* ``generation`` grows when rows a reader may hold a cursor into are renumbered or
  dropped: a transcript started over or forgotten, text evicted by the budget, a
  rebuild. Appends keep it (the row ids only grow).

Usage rows are unique per (transcript, message key, request key): a repeated copy in
the same file keeps the larger count (``ON CONFLICT ... WHERE excluded.total >
usage.total``); which copy across files counts is settled in the same commit
(``actors.vault.settle``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from actors.vault.fileplan import FileIdentity, ReadMark, head_digest
from actors.vault.records import Parsed, SessionFacts, TextEntry, UsageRecord
from actors.vault.settle import by_agent, settle
from actors.vault.terms import INDEXED_TEXT_SQL


@dataclass(slots=True)
class Transcript:
    """A transcript's row as the scanner needs it."""

    id: int
    path: str
    agent: str
    mark: ReadMark
    mid_line: bool
    facts: SessionFacts
    text_evicted: bool
    error: str


@dataclass(frozen=True, slots=True)
class Binding:
    """One agent session bound to a pane by hooks (``agentSession.bound``)."""

    agent: str
    session_id: str
    transcript_path: str
    pane_key: str
    tab_id: str
    worktree_id: str
    bound_at_ms: int


def _facts_json(facts: SessionFacts) -> str:
    return json.dumps(asdict(facts), separators=(",", ":"))


def _facts_from(text: str) -> SessionFacts:
    try:
        raw = json.loads(text)
    except ValueError:
        return SessionFacts()
    facts = SessionFacts()
    if isinstance(raw, dict):
        for key in ("session_id", "cwd", "project_hash", "title", "model", "forked_from"):
            if isinstance(raw.get(key), str):
                setattr(facts, key, raw[key])
        if isinstance(raw.get("event_text"), bool):
            facts.event_text = raw["event_text"]
        totals = raw.get("totals")
        if (
            isinstance(totals, list)
            and len(totals) == 5
            and all(isinstance(n, int) for n in totals)
        ):
            facts.totals = totals
    return facts


class IndexWriter:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    # -- reading what the scanner needs -------------------------------------------------
    def transcripts(self, path: str | None = None) -> dict[str, Transcript]:
        """Every transcript's row by path (or only ``path``'s)."""
        sql = (
            "SELECT id, path, agent, dev, ino, size, mtime_ns, offset, mid_line, head_len,"
            " head_hash, facts, text_evicted, error FROM transcripts"
        )
        rows = (
            self.conn.execute(sql).fetchall()
            if path is None
            else self.conn.execute(sql + " WHERE path = ?", (path,)).fetchall()
        )
        out: dict[str, Transcript] = {}
        for (tid, path, agent, dev, ino, size, mtime, offset, mid, hlen, hhash, facts,
             evicted, error) in rows:  # fmt: skip
            mark = ReadMark(FileIdentity(dev, ino, size, mtime), offset, hlen, hhash)
            out[path] = Transcript(
                tid, path, agent, mark, bool(mid), _facts_from(facts), bool(evicted), error
            )
        return out

    def counter(self, name: str) -> int:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (name,)).fetchone()
        return int(row[0]) if row else 0

    def _bump(self, name: str) -> None:
        self.conn.execute("UPDATE meta SET value = value + 1 WHERE key = ?", (name,))

    # -- one step -----------------------------------------------------------------------
    def apply(
        self,
        known: Transcript | None,
        *,
        path: str,
        agent: str,
        identity: FileIdentity,
        offset: int,
        mid_line: bool,
        head: bytes,
        facts: SessionFacts,
        parsed: Parsed,
        restart: bool,
    ) -> Transcript:
        """Commit one step's rows with the transcript's new read mark."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            if known is not None and restart:
                self._drop_rows(known.id)
                self._bump("generation")
            tid = self._insert_transcript(path, agent, identity) if known is None else known.id
            evicted = known.text_evicted and not restart if known else False
            added, added_bytes = (0, 0) if evicted else self._insert_entries(tid, parsed)
            self._upsert_usage(tid, agent, parsed.usage)
            first, last = _time_span(parsed)
            conn.execute(
                "UPDATE transcripts SET dev = ?, ino = ?, size = ?, mtime_ns = ?, offset = ?,"
                " mid_line = ?, head_len = ?, head_hash = ?, session_id = ?, cwd = ?,"
                " project_hash = ?, title = ?, facts = ?,"
                " first_ts = CASE WHEN first_ts = 0 OR (? > 0 AND ? < first_ts) THEN ? ELSE first_ts END,"
                " last_ts = max(last_ts, ?), entries = entries + ?, text_bytes = text_bytes + ?,"
                " bad_lines = bad_lines + ?, text_evicted = ?, error = '' WHERE id = ?",
                (
                    identity.dev, identity.ino, identity.size, identity.mtime_ns, offset,
                    int(mid_line), len(head), head_digest(head), facts.session_id, facts.cwd,
                    facts.project_hash, facts.title, _facts_json(facts),
                    first, first, first, last, added, added_bytes, parsed.bad,
                    int(evicted), tid,
                ),
            )  # fmt: skip
            if added or parsed.usage or restart or known is None:
                self._bump("revision")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return Transcript(
            tid,
            path,
            agent,
            ReadMark(identity, offset, len(head), head_digest(head)),
            mid_line,
            facts,
            evicted,
            "",
        )

    def note_skipped_lines(self, tid: int, skipped: int) -> None:
        if skipped:
            self.conn.execute(
                "UPDATE transcripts SET skipped_lines = skipped_lines + ? WHERE id = ?",
                (skipped, tid),
            )

    def record_error(self, known: Transcript | None, path: str, agent: str, error: str) -> None:
        """A file that cannot be read: said in ``vault.status``, retried next scan."""
        if known is None:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                tid = self._insert_transcript(path, agent, FileIdentity(0, 0, 0, 0))
                self.conn.execute("UPDATE transcripts SET error = ? WHERE id = ?", (error, tid))
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
        elif known.error != error:
            self.conn.execute("UPDATE transcripts SET error = ? WHERE id = ?", (error, known.id))

    def forget(self, known: Transcript) -> None:
        """The file is gone: its rows go too (the index holds what is on disk)."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            self._drop_rows(known.id)
            conn.execute("DELETE FROM transcripts WHERE id = ?", (known.id,))
            self._bump("generation")
            self._bump("revision")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    # -- bindings -------------------------------------------------------------------------
    def bind(self, bindings: Iterable[Binding]) -> int:
        """Record bindings (the latest pane of a session wins); how many changed."""
        changed = 0
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            for b in bindings:
                cur = conn.execute(
                    "INSERT INTO bindings VALUES (?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (agent, session_id) DO UPDATE SET"
                    " transcript_path = excluded.transcript_path, pane_key = excluded.pane_key,"
                    " tab_id = excluded.tab_id, worktree_id = excluded.worktree_id,"
                    " bound_at_ms = excluded.bound_at_ms"
                    " WHERE excluded.bound_at_ms >= bindings.bound_at_ms AND ("
                    " excluded.transcript_path != bindings.transcript_path"
                    " OR excluded.pane_key != bindings.pane_key"
                    " OR excluded.worktree_id != bindings.worktree_id)",
                    (b.agent, b.session_id, b.transcript_path, b.pane_key, b.tab_id,
                     b.worktree_id, b.bound_at_ms),
                )  # fmt: skip
                changed += cur.rowcount
            if changed:
                self._bump("revision")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return changed

    # -- the budget ---------------------------------------------------------------------
    def enforce_budget(self, max_entries: int, max_text_bytes: int) -> int:
        """Drop the searchable text of the transcripts least recently written until both
        bounds hold (seed 02 §11: "限制 entry 与总字节"); their token counts stay.
        Returns how many transcripts lost their text."""
        conn = self.conn
        entries, text = conn.execute(
            "SELECT coalesce(sum(entries), 0), coalesce(sum(text_bytes), 0) FROM transcripts"
        ).fetchone()
        if entries <= max_entries and text <= max_text_bytes:
            return 0
        victims = conn.execute(
            "SELECT id, entries, text_bytes FROM transcripts WHERE text_evicted = 0"
            " AND entries > 0 ORDER BY last_ts, id"
        ).fetchall()
        evicted = 0
        conn.execute("BEGIN IMMEDIATE")
        try:
            for tid, count, size in victims:
                if entries <= max_entries and text <= max_text_bytes:
                    break
                conn.execute("DELETE FROM entries WHERE transcript_id = ?", (tid,))
                conn.execute(
                    "UPDATE transcripts SET entries = 0, text_bytes = 0, text_evicted = 1"
                    " WHERE id = ?",
                    (tid,),
                )
                entries -= count
                text -= size
                evicted += 1
            if evicted:
                self._bump("generation")
                self._bump("revision")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return evicted

    # -- the full-text table -------------------------------------------------------------
    def index_text(self, rows: int) -> int:
        """Give the full-text table the next ``rows`` rows it lacks, oldest first, in
        one transaction; how many it got (0: it holds every row)."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            mark = conn.execute("SELECT value FROM meta WHERE key = 'text_upto'").fetchone()
            if mark is None:  # a file of an older schema: its triggers fed the table
                conn.execute("COMMIT")
                return 0
            upto = int(mark[0])
            last = conn.execute(
                "SELECT max(id), count(*) FROM"
                " (SELECT id FROM entries WHERE id > ? ORDER BY id LIMIT ?)",
                (upto, rows),
            ).fetchone()
            count = int(last[1])
            if count:
                conn.execute(
                    "INSERT INTO entries_fts (rowid, text)"
                    f" SELECT id, {INDEXED_TEXT_SQL}(text) FROM entries WHERE id > ? AND id <= ?",
                    (upto, last[0]),
                )
                conn.execute("UPDATE meta SET value = ? WHERE key = 'text_upto'", (int(last[0]),))
                self._bump("revision")  # what a search finds changed
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return count

    # -- pieces -------------------------------------------------------------------------
    def _insert_transcript(self, path: str, agent: str, identity: FileIdentity) -> int:
        cur = self.conn.execute(
            "INSERT INTO transcripts (path, agent, dev, ino, size, mtime_ns, offset)"
            " VALUES (?, ?, ?, ?, ?, ?, 0)",
            (path, agent, identity.dev, identity.ino, 0, 0),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def _drop_rows(self, tid: int) -> None:
        conn = self.conn
        touched = conn.execute(
            "SELECT DISTINCT agent, msg_key FROM usage WHERE transcript_id = ? AND msg_key IS NOT NULL",
            (tid,),
        ).fetchall()
        conn.execute("DELETE FROM entries WHERE transcript_id = ?", (tid,))
        conn.execute("DELETE FROM usage WHERE transcript_id = ?", (tid,))
        for agent, keys in by_agent(touched).items():
            settle(conn, agent, keys)
        conn.execute(
            "UPDATE transcripts SET entries = 0, text_bytes = 0, bad_lines = 0,"
            " skipped_lines = 0, first_ts = 0, last_ts = 0, title = '', text_evicted = 0"
            " WHERE id = ?",
            (tid,),
        )

    def _insert_entries(self, tid: int, parsed: Parsed) -> tuple[int, int]:
        conn = self.conn
        removed = removed_bytes = 0
        for key in parsed.keyed:
            count, size = conn.execute(
                "SELECT count(*), coalesce(sum(length(CAST(text AS BLOB))), 0) FROM entries"
                " WHERE transcript_id = ? AND msg_key = ?",
                (tid, key),
            ).fetchone()
            if count:
                conn.execute(
                    "DELETE FROM entries WHERE transcript_id = ? AND msg_key = ?", (tid, key)
                )
                removed += count
                removed_bytes += size
        rows: list[TextEntry] = list(parsed.entries)
        for keyed in parsed.keyed.values():
            rows.extend(keyed)
        conn.executemany(
            "INSERT INTO entries (transcript_id, ts, kind, msg_key, text) VALUES (?, ?, ?, ?, ?)",
            [(tid, e.ts_ms, e.kind, e.msg_key, e.text) for e in rows],
        )
        size = sum(len(e.text.encode("utf-8", "replace")) for e in rows)
        return len(rows) - removed, size - removed_bytes

    def _upsert_usage(self, tid: int, agent: str, usage: list[UsageRecord]) -> None:
        self.conn.executemany(
            "INSERT INTO usage (transcript_id, agent, ts, model, msg_key, req_key, sidechain,"
            " input, cache_write_5m, cache_write_1h, cache_read, output, reasoning, total)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (transcript_id, msg_key, req_key) DO UPDATE SET"
            " ts = excluded.ts, model = excluded.model, sidechain = excluded.sidechain,"
            " input = excluded.input, cache_write_5m = excluded.cache_write_5m,"
            " cache_write_1h = excluded.cache_write_1h, cache_read = excluded.cache_read,"
            " output = excluded.output, reasoning = excluded.reasoning, total = excluded.total"
            " WHERE excluded.total > usage.total",
            [
                (tid, agent, u.ts_ms, u.model, u.msg_key, u.req_key, int(u.sidechain), u.input,
                 u.cache_write_5m, u.cache_write_1h, u.cache_read, u.output, u.reasoning,
                 u.total)
                for u in usage
            ],
        )  # fmt: skip
        settle(self.conn, agent, {u.msg_key for u in usage if u.msg_key is not None})


def _time_span(parsed: Parsed) -> tuple[int, int]:
    times = [e.ts_ms for e in parsed.entries if e.ts_ms] + [
        u.ts_ms for u in parsed.usage if u.ts_ms
    ]
    for rows in parsed.keyed.values():
        times.extend(e.ts_ms for e in rows if e.ts_ms)
    return (min(times), max(times)) if times else (0, 0)
