"""A held PermissionRequest hook: the real script, the real hooks actor (issue 27).

The agent's side is the installed hook script in its ``permission`` mode, run as the
agents run it (payload on stdin, pane identity in the environment); what it prints is
what Claude Code / Codex would read. Every way a request ends is exercised once: a
verdict, a second answer (idempotent), the prompt answered in the agent's terminal, the
hold running out, the agent giving up, a pane the caller has no authority over.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import trio
from support.hooks_harness import PANE, WT, HooksProcess, running_hooks

from orca.contracts import hooks as contract
from orca.hook_script import HOOK_SCRIPT_NAME
from orca.paths import resolve_paths
from orca.wire.errors import NotFound

REQUEST = {
    "hook_event_name": "PermissionRequest",
    "session_id": "s-1",
    "tool_name": "Bash",
    "tool_input": {"command": "rm -rf build/"},
}


def _script(hooks: HooksProcess) -> Path:
    return resolve_paths({"ORCA_HOME": str(hooks.home)}).hooks_dir / HOOK_SCRIPT_NAME


def _agent_env(pane: str = PANE) -> dict[str, str]:
    return {**os.environ, "ORCA_PANE_KEY": pane, "ORCA_WORKTREE_ID": WT, "ORCA_TAB_ID": "tab-1"}


async def _run_hook(script: Path, hold_s: int, env: dict[str, str]) -> dict[str, object]:
    """The script as the agent runs it: what it printed, as the agent parses it."""
    done = await trio.run_process(
        [str(script), "claude", "permission", str(hold_s)],
        stdin=json.dumps(REQUEST).encode(),
        capture_stdout=True,
        env=env,
    )
    lines = done.stdout.decode().splitlines()
    assert len(lines) == 1, f"one JSON document, got {done.stdout!r}"
    parsed: dict[str, object] = json.loads(lines[0])
    return parsed


def _held(
    hooks: HooksProcess, hold_s: int = 30
) -> tuple[dict[str, dict[str, object]], Callable[[], Awaitable[None]]]:
    """(a box that gets what the hook printed, the task that runs the hook)."""
    box: dict[str, dict[str, object]] = {}

    async def run() -> None:
        box["out"] = await _run_hook(_script(hooks), hold_s, _agent_env())

    return box, run


async def test_a_verdict_reaches_the_agent_once_and_the_row_goes_on(orca_home: Path) -> None:
    """Allow from the web: the script prints Claude's allow decision; the row leaves
    blocked at once; a second answer (deny) is ``already_settled`` with the first."""
    with trio.fail_after(30):
        async with running_hooks(orca_home) as hooks, trio.open_nursery() as nursery:
            box, run = _held(hooks)
            nursery.start_soon(run)
            # The row goes blocked first (filed as any hook), then the request is held.
            blocked = await hooks.tap.next_of(
                contract.STATUS_SET, lambda e: e.row.state == "blocked"
            )
            assert blocked.row.pane_key == PANE
            requested = await hooks.tap.next_of(contract.PERMISSION_REQUESTED)
            request = requested.request
            assert (request.pane_key, request.tool_name, request.summary) == (
                PANE,
                "Bash",
                "rm -rf build/",
            )
            pending = await hooks.invoke(contract.PERMISSION_SNAPSHOT)
            assert [r.request_id for r in pending.pending] == [request.request_id]

            first = await hooks.invoke(
                contract.ANSWER_PERMISSION,
                contract.AnswerPermissionArgs(
                    request_id=request.request_id, behavior="allow", by="web:phone"
                ),
            )
            again = await hooks.invoke(
                contract.ANSWER_PERMISSION,
                contract.AnswerPermissionArgs(
                    request_id=request.request_id, behavior="deny", by="ui"
                ),
            )
            assert (first.outcome, first.settlement.outcome, first.settlement.by) == (
                "decided",
                "allow",
                "web:phone",
            )
            assert again.outcome == "already_settled" and again.settlement == first.settlement
            settled = await hooks.tap.next_of(contract.PERMISSION_SETTLED)
            assert settled.settlement == first.settlement
            working = await hooks.tap.next_of(
                contract.STATUS_SET, lambda e: e.row.state == "working"
            )
            assert working.row.pane_key == PANE
            assert (await hooks.invoke(contract.PERMISSION_SNAPSHOT)).pending == []
        assert box["out"] == {
            "hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "allow"},
            }
        }


async def test_deny_carries_its_message(orca_home: Path) -> None:
    with trio.fail_after(30):
        async with running_hooks(orca_home) as hooks, trio.open_nursery() as nursery:
            box, run = _held(hooks)
            nursery.start_soon(run)
            request = (await hooks.tap.next_of(contract.PERMISSION_REQUESTED)).request
            await hooks.invoke(
                contract.ANSWER_PERMISSION,
                contract.AnswerPermissionArgs(
                    request_id=request.request_id, behavior="deny", message="not on main", by="ui"
                ),
            )
        decision = box["out"]["hookSpecificOutput"]["decision"]  # type: ignore[index]
        assert decision == {"behavior": "deny", "message": "not on main"}


async def test_the_prompt_answered_in_the_terminal_releases_the_hold(orca_home: Path) -> None:
    """Keys typed into the blocked pane (ptyd's pane_input) answer the prompt there:
    the hook gets no verdict (the agent already has the user's), the request settles
    ``answered_elsewhere``, and a late web answer is told so."""
    with trio.fail_after(30):
        async with running_hooks(orca_home) as hooks, trio.open_nursery() as nursery:
            box, run = _held(hooks)
            nursery.start_soon(run)
            request = (await hooks.tap.next_of(contract.PERMISSION_REQUESTED)).request
            await hooks.invoke(contract.PANE_INPUT, contract.PaneInputArgs(pane_key=PANE))
            settled = await hooks.tap.next_of(contract.PERMISSION_SETTLED)
            assert (settled.settlement.outcome, settled.settlement.by) == (
                "answered_elsewhere",
                "terminal",
            )
            late = await hooks.invoke(
                contract.ANSWER_PERMISSION,
                contract.AnswerPermissionArgs(request_id=request.request_id, behavior="allow"),
            )
            assert late.outcome == "already_settled"
        assert box["out"] == {}


async def test_a_key_typed_before_the_ask_answers_nothing_however_late_its_word_comes(
    orca_home: Path,
) -> None:
    """ptyd's word of a key reaches hooks after the ask that key made the agent send,
    its age measured when ptyd sent it (0 here): its time on the way and queued in hooks
    counts too, from its stamp on the machine's monotonic clock. Under load that wait
    was longer than the agent took to ask, the key "answered" the ask and the row showed
    working (CI: test_approve_cli)."""
    with trio.fail_after(30):
        async with running_hooks(orca_home) as hooks, trio.open_nursery() as nursery:
            typed_at_ms = int(time.monotonic() * 1000) - 200  # the key, before the ask
            _box, run = _held(hooks)
            nursery.start_soon(run)
            await hooks.tap.next_of(contract.PERMISSION_REQUESTED)
            late = contract.PaneInputArgs(
                pane_key=PANE, evidence_age_ms=0, typed_at_monotonic_ms=typed_at_ms
            )
            result = await hooks.invoke(contract.PANE_INPUT, late)
            assert result.outcome == "unchanged", result
            (row,) = await hooks.rows()
            assert row["state"] == "blocked"
            nursery.cancel_scope.cancel()


async def test_no_verdict_in_time_leaves_the_terminal_prompt(orca_home: Path) -> None:
    """The hold runs out: ``{}`` (the agent asks in its own terminal), the row stays
    blocked, the request settles ``timeout``."""
    with trio.fail_after(30):
        async with running_hooks(orca_home) as hooks:
            out = await _run_hook(_script(hooks), 1, _agent_env())
            assert out == {}
            settled = await hooks.tap.next_of(contract.PERMISSION_SETTLED)
            assert settled.settlement.outcome == "timeout"
            (row,) = await hooks.rows()
            assert row["state"] == "blocked"


async def test_an_agent_that_gives_up_withdraws_its_request(orca_home: Path) -> None:
    """The hook process is killed (the agent's own timeout, the user quit): the held
    connection closes and the request is withdrawn at once, not after its hold."""
    with trio.fail_after(30):
        async with running_hooks(orca_home) as hooks:
            proc = await trio.lowlevel.open_process(
                [str(_script(hooks)), "claude", "permission", "600"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                env=_agent_env(),
                start_new_session=True,
            )
            try:
                assert proc.stdin is not None
                await proc.stdin.send_all(json.dumps(REQUEST).encode())
                await proc.stdin.aclose()
                await hooks.tap.next_of(contract.PERMISSION_REQUESTED)
                os.killpg(proc.pid, signal.SIGKILL)  # the script and its curl
                settled = await hooks.tap.next_of(contract.PERMISSION_SETTLED)
                assert settled.settlement.outcome == "withdrawn"
            finally:
                proc.kill()
                await proc.wait()


async def test_a_pane_without_authority_is_not_held(orca_home: Path) -> None:
    """A malformed pane key is refused (400): the script prints ``{}`` at once and no
    request is published."""
    with trio.fail_after(30):
        async with running_hooks(orca_home) as hooks:
            out = await _run_hook(_script(hooks), 30, _agent_env(pane="not-a-pane-key"))
            assert out == {}
            assert (await hooks.invoke(contract.PERMISSION_SNAPSHOT)).pending == []


async def test_unknown_request_is_not_found(orca_home: Path) -> None:
    with trio.fail_after(30):
        async with running_hooks(orca_home) as hooks:
            with pytest.raises(NotFound):
                await hooks.invoke(
                    contract.ANSWER_PERMISSION,
                    contract.AnswerPermissionArgs(request_id="feedfacefeedface", behavior="allow"),
                )
