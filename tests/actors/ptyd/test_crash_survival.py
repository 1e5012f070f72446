"""kill -9 of ptyd loses no agent and no byte (issue 6: crash survival via an fd keeper)."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import psutil
import trio
from support.actors import ActorProcess, actor_tap, start_actor, stop_actor
from support.ptyd_harness import TREE_ENV, call_retrying, read_pid, start_keeper, tree_env

from orca.actor import open_rpc_client
from orca.client.cursor import StreamCursor
from orca.contracts import ptyd as contract
from orca.paths import resolve_paths

WT = "repo1::/w/crash"
LINES = 2_000_000
# orcad stops its tree gracefully on SIGTERM (the keeper too); SIGKILL only after this.
ORCAD_STOP_GRACE_S = 20.0


async def kill_9_scenario(
    home: Path, keeper: subprocess.Popen[bytes], ptyd_pid: Callable[[], int]
) -> None:
    """Spawn seq 1 2000000, kill -9 ptyd after 1 MB, check the same child and every byte."""
    paths = resolve_paths({"ORCA_HOME": str(home)})
    tap = actor_tap(home, contract.CONTRACT, topics=[contract.OUTPUT.type, contract.EXIT.type])
    child_pid = 0
    try:
        async with (
            open_rpc_client(paths.ipc_endpoint("ptyd", "rpc")) as client,
            trio.open_nursery() as nursery,
        ):
            with trio.fail_after(60):
                await call_retrying(client, "term.list", {})
                await tap.start(nursery)
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
                    event = await tap.next_of(contract.OUTPUT)
                    fresh = cursor.accept(event.offset, event.data)
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
                        await tap.receive()  # output, exit or heartbeat: look again
                assert reply["exitCode"] == 0
                nursery.cancel_scope.cancel()
        expected = b"go\r\n" + b"".join(b"%d\r\n" % i for i in range(1, LINES + 1))
        got = b"".join(received)
        assert len(got) == len(expected)
        assert hashlib.sha256(got).hexdigest() == hashlib.sha256(expected).hexdigest()
    finally:
        tap.close()
        await stop_actor(keeper, grace=ORCAD_STOP_GRACE_S)
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


def start_orcad(home: Path) -> ActorProcess:
    paths = resolve_paths({"ORCA_HOME": str(home)}).ensure()
    (paths.config_dir / "supervisor.toml").write_text(ONLY_PTYD)
    return start_actor("supervisor", home, TREE_ENV)


def ptyd_child_of(orcad: int) -> int:
    for child in psutil.Process(orcad).children():
        if "actors.ptyd" in child.cmdline():
            return child.pid
    raise AssertionError("orcad runs no ptyd")


async def test_kill_9_ptyd_under_orcad_loses_nothing(tmp_path: Path) -> None:
    """Under the real supervisor (fd keeper + subreaper), kill -9 of ptyd loses nothing."""
    home = tmp_path / "home"
    orcad = start_orcad(home)
    await kill_9_scenario(home, orcad.proc, lambda: ptyd_child_of(orcad.pid))


async def test_child_exiting_while_ptyd_is_down_reports_its_status(tmp_path: Path) -> None:
    """An agent that exits during a ptyd outage is reaped by orcad; its code and output arrive."""
    home = tmp_path / "home"
    orcad = start_orcad(home)
    paths = resolve_paths({"ORCA_HOME": str(home)})
    tap = actor_tap(home, contract.CONTRACT, topics=[contract.EXIT.type])
    try:
        async with (
            open_rpc_client(paths.ipc_endpoint("ptyd", "rpc")) as client,
            trio.open_nursery() as nursery,
        ):
            with trio.fail_after(60):
                await call_retrying(client, "term.list", {})
                await tap.start(nursery)
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
                    await tap.receive()  # an exit event, or a heartbeat: look again
                assert ptyd_child_of(orcad.pid) != first
                assert reply["exitCode"] == 7
                assert b"last-words" in reply["data"]
                nursery.cancel_scope.cancel()
    finally:
        tap.close()
        await stop_actor(orcad.proc, grace=ORCAD_STOP_GRACE_S)


async def test_session_that_exited_before_the_crash_keeps_its_status(tmp_path: Path) -> None:
    """A session whose child exited before kill -9 of ptyd is not watched again after it."""
    home = tmp_path / "home"
    orcad = start_orcad(home)
    paths = resolve_paths({"ORCA_HOME": str(home)})
    tap = actor_tap(home, contract.CONTRACT, topics=[contract.EXIT.type])
    try:
        async with (
            open_rpc_client(paths.ipc_endpoint("ptyd", "rpc")) as client,
            trio.open_nursery() as nursery,
        ):
            with trio.fail_after(60):
                await call_retrying(client, "term.list", {})
                await tap.start(nursery)
                args = {"argv": ["/bin/sh", "-c", "read x; exit 3"], "cwd": "/", "worktreeId": WT}
                sid = (await call_retrying(client, "term.spawn", args))["sessionId"]
                await client.call("term.write", {"sessionId": sid, "text": "go\n"})
                assert (await tap.next_of(contract.EXIT)).exit_code == 3
                os.kill(ptyd_child_of(orcad.pid), signal.SIGKILL)
                rows = (await call_retrying(client, "term.list", {}))["sessions"]
                assert [(r["sessionId"], r["running"], r["exitCode"]) for r in rows] == [
                    (sid, False, 3)
                ]
                nursery.cancel_scope.cancel()
    finally:
        tap.close()
        await stop_actor(orcad.proc, grace=ORCAD_STOP_GRACE_S)


async def test_a_huge_argv_keeps_every_terminal_through_a_kill_9(tmp_path: Path) -> None:
    """A session started with 210 KB of arguments (a long prompt on the command line): its
    keeper record would not fit a packet (EMSGSIZE turned crash survival off for every
    session), so it is kept with its argv shortened. kill -9 of ptyd: both it and a plain
    session come back with their agents, the long one's arguments cut with ``…``."""
    home = tmp_path / "home"
    orcad = start_orcad(home)
    paths = resolve_paths({"ORCA_HOME": str(home)})
    long_args = [c * 70_000 for c in "abc"]  # (one argument is at most 128 KiB: execve)
    try:
        async with open_rpc_client(paths.ipc_endpoint("ptyd", "rpc")) as client:
            with trio.fail_after(60):
                await call_retrying(client, "term.list", {})
                spawned = []
                for argv in (["/bin/sh", "-c", "exec cat", "sh", *long_args], ["/bin/cat"]):
                    reply = await call_retrying(
                        client, "term.spawn", {"argv": argv, "cwd": "/", "worktreeId": WT}
                    )
                    spawned.append((reply["sessionId"], reply["pid"]))
                first = ptyd_child_of(orcad.pid)
                os.kill(first, signal.SIGKILL)
                rows = (await call_retrying(client, "term.list", {}))["sessions"]
                assert ptyd_child_of(orcad.pid) != first
                assert sorted((r["sessionId"], r["pid"]) for r in rows) == sorted(spawned)
                assert all(r["running"] for r in rows)
                [long_row] = [r for r in rows if r["sessionId"] == spawned[0][0]]
                assert long_row["argv"][:4] == ["/bin/sh", "-c", "exec cat", "sh"]
                cut = long_row["argv"][4:]
                assert [a[0] for a in cut] == ["a", "b", "c"]
                assert all(a.endswith("…") and len(a) < 70_000 for a in cut)
    finally:
        await stop_actor(orcad.proc, grace=ORCAD_STOP_GRACE_S)
