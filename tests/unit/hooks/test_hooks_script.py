"""The shipped POSIX hook script against a real endpoint (issue 7)."""

from __future__ import annotations

import hashlib
import json
import os
import socket
from pathlib import Path

import trio

from actors.hooks.endpoint_file import write_endpoint_env
from actors.hooks.http import HookHttpServer
from actors.hooks.service import HooksService
from actors.hooks.status_table import AgentStatusTable
from orca.contracts import hooks
from orca.hook_script import install_hook_script

PANE = "tab-1:3f1c2a9e-0000-4000-8000-000000000001"
WT = "repo1::/src/wt-a"
PAYLOAD = json.dumps(
    {
        "session_id": "s1",
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": {"command": "rm -rf build"},
    }
).encode()


def _env(**extra: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], **extra}


async def _run(script: Path, env: dict[str, str], agent: str = "claude") -> tuple[int, bytes]:
    result = await trio.run_process(
        ["/bin/sh", str(script), agent],
        stdin=PAYLOAD,
        capture_stdout=True,
        capture_stderr=True,
        env=env,
        check=False,
    )
    return result.returncode, result.stdout


async def test_script_outside_orca_prints_empty_object_and_exits_0(tmp_path: Path) -> None:
    """Without ORCA_PANE_KEY the script prints {} and exits 0 at once."""
    script = install_hook_script(tmp_path / "agent-hooks")
    with trio.fail_after(5):
        assert await _run(script, _env()) == (0, b"{}\n")


async def test_script_without_endpoint_file_exits_quietly(tmp_path: Path) -> None:
    """Inside a pane but with Orca not running (no endpoint.env) it still just prints {}."""
    script = install_hook_script(tmp_path / "agent-hooks")
    with trio.fail_after(5):
        assert await _run(script, _env(ORCA_PANE_KEY=PANE)) == (0, b"{}\n")


async def test_script_without_curl_exits_quietly(tmp_path: Path) -> None:
    """Where curl is missing the script still prints {} and exits 0."""
    hooks_dir = tmp_path / "agent-hooks"
    script = install_hook_script(hooks_dir)
    write_endpoint_env(hooks_dir, 9, "x" * 64)
    empty_bin = tmp_path / "empty-bin"
    empty_bin.mkdir()
    env = {"PATH": str(empty_bin), "ORCA_PANE_KEY": PANE}
    with trio.fail_after(5):
        assert await _run(script, env) == (0, b"{}\n")


async def test_script_with_dead_endpoint_gives_up_quickly(tmp_path: Path) -> None:
    """A stale endpoint (server gone) costs the agent at most the short timeouts."""
    hooks_dir = tmp_path / "agent-hooks"
    script = install_hook_script(hooks_dir)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead_port = probe.getsockname()[1]
    write_endpoint_env(hooks_dir, dead_port, "x" * 64)
    with trio.fail_after(5):
        assert await _run(script, _env(ORCA_PANE_KEY=PANE)) == (0, b"{}\n")


async def test_the_trace_says_what_became_of_each_call(tmp_path: Path) -> None:
    """ORCA_HOOK_TRACE: a line per call, why nothing was sent or the answer's status;
    the agent still reads only {}."""
    hooks_dir = tmp_path / "agent-hooks"
    script = install_hook_script(hooks_dir)
    trace = tmp_path / "trace.log"
    env = _env(ORCA_PANE_KEY=PANE, ORCA_HOOK_TRACE=str(trace))
    with trio.fail_after(10):
        assert await _run(script, env) == (0, b"{}\n")  # no endpoint file yet
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            dead_port = probe.getsockname()[1]
        write_endpoint_env(hooks_dir, dead_port, "x" * 64)
        assert await _run(script, env) == (0, b"{}\n")  # nobody listens there
        service = HooksService(AgentStatusTable(), lambda _event: None, lambda: None)
        async with trio.open_nursery() as nursery:
            port = await nursery.start(HookHttpServer("y" * 64, service.ingest_hook).run)
            write_endpoint_env(hooks_dir, port, "z" * 64)  # a wrong secret
            assert await _run(script, env) == (0, b"{}\n")
            nursery.cancel_scope.cancel()
    lines = [line.split(" ", 3)[1:] for line in trace.read_text().splitlines()]
    assert lines == [
        ["claude", PANE, f"not sent: no endpoint file {hooks_dir / 'endpoint.env'}"],
        ["claude", PANE, f"port {dead_port}: http 000"],
        ["claude", PANE, f"port {port}: http 403"],
    ], lines


async def test_script_posts_payload_with_pane_identity(tmp_path: Path) -> None:
    """In a pane with Orca running, the payload reaches the status table under the pane's identity."""
    hooks_dir = tmp_path / "agent-hooks"
    script = install_hook_script(hooks_dir)
    table = AgentStatusTable()
    published: list[hooks.StatusEventData] = []
    service = HooksService(table, published.append, lambda: None)
    secret = "f" * 64
    env = _env(
        ORCA_PANE_KEY=PANE,
        ORCA_TAB_ID="tab-1",
        ORCA_WORKTREE_ID=WT,
        ORCA_AGENT_LAUNCH_TOKEN="launch-token-1",
    )
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            # Restarted server: the script must pick up the new port and secret.
            for _ in range(2):
                server = HookHttpServer(secret, service.ingest_hook)
                scope = trio.CancelScope()

                async def serve(
                    server: HookHttpServer = server,
                    scope: trio.CancelScope = scope,
                    *,
                    task_status: trio.TaskStatus[int],
                ) -> None:
                    with scope:
                        await server.run(task_status=task_status)

                port = await nursery.start(serve)
                write_endpoint_env(hooks_dir, port, secret)
                assert await _run(script, env) == (0, b"{}\n")
                scope.cancel()
                secret = "e" * 64
    row = table.row(PANE)
    assert row is not None and (row.state, row.agent, row.worktree_id, row.tab_id) == (
        "blocked",
        "claude",
        WT,
        "tab-1",
    )
    assert [type(event) for event in published] == [hooks.StatusSet, hooks.StatusSet]
    assert table.authority.commitments[PANE] == hashlib.sha256(b"launch-token-1").hexdigest()
    assert b"launch-token-1" not in script.read_bytes()


async def test_script_forwards_a_large_payload(tmp_path: Path) -> None:
    """A PostToolUse payload carrying a large tool response (300 KB) is delivered whole."""
    hooks_dir = tmp_path / "agent-hooks"
    script = install_hook_script(hooks_dir)
    table = AgentStatusTable()
    service = HooksService(table, lambda event: None, lambda: None)
    secret = "d" * 64
    big = json.dumps(
        {
            "session_id": "s1",
            "hook_event_name": "PostToolUse",
            "tool_name": "Read",
            "tool_response": {"content": "x" * 300_000},
        }
    ).encode()
    env = _env(ORCA_PANE_KEY=PANE, ORCA_WORKTREE_ID=WT)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            server = HookHttpServer(secret, service.ingest_hook)
            port = await nursery.start(server.run)
            write_endpoint_env(hooks_dir, port, secret)
            result = await trio.run_process(
                ["/bin/sh", str(script), "claude"],
                stdin=big,
                capture_stdout=True,
                env=env,
                check=False,
            )
            nursery.cancel_scope.cancel()
    assert (result.returncode, result.stdout) == (0, b"{}\n")
    row = table.row(PANE)
    assert row is not None and (row.state, row.detail) == ("working", "Read")


def test_install_writes_0700_atomically_and_only_when_changed(tmp_path: Path) -> None:
    """The script is owner-only, rewritten in place when tampered with, and no temp is left."""
    hooks_dir = tmp_path / "agent-hooks"
    script = install_hook_script(hooks_dir)
    assert script.stat().st_mode & 0o777 == 0o700
    assert hooks_dir.stat().st_mode & 0o777 == 0o700
    before = script.stat().st_ino
    assert install_hook_script(hooks_dir) == script and script.stat().st_ino == before
    script.write_text("tampered")
    script.chmod(0o755)
    install_hook_script(hooks_dir)
    assert script.read_bytes().startswith(b"#!/bin/sh\n")
    assert script.stat().st_mode & 0o777 == 0o700
    assert sorted(p.name for p in hooks_dir.iterdir()) == [script.name]


def test_script_names_what_the_hooks_actor_serves() -> None:
    """The CLI-side constants the script is rendered from match the actor's endpoint."""
    from actors.hooks import agent_events, endpoint_file
    from orca import hook_script

    assert hook_script.KNOWN_AGENTS == agent_events.KNOWN_AGENTS
    assert hook_script.ENDPOINT_FILE_NAME == endpoint_file.ENDPOINT_FILE_NAME
