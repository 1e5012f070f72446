"""The orchestration database: its file, one transaction per transition, the fence,
receipts, cursors."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

import pytest

from actors.orch import core
from actors.orch.ledger import AckPastEnd, Ledger, RunRow, dispatch_key, new_task
from actors.orch.schema import SCHEMA_VERSION, LedgerUnavailable, open_db


def make_run(ledger: Ledger, run_id: str = "r1", key: str | None = None) -> RunRow:
    run = RunRow(
        run_id, "demo", "repo1", "proj", "do it", "main", "true", "active", 1, 0, "", "", key
    )
    tasks = [
        new_task(run_id, v, v.split("-")[0], i, f"demo-{v}", core.pane_key_for(run_id, v, "n"))
        for i, v in enumerate(("claude-1", "claude-2", "codex-1"))
    ]
    stored, _ = ledger.create_run(run, tasks)
    return stored


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    _, conn = open_db(tmp_path / "orch")
    return Ledger(conn)


def test_the_file_is_private_strict_and_versioned(tmp_path: Path) -> None:
    """0600 in a 0700 directory, WAL, schema version set; a newer file is refused."""
    path, conn = open_db(tmp_path / "orch")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    with pytest.raises(sqlite3.IntegrityError):  # STRICT: a text where an integer goes
        conn.execute("INSERT INTO cursors VALUES ('r', 'v', 'many')")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(LedgerUnavailable, match="newer"):
        open_db(tmp_path / "orch")


def test_create_is_idempotent_by_key(ledger: Ledger) -> None:
    """The same create key gives the run already made, not a second one."""
    first = make_run(ledger, "r1", key="k")
    again, created = ledger.create_run(first._replace(id="r2"), [])
    assert (again.id, created) == ("r1", False)
    assert [r.id for r in ledger.runs()] == ["r1"]
    assert [t.variant for t in ledger.tasks("r1")] == ["claude-1", "claude-2", "codex-1"]


def test_a_failed_transition_leaves_nothing(ledger: Ledger) -> None:
    """A transition that raises half-way is rolled back whole (revision included)."""
    make_run(ledger)
    before = ledger.run("r1")
    with pytest.raises(ValueError):
        ledger.update_task("r1", "claude-1", phase="worktree", bogus=1)
    assert ledger.run("r1") == before
    assert ledger.task("r1", "claude-1").phase == "pending"  # type: ignore[union-attr]


def test_fence_intent_then_result_in_one_transaction(ledger: Ledger) -> None:
    """An intent is written before the act, counted on retry, settled with the phase."""
    make_run(ledger)
    key = dispatch_key("r1", "claude-1", "worktree")
    first = ledger.write_intent("r1", "claude-1", "worktree")
    again = ledger.write_intent("r1", "claude-1", "worktree")
    assert (first.key, again.attempts, again.intent_ms) == (key, 2, first.intent_ms)
    assert again.outcome is None
    revision = ledger.settle(
        key, "done", {"worktreeId": "w"}, {"phase": "worktree", "worktree_id": "w"}
    )
    settled = ledger.dispatch(key)
    assert settled is not None and settled.outcome == "done"
    assert settled.result_map() == {"worktreeId": "w"}
    task = ledger.task("r1", "claude-1")
    assert task is not None and (task.phase, task.worktree_id) == ("worktree", "w")
    assert ledger.run("r1").revision == revision  # type: ignore[union-attr]


def test_send_with_a_key_twice_is_one_message(ledger: Ledger) -> None:
    """The second send with the same key returns the first receipt and writes nothing."""
    make_run(ledger)
    first, dup1, _ = ledger.send("r1", "m1", "operator", "all", ["claude-1", "codex-1"], "hi", "k1")
    second, dup2, _ = ledger.send(
        "r1", "m2", "operator", "all", ["claude-1", "codex-1"], "hi", "k1"
    )
    assert (dup1, dup2) == (False, True) and first == second
    assert ledger.conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 1
    cursor, rows = ledger.inbox("r1", "codex-1", None)
    assert cursor == 0 and [m.body for m in rows] == ["hi"]
    assert ledger.inbox("r1", "claude-2", None)[1] == []


def test_ack_moves_the_cursor_forward_only(ledger: Ledger) -> None:
    """Acked messages are no longer in the inbox; an older ack never moves it back."""
    make_run(ledger)
    for n in range(3):
        ledger.send("r1", f"m{n}", "operator", "codex-1", ["codex-1"], f"b{n}", f"k{n}")
    _, rows = ledger.inbox("r1", "codex-1", None)
    assert ledger.ack("r1", "codex-1", rows[1].seq) == rows[1].seq
    assert ledger.ack("r1", "codex-1", rows[0].seq) == rows[1].seq
    assert [m.body for m in ledger.inbox("r1", "codex-1", None)[1]] == ["b2"]
    assert [m.body for m in ledger.inbox("r1", "codex-1", 0)[1]] == ["b0", "b1", "b2"]


def test_an_ack_past_the_last_delivered_message_is_refused(ledger: Ledger) -> None:
    """Seed 02-48: acking 10^9 hid every later message to that agent; now refused, and
    the cursor stays where it was."""
    make_run(ledger)
    ledger.send("r1", "m0", "operator", "codex-1", ["codex-1"], "b0", "k0")
    _, [row] = ledger.inbox("r1", "codex-1", None)
    with pytest.raises(AckPastEnd, match=f"past the last message delivered \\({row.seq}\\)"):
        ledger.ack("r1", "codex-1", 10**9)
    with pytest.raises(AckPastEnd):
        ledger.ack("r1", "claude-1", 1)  # nothing delivered to it yet
    assert ledger.ack("r1", "codex-1", row.seq) == row.seq
    ledger.send("r1", "m1", "operator", "codex-1", ["codex-1"], "b1", "k1")
    assert [m.body for m in ledger.inbox("r1", "codex-1", None)[1]] == ["b1"]


def test_merge_archives_every_other_variant(ledger: Ledger) -> None:
    """One transaction: the run is merged, the others archived."""
    make_run(ledger)
    archived, _ = ledger.record_merge("r1", "claude-2", "abc")
    assert archived == ["claude-1", "codex-1"]
    run = ledger.run("r1")
    assert run is not None and (run.state, run.merged_variant) == ("merged", "claude-2")


def test_reports_settle_once_per_key(ledger: Ledger) -> None:
    """A report with a used key is the first one's receipt; the first one stays."""
    make_run(ledger)
    _, dup, _ = ledger.report("r1", "codex-1", "done", "tests pass", "rep1")
    _, dup2, _ = ledger.report("r1", "codex-1", "failed", "other", "rep1")
    assert (dup, dup2) == (False, True)
    task = ledger.task("r1", "codex-1")
    assert task is not None and (task.report_status, task.report) == ("done", "tests pass")
