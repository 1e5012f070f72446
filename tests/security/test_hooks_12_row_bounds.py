"""Issue 16 item 12: agent-status rows were never capped (80,000 pane keys → 215 MiB, a
46.6 MB status file rewritten every 2 s, `orca worktree ps` 8.1 s). Through the real
hooks actor: past the bound the oldest rows are evicted, counted in `sys.stats`, and
the status file stays bounded."""

from __future__ import annotations

import uuid
from pathlib import Path

import trio
from support.hooks_harness import running_hooks

from actors.hooks.status_table import MAX_ROWS, MAX_ROWS_PER_WORKTREE
from orca.contracts import hooks as contract
from orca.contracts import sys as builtin

PANES = MAX_ROWS + 300


async def test_a_flood_of_pane_keys_keeps_the_table_and_file_bounded(orca_home: Path) -> None:
    """4,396 distinct panes over 100 worktrees: at most MAX_ROWS rows, the rest evicted."""
    with trio.fail_after(180):
        async with running_hooks(orca_home) as hooks:
            for i in range(PANES):
                args = contract.IngestOscArgs(
                    pane_key=f"tab-{i}:{uuid.UUID(int=i)}",
                    payload='{"state": "working"}',
                    worktree_id=f"repo1::/w{i % 100}",
                )
                await hooks.invoke(contract.INGEST_OSC, args)
            snapshot = await hooks.invoke(contract.SNAPSHOT)
            stats = await hooks.invoke(builtin.STATS)
        assert len(snapshot.rows) == MAX_ROWS
        per_worktree: dict[str, int] = {}
        for row in snapshot.rows:
            per_worktree[row.worktree_id] = per_worktree.get(row.worktree_id, 0) + 1
        assert max(per_worktree.values()) <= MAX_ROWS_PER_WORKTREE
        assert stats["hooks"]["rows"] == {
            "count": MAX_ROWS,
            "evicted": PANES - MAX_ROWS,
            "maxPerWorktree": MAX_ROWS_PER_WORKTREE,
            "max": MAX_ROWS,
        }
        newest = f"tab-{PANES - 1}:{uuid.UUID(int=PANES - 1)}"
        assert newest in {r.pane_key for r in snapshot.rows}
