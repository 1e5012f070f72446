"""No single Orca process can kill an agent (issue 13): kill -9 of orcad, of ptyd and of
the fd keeper, one at a time, each while the agent streams output: the same agent pid
afterwards and its stream byte-exact and in order (sha256)."""

from __future__ import annotations

import hashlib
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import trio
from support.actors import actor_tap
from support.lifecycle import lifecycle
from support.procs import child_env, descendants, kill_all, run_cli, write_config

from orca.actor import open_rpc_client
from orca.contracts import ptyd as contract
from orca.contracts import supervisor as sup_contract
from orca.contracts.fd_keeper import (
    KEEPER_LOCK_NAME,
    KEEPER_SOCKET_NAME,
    REPLIES,
    Reclaim,
    Sessions,
    close_fds,
    read_keeper_lock,
    recv_packet,
    send_packet,
)
from orca.paths import OrcaPaths, resolve_paths

TREE = """
[supervisor]
backoff_initial_s = 0.05
backoff_max_s = 0.2
heartbeat_interval_s = 0.5
heartbeat_timeout_s = 5
[[child]]
name = "ptyd"
module = "actors.ptyd"
"""
LINES = 200_000
# seq runs as fast as ptyd reads (the PTY blocks it otherwise); then the agent stays, so
# "the same pid" is checked on a live process.
SCRIPT = f"seq 1 {LINES}; exec sleep 600"
EXPECTED = b"".join(b"%d\r\n" % i for i in range(1, LINES + 1))
# Kill once this much output went through: well inside the stream.
KILL_AT = 200_000
# The whole stream must fit the scrollback, so it can be read back from offset 0.
ENV = {"ORCA_PTYD_SCROLLBACK_BYTES": str(8 * 1024 * 1024)}
WT = "repo1::/w/immortal"


def keeper_pid(paths: OrcaPaths) -> int | None:
    info = read_keeper_lock(paths.runtime_dir / KEEPER_LOCK_NAME)
    return None if info is None else info.pid


def kept_keys(paths: OrcaPaths) -> list[str]:
    """The session keys the running keeper holds (its fds are closed again at once)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    keys: list[str] = []
    try:
        sock.settimeout(2.0)
        sock.connect(str(paths.runtime_dir / KEEPER_SOCKET_NAME))
        send_packet(sock, Reclaim())
        while True:
            message, fds = recv_packet(sock, REPLIES)
            close_fds(fds)
            if not isinstance(message, Sessions):
                return keys
            keys.extend(row.key for row in message.sessions)
    except OSError:
        return []
    finally:
        sock.close()


@pytest.fixture
def tree(orca_home: Path) -> Iterator[OrcaPaths]:
    """``orca up`` with ptyd only; afterwards every process of the profile is killed,
    the keeper (which outlives orcad by design) and every agent included."""
    write_config(orca_home, TREE)
    paths = resolve_paths({"ORCA_HOME": str(orca_home)})
    result = run_cli(orca_home, "up", env=child_env(orca_home, ENV))
    assert result.returncode == 0, result.stderr
    agents: list[int] = []
    try:
        yield paths
    finally:
        pids = [p for p in (keeper_pid(paths),) if p is not None]
        for pid in pids[:]:
            pids.extend(descendants(pid))
        kill_all(pids)
        for proc in psutil.process_iter(["environ"]):
            try:
                if (proc.info["environ"] or {}).get("ORCA_WORKTREE_ID") == WT:
                    agents.append(proc.pid)
            except psutil.Error:
                pass
        kill_all(agents)


async def sup_status(paths: OrcaPaths) -> dict[str, Any]:
    async with open_rpc_client(paths.ipc_endpoint("supervisor", "rpc")) as sup:
        status: dict[str, Any] = await sup.call("sup.status", timeout=5, retries=3)
        return status


def actor_pid(status: dict[str, Any], name: str) -> int:
    return int(next(a["pid"] for a in status["actors"] if a["name"] == name))


async def wait_for_new_ptyd(home: Path, old: int) -> None:
    async with lifecycle(home) as (mirror, rec):
        await mirror.wait_until(
            lambda m: rec.seen(sup_contract.STARTED, "ptyd", lambda d: d.pid != old)
        )


async def wait_until_kept(paths: OrcaPaths, key: str, not_pid: int) -> int:
    """The new keeper's pid once it holds ``key``. No event says "re-seeded": the only
    witness is the keeper's table, so it is looked at every 50 ms (bounded by fail_after)."""
    while True:
        pid = keeper_pid(paths)
        if pid is not None and pid != not_pid and key in kept_keys(paths):
            return pid
        await trio.sleep(0.05)


async def read_stream(client: Any, tap: Any, sid: str, want: int) -> bytes:
    """The session's output from offset 0 until ``want`` bytes arrived."""
    out = b""
    while len(out) < want:
        reply = await client.call(
            "term.read", {"sessionId": sid, "since": len(out)}, timeout=5, retries=5
        )
        assert not reply["gap"], "the scrollback must hold the whole stream"
        if reply["data"]:
            out += reply["data"]
        else:
            await tap.receive()  # output or a heartbeat: look again
    return out


@pytest.mark.parametrize("victim", ["orcad", "ptyd", "keeper"])
async def test_kill_9_of_one_orca_process_keeps_the_agent_and_every_byte(
    tree: OrcaPaths, orca_home: Path, victim: str
) -> None:
    """kill -9 of orcad / ptyd / the keeper mid-stream: same agent pid, stream byte-exact.
    For the keeper, ptyd must have re-seeded the new one: a kill -9 of ptyd after it
    still loses nothing."""
    paths = tree
    tap = actor_tap(orca_home, contract.CONTRACT, topics=[contract.OUTPUT.type])
    with trio.fail_after(120):
        async with (
            open_rpc_client(paths.ipc_endpoint("ptyd", "rpc")) as ptyd,
            trio.open_nursery() as nursery,
        ):
            await tap.start(nursery)
            spawned = await ptyd.call(
                "term.spawn", {"argv": ["/bin/sh", "-c", SCRIPT], "cwd": "/", "worktreeId": WT}
            )
            sid, agent = spawned["sessionId"], spawned["pid"]
            status = await sup_status(paths)
            orcad, first_ptyd = status["supervisor"]["pid"], actor_pid(status, "ptyd")
            keeper = status["supervisor"]["keeperPid"]
            assert keeper == keeper_pid(paths) and keeper is not None
            # Neither the agent nor the keeper shares orcad's session or process group.
            for pid in (agent, keeper):
                assert os.getsid(pid) != os.getsid(orcad)
                assert os.getpgid(pid) != os.getpgid(orcad)
            end = 0
            while end < KILL_AT:  # output is flowing
                event = await tap.next_of(contract.OUTPUT, lambda e: e.session_id == sid)
                end = event.offset + len(event.data)
            if victim == "orcad":
                os.kill(orcad, signal.SIGKILL)
                psutil.Process(first_ptyd).wait(timeout=30)  # ptyd stops once orcad is gone
                assert psutil.Process(agent).is_running(), "the agent outlived orcad"
                assert keeper_pid(paths) == keeper, "the keeper outlived orcad"
                result = run_cli(orca_home, "up", env=child_env(orca_home, ENV))
                assert result.returncode == 0, result.stderr
                assert (await sup_status(paths))["supervisor"]["keeperPid"] == keeper
            elif victim == "ptyd":
                os.kill(first_ptyd, signal.SIGKILL)
                await wait_for_new_ptyd(orca_home, first_ptyd)
            else:
                [key] = kept_keys(paths)  # ptyd deposited the session with the keeper
                os.kill(keeper, signal.SIGKILL)
                assert psutil.Process(agent).is_running(), "the agent outlived the keeper"
                # orcad starts a new keeper; ptyd re-seeds it with the live session...
                await wait_until_kept(paths, key, not_pid=keeper)
                # ...so a ptyd crash right after it is survived too.
                os.kill(first_ptyd, signal.SIGKILL)
                await wait_for_new_ptyd(orca_home, first_ptyd)
            rows = (await ptyd.call("term.list", {}, timeout=5, retries=5))["sessions"]
            assert [(r["sessionId"], r["pid"], r["running"]) for r in rows] == [(sid, agent, True)]
            got = await read_stream(ptyd, tap, sid, len(EXPECTED))
            assert len(got) == len(EXPECTED)
            assert hashlib.sha256(got).hexdigest() == hashlib.sha256(EXPECTED).hexdigest()
            assert psutil.Process(agent).is_running()
            nursery.cancel_scope.cancel()
    tap.close()
