"""Terminals survive a kill -9 of ptyd under the real supervisor (orcad is the fd keeper)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import uuid
from pathlib import Path

import psutil
import trio
import zmq
from support.lifecycle import lifecycle
from support.procs import alive, descendants, run_cli, write_config

from orca.actor import open_rpc_client
from orca.actor.zsocket import ZSocket, new_socket
from orca.contracts import supervisor as sup_contract
from orca.paths import resolve_paths
from orca.wire.envelope import decode_event

TREE = """
[supervisor]
backoff_initial_s = 0.05
heartbeat_interval_s = 0.5
heartbeat_timeout_s = 5
[[child]]
name = "store"
module = "actors.store"
[[child]]
name = "ptyd"
module = "actors.ptyd"
"""
LINES = 20000
# Prints LINES numbered lines in bursts, so a kill lands while output is flowing, then
# stays alive: the agent must be the same process after the restart.
SCRIPT = f"i=1; while [ $i -le {LINES} ]; do echo line$i; i=$((i+1)); done; exec sleep 60"


def expected_output() -> bytes:
    return b"".join(f"line{i}\r\n".encode() for i in range(1, LINES + 1))


class OutputWatch:
    """Follows a session's ``term.output`` events; wakes waiters as its end offset grows."""

    def __init__(self, pub_endpoint: str, session_id: str) -> None:
        sock = new_socket(zmq.SUB)
        sock.setsockopt(zmq.SUBSCRIBE, f"term.output.{session_id}".encode())
        sock.connect(pub_endpoint)
        self.zs = ZSocket(sock, self._on_message)
        self.session_id = session_id
        self.end = 0
        self._grew = trio.Event()

    def _on_message(self, frames: list[bytes]) -> None:
        data = decode_event(frames[1]).data
        if data["sessionId"] == self.session_id:
            self.end = max(self.end, data["offset"] + len(data["data"]))
            self._grew.set()

    async def wait_for(self, offset: int) -> None:
        while self.end < offset:
            self._grew = trio.Event()
            await self._grew.wait()


async def read_all(client, session_id: str, want: int) -> bytes:  # type: ignore[no-untyped-def]
    """The session's output from offset 0, ``want`` bytes of it (already produced)."""
    out = b""
    while len(out) < want:
        reply = await client.call(
            "term.read", {"sessionId": session_id, "since": len(out)}, timeout=5, retries=3
        )
        assert not reply["gap"], "the scrollback must still hold the whole stream"
        assert reply["data"], f"output stops at {len(out)} of {want} bytes"
        out += reply["data"]
    return out


async def test_kill_9_of_ptyd_keeps_the_agent_and_every_byte(
    orca_home: Path, tmp_path: Path
) -> None:
    """ptyd killed mid-output: same agent pid afterwards, stream complete and in order."""
    with trio.fail_after(90):
        write_config(orca_home, TREE)
        result = run_cli(orca_home, "up")
        assert result.returncode == 0, result.stderr
        paths = resolve_paths({"ORCA_HOME": str(orca_home)})
        worktree = tmp_path / "wt"
        worktree.mkdir()
        worktree_id = f"{uuid.uuid4()}::{worktree}"
        async with (
            open_rpc_client(paths.ipc_endpoint("ptyd", "rpc")) as ptyd,
            open_rpc_client(paths.ipc_endpoint("supervisor", "rpc")) as sup,
            lifecycle(orca_home) as (mirror, rec),
            trio.open_nursery() as nursery,
        ):
            spawned = await ptyd.call(
                "term.spawn",
                {
                    "argv": ["/bin/sh", "-c", SCRIPT],
                    "cwd": str(worktree),
                    "worktreeId": worktree_id,
                },
            )
            agent_pid = spawned["pid"]
            watch = OutputWatch(paths.ipc_endpoint("ptyd", "pub"), spawned["sessionId"])
            nursery.start_soon(watch.zs.run)
            await watch.wait_for(2000)  # kill ptyd once output is flowing
            status = await sup.call("sup.status")
            ptyd_pid = next(a["pid"] for a in status["actors"] if a["name"] == "ptyd")
            os.kill(ptyd_pid, signal.SIGKILL)
            await mirror.wait_until(
                lambda m: rec.seen(sup_contract.STARTED, "ptyd", lambda d: d.pid != ptyd_pid)
            )
            assert psutil.Process(agent_pid).is_running(), "the agent outlived ptyd"
            # What the new ptyd recovered is in its scrollback (no events for it); what the
            # agent writes from now on arrives as events.
            reply = await ptyd.call("term.read", {"sessionId": spawned["sessionId"], "since": 0})
            watch.end = max(watch.end, reply["end"])
            await watch.wait_for(len(expected_output()))
            data = await read_all(ptyd, spawned["sessionId"], len(expected_output()))
            assert (
                hashlib.sha256(data[: len(expected_output())]).hexdigest()
                == hashlib.sha256(expected_output()).hexdigest()
            )
            (row,) = (await ptyd.call("term.list", {}))["sessions"]
            assert row["pid"] == agent_pid and row["running"] and row["hostId"] == "local"
            nursery.cancel_scope.cancel()
            watch.zs.close()
        root = int(json.loads(paths.lock_file.read_text())["pid"])
        everything = [root, *descendants(root)]
        assert agent_pid in everything, "the orphaned agent was adopted by orcad"
        assert run_cli(orca_home, "down", "--kill-terminals").returncode == 0
        assert alive(everything) == [], "down ends the adopted agent too"
