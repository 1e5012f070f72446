"""kill -9 of ptyd loses no agent and no byte (issue 6: crash survival via an fd keeper)."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import trio
from ptyd_harness import ROOT, EventTap

from orca.actor import RpcClient, open_rpc_client
from orca.client.cursor import StreamCursor
from orca.paths import resolve_paths
from orca.wire.errors import Unavailable

WT = "repo1::/w/crash"
LINES = 2_000_000
KEEPER_SCRIPT = Path(__file__).with_name("fd_keeper_process.py")


async def call_retrying(client: RpcClient, op: str, args: dict[str, Any]) -> Any:
    """Call, retrying while ptyd is down (the request waits for the restarted socket)."""
    while True:
        try:
            return await client.call(op, args, timeout=3)
        except Unavailable:
            continue


def start_keeper(sock: Path, pidfile: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """The reference keeper (what the supervisor must do), which starts ptyd itself."""
    return subprocess.Popen([sys.executable, str(KEEPER_SCRIPT), str(sock), str(pidfile)], env=env)


def read_pid(pidfile: Path) -> int:
    return int(pidfile.read_text())


def tree_env(home: Path) -> dict[str, str]:
    env = dict(
        os.environ,
        ORCA_HOME=str(home),
        PYTHONPATH=str(ROOT),
        ORCA_PTYD_SCROLLBACK_BYTES=str(32 << 20),
        ORCA_PTYD_HISTORY_BYTES=str(64 << 20),
    )
    env.pop("ORCA_SUPERVISOR", None)
    return env


async def kill_9_scenario(
    home: Path, keeper: subprocess.Popen[bytes], ptyd_pid: Callable[[], int]
) -> None:
    """Spawn seq 1 2000000, kill -9 ptyd after 1 MB, check the same child and every byte."""
    paths = resolve_paths({"ORCA_HOME": str(home)})
    tap = EventTap(paths.ipc_endpoint("ptyd", "pub"), ["term.output", "term.exit", "sys.heartbeat"])
    child_pid = 0
    try:
        async with (
            open_rpc_client(paths.ipc_endpoint("ptyd", "rpc")) as client,
            trio.open_nursery() as nursery,
        ):
            with trio.fail_after(60):
                await call_retrying(client, "term.list", {})
                await nursery.start(tap.run)
                spawned = await call_retrying(
                    client,
                    "term.spawn",
                    {
                        "argv": ["/bin/sh", "-c", f"read go; exec seq 1 {LINES}"],
                        "cwd": "/",
                        "worktreeId": WT,
                    },
                )
                sid, child_pid = spawned["sessionId"], spawned["pid"]
                first_ptyd = ptyd_pid()
                cursor = StreamCursor(0)
                received: list[bytes] = []
                await client.call("term.write", {"sessionId": sid, "text": "go\n"})
                while cursor.offset < 1_000_000:
                    event = await tap.next_of("term.output")
                    fresh = cursor.accept(event.data["offset"], event.data["data"])
                    if fresh is None:
                        reply = await client.call(
                            "term.read", {"sessionId": sid, "since": cursor.offset}
                        )
                        fresh = cursor.accept(reply["offset"], reply["data"])
                        assert fresh is not None and not reply["gap"]
                    received.append(fresh)
                os.kill(first_ptyd, signal.SIGKILL)
                # The agent is alive while ptyd is dead (blocked on a full PTY buffer).
                os.kill(child_pid, 0)
                rows = (await call_retrying(client, "term.list", {}))["sessions"]
                assert ptyd_pid() != first_ptyd
                assert [(r["sessionId"], r["pid"]) for r in rows] == [(sid, child_pid)]
                while True:
                    reply = await call_retrying(
                        client, "term.read", {"sessionId": sid, "since": cursor.offset}
                    )
                    assert not reply["gap"]
                    received.append(cursor.accept(reply["offset"], reply["data"]) or b"")
                    if (
                        reply["outputEnded"]
                        and not reply["running"]
                        and cursor.offset == reply["end"]
                    ):
                        break
                    if cursor.offset == reply["end"]:
                        await tap.receive.receive()  # output, exit or heartbeat: look again
                assert reply["exitCode"] == 0
                nursery.cancel_scope.cancel()
        expected = b"go\r\n" + b"".join(b"%d\r\n" % i for i in range(1, LINES + 1))
        got = b"".join(received)
        assert len(got) == len(expected)
        assert hashlib.sha256(got).hexdigest() == hashlib.sha256(expected).hexdigest()
    finally:
        tap.close()
        keeper.terminate()
        await trio.to_thread.run_sync(keeper.wait)
        if child_pid:
            try:
                os.kill(child_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


async def test_kill_9_ptyd_with_reference_keeper_loses_nothing(tmp_path: Path) -> None:
    """With the reference keeper (fd_keeper_process.py), kill -9 of ptyd loses nothing."""
    home = tmp_path / "home"
    paths = resolve_paths({"ORCA_HOME": str(home)}).ensure()
    pidfile = tmp_path / "ptyd.pid"
    keeper = start_keeper(paths.runtime_dir / "ptyd-keeper.sock", pidfile, tree_env(home))
    await kill_9_scenario(home, keeper, lambda: read_pid(pidfile))


ONLY_PTYD = """
[supervisor]
backoff_initial_s = 0.05
backoff_max_s = 0.2
heartbeat_interval_s = 0.5
heartbeat_timeout_s = 5.0

[[child]]
name = "ptyd"
module = "actors.ptyd"
restart = "permanent"
"""


def start_orcad(home: Path) -> subprocess.Popen[bytes]:
    paths = resolve_paths({"ORCA_HOME": str(home)}).ensure()
    (paths.config_dir / "supervisor.toml").write_text(ONLY_PTYD)
    with (home / "orcad.out").open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "actors.supervisor"],
            env=tree_env(home),
            stdout=log,
            stderr=log,
            cwd=ROOT,
        )


def ptyd_child_of(orcad: int) -> int:
    for child in psutil.Process(orcad).children():
        if "actors.ptyd" in child.cmdline():
            return child.pid
    raise AssertionError("orcad runs no ptyd")


async def test_kill_9_ptyd_under_orcad_loses_nothing(tmp_path: Path) -> None:
    """Under the real supervisor (fd keeper + subreaper), kill -9 of ptyd loses nothing."""
    home = tmp_path / "home"
    orcad = start_orcad(home)
    await kill_9_scenario(home, orcad, lambda: ptyd_child_of(orcad.pid))


async def test_child_exiting_while_ptyd_is_down_reports_its_status(tmp_path: Path) -> None:
    """An agent that exits during a ptyd outage is reaped by orcad; its code and output arrive."""
    home = tmp_path / "home"
    orcad = start_orcad(home)
    paths = resolve_paths({"ORCA_HOME": str(home)})
    tap = EventTap(paths.ipc_endpoint("ptyd", "pub"), ["term.exit", "sys.heartbeat"])
    try:
        async with (
            open_rpc_client(paths.ipc_endpoint("ptyd", "rpc")) as client,
            trio.open_nursery() as nursery,
        ):
            with trio.fail_after(60):
                await call_retrying(client, "term.list", {})
                await nursery.start(tap.run)
                spawned = await call_retrying(
                    client,
                    "term.spawn",
                    {
                        "argv": ["/bin/sh", "-c", "sleep 0.3; echo last-words; exit 7"],
                        "cwd": "/",
                        "worktreeId": WT,
                    },
                )
                first = ptyd_child_of(orcad.pid)
                os.kill(first, signal.SIGKILL)
                # The child exits during the outage (ptyd takes ~1 s to come back).
                while True:
                    reply = await call_retrying(
                        client, "term.read", {"sessionId": spawned["sessionId"]}
                    )
                    if not reply["running"] and reply["outputEnded"]:
                        break
                    await tap.receive.receive()  # an exit event, or a heartbeat: look again
                assert ptyd_child_of(orcad.pid) != first
                assert reply["exitCode"] == 7
                assert b"last-words" in reply["data"]
                nursery.cancel_scope.cancel()
    finally:
        tap.close()
        orcad.terminate()
        await trio.to_thread.run_sync(orcad.wait)


async def test_session_that_exited_before_the_crash_keeps_its_status(tmp_path: Path) -> None:
    """A session whose child exited before kill -9 of ptyd is not watched again after it."""
    home = tmp_path / "home"
    orcad = start_orcad(home)
    paths = resolve_paths({"ORCA_HOME": str(home)})
    tap = EventTap(paths.ipc_endpoint("ptyd", "pub"), ["term.exit"])
    try:
        async with (
            open_rpc_client(paths.ipc_endpoint("ptyd", "rpc")) as client,
            trio.open_nursery() as nursery,
        ):
            with trio.fail_after(60):
                await call_retrying(client, "term.list", {})
                await nursery.start(tap.run)
                args = {"argv": ["/bin/sh", "-c", "read x; exit 3"], "cwd": "/", "worktreeId": WT}
                sid = (await call_retrying(client, "term.spawn", args))["sessionId"]
                await client.call("term.write", {"sessionId": sid, "text": "go\n"})
                assert (await tap.next_of("term.exit")).data["exitCode"] == 3
                os.kill(ptyd_child_of(orcad.pid), signal.SIGKILL)
                rows = (await call_retrying(client, "term.list", {}))["sessions"]
                assert [(r["sessionId"], r["running"], r["exitCode"]) for r in rows] == [
                    (sid, False, 3)
                ]
                nursery.cancel_scope.cancel()
    finally:
        tap.close()
        orcad.terminate()
        await trio.to_thread.run_sync(orcad.wait)
