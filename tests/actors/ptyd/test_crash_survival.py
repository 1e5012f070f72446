"""kill -9 of ptyd loses no agent and no byte (issue 6: crash survival via an fd keeper)."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio
from ptyd_harness import ROOT, EventTap

from actors.ptyd.cursor import StreamCursor
from orca.actor import RpcClient, open_rpc_client
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


async def test_kill_9_ptyd_mid_output_loses_no_byte_and_no_agent(tmp_path: Path) -> None:
    """After kill -9 of ptyd during seq 1 2000000 the same child finishes; stream is complete."""
    home = tmp_path / "home"
    paths = resolve_paths({"ORCA_HOME": str(home)}).ensure()
    sock = paths.runtime_dir / "ptyd-keeper.sock"
    pidfile = tmp_path / "ptyd.pid"
    env = dict(
        os.environ,
        ORCA_HOME=str(home),
        PYTHONPATH=str(ROOT),
        ORCA_PTYD_SCROLLBACK_BYTES=str(32 << 20),
        ORCA_PTYD_HISTORY_BYTES=str(64 << 20),
    )
    env.pop("ORCA_SUPERVISOR", None)
    keeper = start_keeper(sock, pidfile, env)
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
                first_ptyd = read_pid(pidfile)
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
                assert read_pid(pidfile) != first_ptyd
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
