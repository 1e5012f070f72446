"""The hooks actor as a real process: HTTP in, RPC in, events out, file on disk (issue 7)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import msgspec
import pytest
import trio
from support.hooks_harness import PANE, WT, post_hook, running_hooks

from orca.contracts import hooks as contract
from orca.contracts import sys as sys_contract
from orca.model.agent_status import AgentStatusRow, is_fresh
from orca.wire.errors import BadRequest

CLAUDE = {"session_id": "abc", "transcript_path": "/t.jsonl", "cwd": "/src/wt-a"}


async def test_hook_post_reaches_subscribers_and_snapshot(orca_home: Path) -> None:
    """A hook POST becomes one agentStatus.set for subscribers and a row in the snapshot
    (and, naming its session, one agentSession.bound: the snapshot is taken after it)."""
    with trio.fail_after(30):
        async with running_hooks(orca_home) as hooks:
            status, reply = await hooks.post(
                "claude", {**CLAUDE, "hook_event_name": "PreToolUse", "tool_name": "Bash"}
            )
            assert (status, reply) == (200, {"outcome": "applied"})
            event = await hooks.tap.next_event_of(contract.STATUS_SET)
            row = event.data["row"]
            assert (row["paneKey"], row["state"], row["source"], row["detail"]) == (
                PANE,
                "working",
                "hook",
                "Bash",
            )
            bound = await hooks.tap.next_event_of(contract.SESSION_BOUND)
            assert bound.seq == event.seq + 1 and bound.data["binding"]["sessionId"] == "abc"
            snapshot = await hooks.call("agentStatus.snapshot")
            assert snapshot["seq"] == bound.seq and snapshot["rows"] == [row]


async def test_wrong_secret_is_refused_and_writes_no_row(orca_home: Path) -> None:
    """Wrong secret → 403, no row, no event (issue 7)."""
    with trio.fail_after(30):
        async with running_hooks(orca_home) as hooks:
            status, _ = await hooks.post(
                "claude", {**CLAUDE, "hook_event_name": "Stop"}, secret="0" * 64
            )
            assert status == 403
            snapshot = await hooks.call("agentStatus.snapshot")
            assert snapshot["rows"] == [] and snapshot["seq"] == 0


async def test_retired_pane_rejects_late_status_until_live_restart(orca_home: Path) -> None:
    """retire_pane clears the row everywhere; a late hook is refused; restart lifts the fence."""
    with trio.fail_after(30):
        async with running_hooks(orca_home) as hooks:
            await hooks.post("claude", {**CLAUDE, "hook_event_name": "UserPromptSubmit"})
            assert (await hooks.call("agentStatus.retire_pane", {"paneKey": PANE})) == {
                "removed": True
            }
            await hooks.tap.next_event_of(contract.STATUS_SET)
            cleared = await hooks.tap.next_event_of(contract.STATUS_CLEARED)
            assert cleared.data == {"paneKey": PANE, "worktreeId": WT, "reason": "retired"}
            late, reply = await hooks.post("claude", {**CLAUDE, "hook_event_name": "Stop"})
            assert (late, reply["reason"]) == (409, "retired_pane")
            osc = await hooks.call(
                "agentStatus.ingest_osc", {"paneKey": PANE, "payload": '{"state": "working"}'}
            )
            assert osc == {"outcome": "rejected", "reason": "retired_pane"}
            assert await hooks.rows() == []
            lifted = await hooks.call("agentStatus.restart_pane", {"paneKey": PANE})
            assert lifted == {"fenceLifted": True}
            status, _ = await hooks.post("claude", {**CLAUDE, "hook_event_name": "SessionStart"})
            assert status == 200
            assert [r["state"] for r in await hooks.rows()] == ["waiting"]


async def test_osc_rows_carry_terminal_handle_into_hook_rows(orca_home: Path) -> None:
    """ptyd's OSC rows carry the terminal handle; a later hook keeps it (seed 03)."""
    with trio.fail_after(30):
        async with running_hooks(orca_home) as hooks:
            reply = await hooks.call(
                "agentStatus.ingest_osc",
                {
                    "paneKey": PANE,
                    "worktreeId": WT,
                    "terminalHandle": "term_abc",
                    "payload": json.dumps({"state": "working", "agent": "aider"}),
                },
            )
            assert reply == {"outcome": "applied", "reason": ""}
            await hooks.post("claude", {**CLAUDE, "hook_event_name": "Stop"})
            [row] = await hooks.rows()
            assert (row["state"], row["source"], row["terminalHandle"]) == (
                "done",
                "hook",
                "term_abc",
            )


async def test_osc_without_worktree_uses_the_pane_known_worktree(orca_home: Path) -> None:
    """ptyd sends only the pane key; the store places the row by the pane's known worktree."""
    with trio.fail_after(30):
        async with running_hooks(orca_home) as hooks:
            unknown = await hooks.call(
                "agentStatus.ingest_osc", {"paneKey": PANE, "payload": '{"state": "working"}'}
            )
            assert unknown["reason"] == "unknown_worktree"
            await hooks.call("agentStatus.restart_pane", {"paneKey": PANE, "worktreeId": WT})
            known = await hooks.call(
                "agentStatus.ingest_osc", {"paneKey": PANE, "payload": '{"state": "blocked"}'}
            )
            assert known["outcome"] == "applied"
            assert [(r["worktreeId"], r["state"]) for r in await hooks.rows()] == [(WT, "blocked")]


async def test_bad_rpc_input_is_refused_and_actor_keeps_serving(orca_home: Path) -> None:
    """A malformed pane key or OSC payload is the caller's fault; the actor keeps running."""
    with trio.fail_after(30):
        async with running_hooks(orca_home) as hooks:
            with pytest.raises(BadRequest):
                await hooks.call("agentStatus.ingest_osc", {"paneKey": "nope", "payload": "{}"})
            with pytest.raises(BadRequest):
                await hooks.call("agentStatus.ingest_osc", {"paneKey": PANE, "payload": "[" * 5000})
            with pytest.raises(BadRequest):
                await hooks.call(
                    "agentStatus.restart_pane", {"paneKey": PANE, "launchTokenSha256": "xyz"}
                )
            assert (await hooks.call("agentStatus.snapshot"))["rows"] == []


async def test_restart_hydrates_unconfirmed_rows_and_never_persists_structured(
    orca_home: Path,
) -> None:
    """After a restart the working row is restoredUnconfirmed and not fresh; structured rows
    never reach disk; a new endpoint is published and agents reach it (seed 02 §10, seed 03)."""
    structured_pane = "tab-2:9c1c2a9e-0000-4000-8000-000000000002"
    with trio.fail_after(60):
        async with running_hooks(orca_home) as hooks:
            await hooks.post(
                "claude",
                {**CLAUDE, "hook_event_name": "UserPromptSubmit"},
                extra={"X-Orca-Launch-Token": "launch-secret-1"},
            )
            reply = await hooks.call(
                "agentStatus.ingest_structured",
                {
                    "paneKey": structured_pane,
                    "worktreeId": WT,
                    "state": "attention",
                    "structuredHost": "local",
                    "agent": "claude",
                    "sessionId": "s-9",
                },
            )
            assert reply["outcome"] == "applied"
            states = {r["paneKey"]: r["state"] for r in await hooks.rows()}
            assert states == {PANE: "working", structured_pane: "blocked"}
            first_secret = hooks.secret
        status_file = hooks.paths.hooks_dir / "last-status.json"
        data = status_file.read_bytes()
        assert structured_pane.encode() not in data and b"launch-secret-1" not in data
        assert stat.S_IMODE(status_file.stat().st_mode) == 0o600
        assert stat.S_IMODE(status_file.parent.stat().st_mode) == 0o700
        endpoint_env = hooks.paths.hooks_dir / "endpoint.env"
        assert stat.S_IMODE(endpoint_env.stat().st_mode) == 0o600

        async with running_hooks(orca_home) as hooks:
            assert hooks.secret != first_secret
            [wire] = await hooks.rows()
            row = msgspec.convert(wire, AgentStatusRow)
            assert row.pane_key == PANE and row.restored_unconfirmed
            assert not is_fresh(row, row.updated_at_ms)
            stale, _ = await post_hook(
                hooks.port, first_secret, "claude", b"{}", {"X-Orca-Pane-Key": PANE}
            )
            assert stale == 403
            status, _ = await hooks.post(
                "claude",
                {**CLAUDE, "hook_event_name": "Stop"},
                extra={"X-Orca-Launch-Token": "launch-secret-1"},
            )
            assert status == 200
            [wire] = await hooks.rows()
            assert (wire["state"], wire["restoredUnconfirmed"]) == ("done", False)


async def test_clear_removes_the_row_without_fencing(orca_home: Path) -> None:
    """agentStatus.clear drops the row with one clear event; the pane may report again."""
    with trio.fail_after(30):
        async with running_hooks(orca_home) as hooks:
            await hooks.post("claude", {**CLAUDE, "hook_event_name": "UserPromptSubmit"})
            assert await hooks.call("agentStatus.clear", {"paneKey": PANE, "reason": "exit"}) == {
                "removed": True
            }
            await hooks.tap.next_event_of(contract.STATUS_SET)
            cleared = await hooks.tap.next_event_of(contract.STATUS_CLEARED)
            assert cleared.data["reason"] == "exit"
            assert await hooks.rows() == []
            status, _ = await hooks.post("claude", {**CLAUDE, "hook_event_name": "Stop"})
            assert status == 200 and [r["state"] for r in await hooks.rows()] == ["done"]


async def test_alias_moves_a_legacy_row_to_its_stable_pane(orca_home: Path) -> None:
    """A legacy numeric OSC row moves to its stable key once the alias is registered."""
    legacy = "tab-1:2"
    with trio.fail_after(30):
        async with running_hooks(orca_home) as hooks:
            reply = await hooks.call(
                "agentStatus.ingest_osc",
                {"paneKey": legacy, "worktreeId": WT, "payload": '{"state": "working"}'},
            )
            assert reply["outcome"] == "applied"
            refused, body = await hooks.post(
                "claude", {**CLAUDE, "hook_event_name": "Stop"}, pane=legacy
            )
            assert (refused, body["reason"]) == (400, "legacy_numeric_pane_key")
            await hooks.call("agentStatus.alias_pane", {"alias": legacy, "paneKey": PANE})
            assert [r["paneKey"] for r in await hooks.rows()] == [PANE]
            status, _ = await hooks.post(
                "claude", {**CLAUDE, "hook_event_name": "Stop"}, pane=legacy
            )
            assert status == 200
            assert [(r["paneKey"], r["state"]) for r in await hooks.rows()] == [(PANE, "done")]


async def test_served_ops_and_published_events_are_the_contract(orca_home: Path) -> None:
    """The actor serves exactly its contract's ops (plus sys.*) and publishes its events."""
    with trio.fail_after(30):
        async with running_hooks(orca_home) as hooks:
            hello = await hooks.client.invoke(sys_contract.HELLO)
            osc = contract.IngestOscArgs(
                pane_key=PANE, worktree_id=WT, payload=json.dumps({"state": "working"})
            )
            applied = await hooks.client.invoke(contract.INGEST_OSC, osc)
            assert applied == contract.IngestResult(outcome="applied")
            cleared = await hooks.client.invoke(contract.CLEAR, contract.ClearArgs(pane_key=PANE))
            assert cleared == contract.Removed(removed=True)
            seen: list[str] = []
            while contract.STATUS_CLEARED.type not in seen:
                event = (await hooks.tap.receive()).envelope
                if event.type != sys_contract.HEARTBEAT_TYPE:
                    seen.append(event.type)
    assert set(hello.capabilities) == set(contract.CONTRACT.ops) | set(sys_contract.CONTRACT.ops)
    assert set(seen) == {e.type for e in contract.EVENTS}
    # The permission events are published by held requests (test_permission_hold.py),
    # agentSession.bound by a hook naming its session (the first test here).
    every = {
        e.type for e in (*contract.EVENTS, *contract.PERMISSION_EVENTS, contract.SESSION_BOUND)
    }
    assert every == set(contract.CONTRACT.events)
