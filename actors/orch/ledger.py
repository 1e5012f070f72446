"""The orchestration database's reads and writes: one transaction per transition.

Every method that changes a run is one ``BEGIN IMMEDIATE … COMMIT`` that also bumps the
run's ``revision`` (what ``run.changed`` carries), so a reader never sees half a
transition and a crash keeps either all of it or none.

The spawn commit fence (seed 02 §13, rule 02-53) is the ``dispatches`` table: before a
step acts on another actor (create a worktree, start a terminal, type the prompt) it
writes an *intent* under the step's key (``<run>/<variant>/<step>``); the result is
written with the task's new phase in one transaction. An intent found without a result
after a restart means "may have happened": the shell resolves it by looking
(``actors/orch/fence.py``), never by assuming the act can safely be repeated.

Receipts: a mutation carrying a key (``run.send``, ``run.report``) stores its reply under
the key in the transaction that made it; the same key again returns the stored reply.

Not thread-safe: the shell runs every call on one worker thread at a time.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class AckPastEnd(ValueError):
    """An ack beyond the last message delivered to the variant."""

    def __init__(self, upto: int, last: int) -> None:
        super().__init__(f"upto {upto} is past the last message delivered ({last})")
        self.upto, self.last = upto, last


class RunRow(NamedTuple):
    id: str
    name: str
    repo_id: str
    repo_label: str
    prompt: str
    base: str
    check_cmd: str
    state: str
    created_ms: int
    revision: int
    merged_variant: str
    merge_commit: str
    create_key: str | None


class TaskRow(NamedTuple):
    run_id: str
    variant: str
    agent: str
    ordinal: int
    phase: str
    failed: str
    archived: int
    removed: int
    worktree_name: str
    worktree_id: str
    worktree_path: str
    branch: str
    pane_key: str
    session_id: str
    launch_sha: str
    pid: int
    spawned_ms: int | None
    prompted_ms: int | None
    idle_ms: int | None
    check_exit: int | None
    check_tail: str
    check_ms: int | None
    check_duration_ms: int | None
    report: str
    report_status: str


def new_task(
    run_id: str, variant: str, agent: str, ordinal: int, worktree_name: str, pane_key: str
) -> TaskRow:
    """A task as a run's creation writes it: nothing done yet."""
    return TaskRow(
        run_id=run_id, variant=variant, agent=agent, ordinal=ordinal, phase="pending",
        failed="", archived=0, removed=0, worktree_name=worktree_name, worktree_id="",
        worktree_path="", branch="", pane_key=pane_key, session_id="", launch_sha="", pid=0,
        spawned_ms=None, prompted_ms=None, idle_ms=None, check_exit=None, check_tail="",
        check_ms=None, check_duration_ms=None, report="", report_status="",
    )  # fmt: skip


class Dispatch(NamedTuple):
    key: str
    run_id: str
    variant: str
    step: str
    intent_ms: int
    attempts: int
    outcome: str | None
    result: str | None
    done_ms: int | None

    def result_map(self) -> dict[str, Any]:
        return dict(json.loads(self.result)) if self.result else {}


class MessageRow(NamedTuple):
    seq: int
    id: str
    run_id: str
    sender: str
    recipient: str
    body: str
    created_ms: int


_RUN_COLS = ", ".join(RunRow._fields)
_TASK_COLS = ", ".join(TaskRow._fields)
_TASK_WRITABLE = frozenset(TaskRow._fields) - {"run_id", "variant"}


def dispatch_key(run_id: str, variant: str, step: str) -> str:
    return f"{run_id}/{variant}/{step}"


class Ledger:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def _bump(self, run_id: str) -> int:
        row = self.conn.execute(
            "UPDATE runs SET revision = revision + 1 WHERE id = ? RETURNING revision", (run_id,)
        ).fetchone()
        return int(row[0]) if row else 0

    # -- runs ----------------------------------------------------------------------------
    def create_run(self, run: RunRow, tasks: Sequence[TaskRow]) -> tuple[RunRow, bool]:
        """Insert the run and its tasks (one transaction); with a ``create_key`` that is
        already taken, the existing run instead (``created`` False)."""
        with self.transaction() as conn:
            if run.create_key is not None:
                found = conn.execute(
                    f"SELECT {_RUN_COLS} FROM runs WHERE create_key = ?", (run.create_key,)
                ).fetchone()
                if found is not None:
                    return RunRow(*found), False
            marks = ", ".join("?" * len(RunRow._fields))
            conn.execute(f"INSERT INTO runs ({_RUN_COLS}) VALUES ({marks})", run)
            marks = ", ".join("?" * len(TaskRow._fields))
            conn.executemany(f"INSERT INTO tasks ({_TASK_COLS}) VALUES ({marks})", tasks)
            for task in tasks:
                conn.execute(
                    "INSERT INTO cursors (run_id, variant, acked) VALUES (?, ?, 0)",
                    (task.run_id, task.variant),
                )
        return run, True

    def run(self, ref: str) -> RunRow | None:
        """A run by id, or by name when exactly one run has it."""
        found = self.conn.execute(f"SELECT {_RUN_COLS} FROM runs WHERE id = ?", (ref,)).fetchone()
        if found is not None:
            return RunRow(*found)
        named = self.conn.execute(
            f"SELECT {_RUN_COLS} FROM runs WHERE name = ? LIMIT 2", (ref,)
        ).fetchall()
        return RunRow(*named[0]) if len(named) == 1 else None

    def run_by_key(self, create_key: str) -> RunRow | None:
        """The run ``run.create`` made under ``create_key`` (an automation's firing)."""
        found = self.conn.execute(
            f"SELECT {_RUN_COLS} FROM runs WHERE create_key = ?", (create_key,)
        ).fetchone()
        return RunRow(*found) if found else None

    def runs(self) -> list[RunRow]:
        rows = self.conn.execute(
            f"SELECT {_RUN_COLS} FROM runs ORDER BY created_ms DESC, id"
        ).fetchall()
        return [RunRow(*r) for r in rows]

    def tasks(self, run_id: str) -> list[TaskRow]:
        rows = self.conn.execute(
            f"SELECT {_TASK_COLS} FROM tasks WHERE run_id = ? ORDER BY ordinal", (run_id,)
        ).fetchall()
        return [TaskRow(*r) for r in rows]

    def all_tasks(self) -> list[TaskRow]:
        rows = self.conn.execute(
            f"SELECT {_TASK_COLS} FROM tasks ORDER BY run_id, ordinal"
        ).fetchall()
        return [TaskRow(*r) for r in rows]

    def task(self, run_id: str, variant: str) -> TaskRow | None:
        found = self.conn.execute(
            f"SELECT {_TASK_COLS} FROM tasks WHERE run_id = ? AND variant = ?", (run_id, variant)
        ).fetchone()
        return TaskRow(*found) if found else None

    def task_by_pane(self, pane_key: str) -> TaskRow | None:
        found = self.conn.execute(
            f"SELECT {_TASK_COLS} FROM tasks WHERE pane_key = ?", (pane_key,)
        ).fetchone()
        return TaskRow(*found) if found else None

    def update_task(self, run_id: str, variant: str, **columns: Any) -> int:
        """Write task columns and bump the run (one transaction) → the new revision."""
        with self.transaction():
            self._set_task(run_id, variant, columns)
            return self._bump(run_id)

    def _set_task(self, run_id: str, variant: str, columns: dict[str, Any]) -> None:
        if not columns:
            return
        unknown = set(columns) - _TASK_WRITABLE
        if unknown:
            raise ValueError(f"not task columns: {sorted(unknown)}")
        sets = ", ".join(f"{name} = ?" for name in columns)
        self.conn.execute(
            f"UPDATE tasks SET {sets} WHERE run_id = ? AND variant = ?",
            (*columns.values(), run_id, variant),
        )

    def record_merge(self, run_id: str, variant: str, commit: str) -> tuple[list[str], int]:
        """The run merged ``variant``: every other variant archived, in one transaction."""
        with self.transaction() as conn:
            conn.execute(
                "UPDATE runs SET state = 'merged', merged_variant = ?, merge_commit = ?"
                " WHERE id = ?",
                (variant, commit, run_id),
            )
            rows = conn.execute(
                "UPDATE tasks SET archived = 1 WHERE run_id = ? AND variant != ? AND archived = 0"
                " RETURNING variant",
                (run_id, variant),
            ).fetchall()
            return sorted(r[0] for r in rows), self._bump(run_id)

    def mark_removed(self, run_id: str, variants: Sequence[str]) -> tuple[bool, int]:
        """Those variants' worktrees are gone; the run too once none is left."""
        with self.transaction() as conn:
            for variant in variants:
                self._set_task(run_id, variant, {"removed": 1})
            left = conn.execute(
                "SELECT COUNT(*) FROM tasks WHERE run_id = ? AND removed = 0", (run_id,)
            ).fetchone()[0]
            if left == 0:
                conn.execute("UPDATE runs SET state = 'removed' WHERE id = ?", (run_id,))
            return left == 0, self._bump(run_id)

    # -- the spawn fence ------------------------------------------------------------------
    def dispatch(self, key: str) -> Dispatch | None:
        found = self.conn.execute(
            f"SELECT {', '.join(Dispatch._fields)} FROM dispatches WHERE key = ?", (key,)
        ).fetchone()
        return Dispatch(*found) if found else None

    def write_intent(self, run_id: str, variant: str, step: str) -> Dispatch:
        """Announce a step (durably) before it acts; a second announcement of the same
        step (a retry, a restart) counts the attempt and keeps the first intent's time."""
        key = dispatch_key(run_id, variant, step)
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO dispatches (key, run_id, variant, step, intent_ms)"
                " VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (key) DO UPDATE SET attempts = attempts + 1",
                (key, run_id, variant, step, now_ms()),
            )
        found = self.dispatch(key)
        assert found is not None
        return found

    def settle(
        self,
        key: str,
        outcome: str,
        result: dict[str, Any],
        task_columns: dict[str, Any],
    ) -> int:
        """The step's result and the task's new columns, in one transaction."""
        with self.transaction() as conn:
            row = conn.execute(
                "UPDATE dispatches SET outcome = ?, result = ?, done_ms = ? WHERE key = ?"
                " RETURNING run_id, variant",
                (outcome, json.dumps(result, sort_keys=True), now_ms(), key),
            ).fetchone()
            if row is None:
                raise KeyError(key)
            self._set_task(row[0], row[1], task_columns)
            return self._bump(row[0])

    def dispatches(self) -> list[Dispatch]:
        rows = self.conn.execute(
            f"SELECT {', '.join(Dispatch._fields)} FROM dispatches ORDER BY intent_ms, key"
        ).fetchall()
        return [Dispatch(*r) for r in rows]

    # -- receipts, messages, cursors, reports ---------------------------------------------
    def receipt(self, key: str) -> dict[str, Any] | None:
        found = self.conn.execute("SELECT result FROM receipts WHERE key = ?", (key,)).fetchone()
        return dict(json.loads(found[0])) if found else None

    def send(
        self,
        run_id: str,
        message_id: str,
        sender: str,
        to: str,
        recipients: Sequence[str],
        body: str,
        receipt_key: str,
    ) -> tuple[dict[str, Any], bool, int]:
        """One message, one delivery per recipient, its receipt → (receipt, duplicate,
        revision). A receipt key already used returns its receipt and writes nothing."""
        with self.transaction() as conn:
            found = conn.execute(
                "SELECT result FROM receipts WHERE key = ?", (receipt_key,)
            ).fetchone()
            if found is not None:
                return dict(json.loads(found[0])), True, 0
            seq = conn.execute(
                "INSERT INTO messages (id, run_id, sender, recipient, body, created_ms)"
                " VALUES (?, ?, ?, ?, ?, ?) RETURNING seq",
                (message_id, run_id, sender, to, body, now_ms()),
            ).fetchone()[0]
            conn.executemany(
                "INSERT INTO deliveries (run_id, variant, seq) VALUES (?, ?, ?)",
                [(run_id, v, seq) for v in recipients],
            )
            receipt = {
                "key": receipt_key,
                "messageId": message_id,
                "seq": int(seq),
                "recipients": list(recipients),
            }
            self._store_receipt(receipt_key, run_id, receipt)
            return receipt, False, self._bump(run_id)

    def _store_receipt(self, key: str, run_id: str, result: dict[str, Any]) -> None:
        self.conn.execute(
            "INSERT INTO receipts (key, run_id, result, created_ms) VALUES (?, ?, ?, ?)",
            (key, run_id, json.dumps(result, sort_keys=True), now_ms()),
        )

    def cursor(self, run_id: str, variant: str) -> int:
        found = self.conn.execute(
            "SELECT acked FROM cursors WHERE run_id = ? AND variant = ?", (run_id, variant)
        ).fetchone()
        return int(found[0]) if found else 0

    def inbox(self, run_id: str, variant: str, after: int | None) -> tuple[int, list[MessageRow]]:
        cursor = self.cursor(run_id, variant)
        start = cursor if after is None else after
        rows = self.conn.execute(
            "SELECT m.seq, m.id, m.run_id, m.sender, m.recipient, m.body, m.created_ms"
            " FROM deliveries d JOIN messages m ON m.seq = d.seq"
            " WHERE d.run_id = ? AND d.variant = ? AND d.seq > ? ORDER BY d.seq LIMIT 500",
            (run_id, variant, start),
        ).fetchall()
        return cursor, [MessageRow(*r) for r in rows]

    def ack(self, run_id: str, variant: str, upto: int) -> int:
        """Move the cursor to ``upto`` (never back) → the cursor. ``upto`` past the last
        message delivered to the variant raises :class:`AckPastEnd` (seed 02-48: an ack
        of 10^9 hid every later message from that agent)."""
        with self.transaction() as conn:
            (last,) = conn.execute(
                "SELECT COALESCE(MAX(seq), 0) FROM deliveries WHERE run_id = ? AND variant = ?",
                (run_id, variant),
            ).fetchone()
            if upto > last:
                raise AckPastEnd(upto, int(last))
            conn.execute(
                "UPDATE cursors SET acked = MAX(acked, ?) WHERE run_id = ? AND variant = ?",
                (upto, run_id, variant),
            )
            self._bump(run_id)
        return self.cursor(run_id, variant)

    def report(
        self, run_id: str, variant: str, status: str, summary: str, receipt_key: str
    ) -> tuple[dict[str, Any], bool, int]:
        """A worker's report, settled once per key (its receipt stored with it)."""
        with self.transaction() as conn:
            found = conn.execute(
                "SELECT result FROM receipts WHERE key = ?", (receipt_key,)
            ).fetchone()
            if found is not None:
                return dict(json.loads(found[0])), True, 0
            self._set_task(run_id, variant, {"report": summary, "report_status": status})
            receipt = {"key": receipt_key, "messageId": "", "seq": 0, "recipients": []}
            self._store_receipt(receipt_key, run_id, receipt)
            return receipt, False, self._bump(run_id)

    def bind_session(self, pane_key: str, session_id: str) -> bool:
        """An agent session seen in a variant's pane (its capability's second half)."""
        with self.transaction() as conn:
            cur = conn.execute(
                "INSERT OR IGNORE INTO agent_sessions (pane_key, session_id, seen_ms)"
                " VALUES (?, ?, ?)",
                (pane_key, session_id, now_ms()),
            )
            return cur.rowcount > 0

    def sessions_of(self, pane_key: str) -> list[str]:
        rows = self.conn.execute(
            "SELECT session_id FROM agent_sessions WHERE pane_key = ? ORDER BY seen_ms",
            (pane_key,),
        ).fetchall()
        return [r[0] for r in rows]
