"""hooks and a real store process: retirements fence, renames re-key, fences persist (§3.2)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import trio
from support.actors import running_store
from support.hooks_harness import PANE, running_hooks

from orca.contracts import hooks as contract

TAB, LEAF = PANE.split(":", 1)
OLD = "repo1::/src/before"
NEW = "repo1::/src/after"


def _osc(state: str, worktree_id: str) -> dict[str, object]:
    return {"paneKey": PANE, "worktreeId": worktree_id, "payload": json.dumps({"state": state})}


async def test_store_pane_retirement_clears_and_fences_the_row(orca_home: Path) -> None:
    """store's session.paneRetired clears the row, fences the pane, on disk at once (§3.2)."""
    with trio.fail_after(40):
        async with running_store(orca_home) as store, running_hooks(orca_home) as hooks:
            assert (await hooks.call("agentStatus.ingest_osc", _osc("working", OLD)))[
                "outcome"
            ] == "applied"
            await store.call("session.retire_pane", {"tabId": TAB, "leafId": LEAF})
            event = await hooks.tap.next_event_of(contract.STATUS_CLEARED)
            assert event.data == {"paneKey": PANE, "worktreeId": OLD, "reason": "retired"}
            late = await hooks.call("agentStatus.ingest_osc", _osc("done", OLD))
            assert late == {"outcome": "rejected", "reason": "retired_pane"}
            assert await hooks.rows() == []
            # Seed 02 §9: the fence is durable as soon as it is applied, not debounced.
            saved = json.loads((hooks.paths.hooks_dir / "last-status.json").read_bytes())
            assert [f["paneKey"] for f in saved["retiredPanes"]] == [PANE]


async def test_worktree_rename_refiles_rows_and_later_writes(orca_home: Path) -> None:
    """worktree.renamed re-publishes the row under the new id; writes naming the old follow."""
    with trio.fail_after(40):
        async with running_store(orca_home) as store, running_hooks(orca_home) as hooks:
            await store.call("worktreeMeta.patch", {"worktreeId": OLD, "patch": {}})
            await hooks.call("agentStatus.ingest_osc", _osc("working", OLD))
            await store.call("worktree.migrate_identity", {"oldId": OLD, "newId": NEW})
            event = await hooks.tap.next_event_of(
                contract.STATUS_SET, lambda s: s.row.worktree_id == NEW
            )
            assert event.data["row"]["paneKey"] == PANE
            await hooks.call("agentStatus.ingest_osc", _osc("done", OLD))
            assert [(r["worktreeId"], r["state"]) for r in await hooks.rows()] == [(NEW, "done")]


async def test_rename_missed_while_hooks_was_down_is_recovered_at_start(orca_home: Path) -> None:
    """A rename published while hooks was stopped is found via identity.resolve at start."""
    with trio.fail_after(60):
        async with running_store(orca_home) as store:
            await store.call("worktreeMeta.patch", {"worktreeId": OLD, "patch": {}})
            async with running_hooks(orca_home) as hooks:
                await hooks.call("agentStatus.ingest_osc", _osc("done", OLD))
            await store.call("worktree.migrate_identity", {"oldId": OLD, "newId": NEW})
            async with running_hooks(orca_home) as hooks:
                rows = await hooks.rows()
                assert [(r["paneKey"], r["worktreeId"]) for r in rows] == [(PANE, NEW)]


async def test_restored_rows_stay_put_when_the_store_is_down(orca_home: Path) -> None:
    """No store at start: hooks still starts and keeps its rows under their saved ids."""
    with trio.fail_after(60):
        async with running_hooks(orca_home) as hooks:
            await hooks.call("agentStatus.ingest_osc", _osc("done", OLD))
        async with running_hooks(orca_home) as hooks:
            assert [r["worktreeId"] for r in await hooks.rows()] == [OLD]


async def test_fence_survives_kill_9_until_a_live_restart(orca_home: Path) -> None:
    """retire_pane, SIGKILL, restart: the pane is still fenced; restart_pane lifts it (§9, §13)."""
    with trio.fail_after(60):
        async with running_hooks(orca_home) as hooks:
            await hooks.call("agentStatus.ingest_osc", _osc("working", OLD))
            assert (await hooks.call("agentStatus.retire_pane", {"paneKey": PANE}))["removed"]
            os.kill(hooks.proc.pid, signal.SIGKILL)
        async with running_hooks(orca_home) as hooks:
            late = await hooks.call("agentStatus.ingest_osc", _osc("working", OLD))
            assert late == {"outcome": "rejected", "reason": "retired_pane"}
            assert await hooks.rows() == []
            lifted = await hooks.call("agentStatus.restart_pane", {"paneKey": PANE})
            assert lifted == {"fenceLifted": True}
            again = await hooks.call("agentStatus.ingest_osc", _osc("working", OLD))
            assert again["outcome"] == "applied"


async def test_retirement_missed_while_hooks_was_down_is_replayed_from_store(
    orca_home: Path,
) -> None:
    """A pane retired while hooks was stopped is fenced once store answers retired_since
    (§3.2); a store still down at start does not delay hooks' readiness."""
    with trio.fail_after(60):
        async with running_store(orca_home), running_hooks(orca_home) as hooks:
            await hooks.call("agentStatus.ingest_osc", _osc("working", OLD))
        async with running_store(orca_home) as store:
            assert (await store.call("session.retire_pane", {"tabId": TAB, "leafId": LEAF}))[
                "durable"
            ]
        async with running_hooks(orca_home) as hooks:
            # store is down: hooks answers anyway, the row still there until it is back.
            assert [r["paneKey"] for r in await hooks.rows()] == [PANE]
            async with running_store(orca_home):
                event = await hooks.tap.next_event_of(contract.STATUS_CLEARED)
                assert event.data == {"paneKey": PANE, "worktreeId": OLD, "reason": "retired"}
            late = await hooks.call("agentStatus.ingest_osc", _osc("done", OLD))
            assert late == {"outcome": "rejected", "reason": "retired_pane"}
            saved = json.loads((hooks.paths.hooks_dir / "last-status.json").read_bytes())
            assert saved["storeRevision"] == 1
        # Applied once: a second restart replays nothing and keeps the pane fenced.
        async with running_store(orca_home), running_hooks(orca_home) as hooks:
            assert await hooks.rows() == []
            late = await hooks.call("agentStatus.ingest_osc", _osc("done", OLD))
            assert late == {"outcome": "rejected", "reason": "retired_pane"}


async def test_removed_worktree_takes_its_rows_and_fates_everywhere(orca_home: Path) -> None:
    """worktreeMeta.removed (``orca worktree rm``): the store now calls the id unknown, so
    its rows go (one clear each), its fates too, and the file no longer holds them; a
    worktree the store still knows keeps its rows."""
    other_pane = "tab-2:3f1c2a9e-0000-4000-8000-000000000002"
    with trio.fail_after(40):
        async with running_store(orca_home) as store, running_hooks(orca_home) as hooks:
            for worktree_id in (OLD, NEW):
                await store.call("worktreeMeta.patch", {"worktreeId": worktree_id, "patch": {}})
            await hooks.call("agentStatus.ingest_osc", _osc("working", OLD))
            exited = {**_osc("done", OLD), "paneKey": other_pane}
            await hooks.call("agentStatus.ingest_osc", exited)
            await hooks.call(
                "agentStatus.pty_exited", {"paneKey": other_pane, "terminalHandle": "t", "exitCode": 3}
            )
            kept = {**_osc("working", NEW), "paneKey": "tab-3:3f1c2a9e-0000-4000-8000-000000000003"}
            await hooks.call("agentStatus.ingest_osc", kept)
            before = await hooks.invoke(contract.SNAPSHOT)
            assert [f.worktree_id for f in before.fates] == [OLD]
            await store.call("worktreeMeta.remove", {"worktreeId": OLD})
            event = await hooks.tap.next_event_of(
                contract.STATUS_CLEARED, lambda c: c.reason == "worktree_removed"
            )
            assert event.data == {"paneKey": PANE, "worktreeId": OLD, "reason": "worktree_removed"}
            snapshot = await hooks.invoke(contract.SNAPSHOT)
            assert [(r.worktree_id, r.state) for r in snapshot.rows] == [(NEW, "working")]
            assert snapshot.fates == []
            saved = json.loads((hooks.paths.hooks_dir / "last-status.json").read_bytes())
            assert [r["worktreeId"] for r in saved["rows"]] == [NEW]
