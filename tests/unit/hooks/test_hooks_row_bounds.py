"""The agent-status table is bounded per worktree and in total (issue 16 item 12)."""

from __future__ import annotations

import uuid

import pytest

from actors.hooks import status_table
from actors.hooks.status_table import AgentStatusTable, StatusEvent
from orca.contracts import hooks

T0 = 1_800_000_000_000


def _pane(i: int) -> str:
    return f"tab-{i}:{uuid.UUID(int=i)}"


def _write(table: AgentStatusTable, i: int, worktree: str, at: int) -> tuple[object, ...]:
    event = StatusEvent(pane_key=_pane(i), state="working", source="hook", worktree_id=worktree)
    return table.apply_normalized_status(event, at).events


def test_a_worktree_keeps_at_most_its_bound_and_the_oldest_row_goes_first() -> None:
    """Past the per-worktree bound the oldest row of that worktree is cleared as evicted."""
    table = AgentStatusTable()
    bound = status_table.MAX_ROWS_PER_WORKTREE
    for i in range(bound):
        _write(table, i, "r::/w", T0 + i)
    events = _write(table, bound, "r::/w", T0 + bound)
    cleared = [e for e in events if isinstance(e, hooks.StatusCleared)]
    assert [(c.pane_key, c.reason) for c in cleared] == [(_pane(0), "evicted")]
    assert len(table.rows()) == bound and table.evicted == 1
    assert table.row(_pane(bound)) is not None and table.row(_pane(0)) is None


def test_the_table_keeps_at_most_its_total_bound() -> None:
    """80,000 pane keys no longer grow the table without end: the total bound holds."""
    table = AgentStatusTable()
    total = status_table.MAX_ROWS
    for i in range(total + 500):
        _write(table, i, f"r::/w{i % 1000}", T0 + i)
    assert len(table.rows()) == total and table.evicted == 500
    assert table.row(_pane(0)) is None and table.row(_pane(total + 499)) is not None


def test_a_restored_file_beyond_the_bounds_is_held_to_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rows hydrated from an unbounded file (an older build) are cut to the bounds, newest kept."""
    bound = status_table.MAX_ROWS_PER_WORKTREE
    monkeypatch.setattr(status_table, "MAX_ROWS_PER_WORKTREE", bound + 3)
    unbounded = AgentStatusTable()
    for i in range(bound + 3):
        _write(unbounded, i, "r::/w", T0 + i)
    monkeypatch.setattr(status_table, "MAX_ROWS_PER_WORKTREE", bound)
    loaded = AgentStatusTable()
    loaded.hydrate(unbounded.rows(), {})
    assert len(loaded.rows()) == bound
    assert [loaded.row(_pane(i)) is None for i in (0, 1, 2, 3)] == [True, True, True, False]
