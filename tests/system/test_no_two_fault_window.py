"""No two-fault window (issue 33): after orcad dies, the keeper is the only Orca process
holding the agents' terminals, so it brings orcad back (docs/actors.md). kill -9 of
orcad, then of the keeper once orcad is back: the agent lives on, the same process on
the same live terminal. `orca down --keep-terminals` is left alone, and the orcad the
next `orca up` starts is watched again. While orcad is down or coming back, every
command that needs it exits 3 (README "Exit codes"), never 1 with "Connection refused".
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest
import trio
from support.actors import event_tap, kill_9_and_wait
from support.chaos import keeper_pid, kept_keys, orcad_pid, wait_until_kept
from support.procs import new_terminal, run_cli, write_config

from actors.supervisor.lock import InstanceLock
from orca.actor.inotify import Inotify
from orca.actor.inotifyabi import IN_CREATE, IN_MODIFY
from orca.contracts import ptyd
from orca.contracts.supervisor import LockInfo, read_abandoned_lock_info, read_lock_info
from orca.paths import OrcaPaths, resolve_paths

TREE = """
[supervisor]
backoff_initial_s = 0.05
heartbeat_interval_s = 0.5
[[child]]
name = "store"
module = "actors.store"
[[child]]
name = "gitwatch"
module = "actors.gitwatch"
[[child]]
name = "ptyd"
module = "actors.ptyd"
"""
# A long-running agent that shows it still reads its terminal: cat echoes each line.
AGENT = ("/bin/sh", "-c", "exec cat")
# How long orcad may take to be back with every actor running (a restart, on 2 busy cores).
BACK_WITHIN_S = 60.0


@dataclass
class Tree:
    home: Path
    paths: OrcaPaths

    def ok(self, *args: str) -> str:
        result = run_cli(self.home, *args)
        assert result.returncode == 0, (args, result.stdout, result.stderr)
        return result.stdout


@pytest.fixture
def tree(orca_home: Path, tmp_path: Path) -> Iterator[Tree]:
    """`orca up` with store, gitwatch and ptyd, a folder workspace `work`; afterwards
    `orca down --kill-terminals` (orca_home kills whatever is left, keeper first)."""
    write_config(orca_home, TREE)
    (tmp_path / "work").mkdir()
    tree = Tree(orca_home, resolve_paths({"ORCA_HOME": str(orca_home)}))
    tree.ok("up")
    try:
        tree.ok("folder", "add", str(tmp_path / "work"))
        yield tree
    finally:
        run_cli(orca_home, "down", "--kill-terminals")


def status_json(home: Path) -> tuple[int, dict[str, Any] | None, str]:
    result = run_cli(home, "status", "--json")
    shown = json.loads(result.stdout) if result.returncode == 0 else None
    return result.returncode, shown, result.stderr


async def wait_for_orcad_back(home: Path, old: int) -> tuple[int, float, list[tuple[int, str]]]:
    """Ask `orca status --json` until an orcad other than ``old`` answers with every actor
    running; returns its pid, the seconds it took and every failed answer on the way
    (exit code, stderr)."""
    started = time.monotonic()
    failures: list[tuple[int, str]] = []
    with trio.fail_after(BACK_WITHIN_S):
        while True:
            code, shown, stderr = await trio.to_thread.run_sync(status_json, home)
            if shown is None:
                failures.append((code, stderr))
                continue
            pid = shown["orcad"]["pid"]
            if pid != old and all(a["state"] in ("running", "dormant") for a in shown["actors"]):
                return pid, time.monotonic() - started, failures


async def until_logged(path: Path, needle: str, since: int) -> str:
    """The text ``path`` gained after byte ``since`` once it holds ``needle`` (inotify
    on its directory: woken by each write, no polling)."""
    with Inotify() as watch, trio.fail_after(30):
        watch.add_watch(str(path.parent), IN_MODIFY | IN_CREATE)
        while True:
            with path.open("rb") as f:
                f.seek(since)
                text = f.read().decode(errors="replace")
            if needle in text:
                return text
            await watch.read()


async def echoed(tree: Tree, session_id: str, handle: str, line: str) -> None:
    """Type ``line`` into the terminal; until ptyd's output shows it twice (the terminal's
    echo and cat's copy): the agent reads the very PTY it was started on."""
    async with event_tap(tree.home, ptyd.CONTRACT, topics=[ptyd.OUTPUT.type]) as tap:
        tree.ok("term", "send", "--enter", handle, line)
        seen = b""
        with trio.fail_after(20):
            while seen.count(line.encode()) < 2:
                event = await tap.next_of(ptyd.OUTPUT, lambda e: e.session_id == session_id)
                seen += event.data


def running_session(tree: Tree, session_id: str) -> tuple[int, bool]:
    rows = json.loads(tree.ok("term", "ls", "--json"))["sessions"]
    [row] = [r for r in rows if r["sessionId"] == session_id]
    return row["pid"], row["running"]


async def test_orcad_comes_back_so_killing_the_keeper_next_loses_no_agent(tree: Tree) -> None:
    """kill -9 of orcad: the keeper starts a new one (the same keeper adopted, the agent
    reclaimed), and meanwhile the CLI exits 3; then kill -9 of the keeper: the new orcad
    starts a keeper that ptyd re-seeds, and the agent, same pid, still echoes."""
    session = new_terminal(tree.ok, "work", *AGENT)
    agent, handle = session["pid"], session["handle"]
    orcad, keeper = orcad_pid(tree.paths), keeper_pid(tree.paths)
    assert orcad is not None and keeper is not None
    keys = set(kept_keys(tree.paths))
    assert len(keys) == 1, "ptyd deposited the terminal with the keeper"

    await kill_9_and_wait(orcad)
    new_orcad, back_s, failures = await wait_for_orcad_back(tree.home, orcad)
    print(f"orcad back with every actor running {back_s:.2f}s after its kill -9")
    assert [code for code, _ in failures if code != 3] == [], failures
    assert all(len(stderr.splitlines()) == 1 for _, stderr in failures), failures
    assert keeper_pid(tree.paths) == keeper, "the new orcad adopted the running keeper"
    assert psutil.Process(new_orcad).ppid() == keeper, "the keeper started it"
    assert running_session(tree, session["sessionId"]) == (agent, True)

    killed = time.monotonic()
    await kill_9_and_wait(keeper)
    with trio.fail_after(30):
        new_keeper = await wait_until_kept(tree.paths, keys, not_pid=keeper)
    print(
        f"a new keeper (pid {new_keeper}) holds the terminal {time.monotonic() - killed:.2f}s later"
    )
    assert psutil.Process(agent).is_running()
    assert running_session(tree, session["sessionId"]) == (agent, True)
    await echoed(tree, session["sessionId"], handle, "still-here")


async def test_down_keep_terminals_is_left_down_and_the_next_up_is_watched(tree: Tree) -> None:
    """`orca down --keep-terminals`: the keeper sees orcad stop on purpose and starts
    none. `orca up` adopts the keeper and asks to be watched: its kill -9 is answered."""
    session = new_terminal(tree.ok, "work", *AGENT)
    agent = session["pid"]
    orcad, keeper = orcad_pid(tree.paths), keeper_pid(tree.paths)
    assert orcad is not None and keeper is not None
    log = tree.paths.log_file("keeper")
    since = log.stat().st_size

    tree.ok("down", "--keep-terminals")
    said = await until_logged(log, f"orcad (pid {orcad}) stopped", since)
    assert "started a new one" not in said, said
    assert read_lock_info(tree.paths.lock_file) is None, "no orcad was started"
    assert read_abandoned_lock_info(tree.paths.lock_file) is None
    assert psutil.Process(keeper).is_running() and psutil.Process(agent).is_running()
    down = run_cli(tree.home, "term", "ls")
    assert down.returncode == 3 and len(down.stderr.splitlines()) == 1, down

    since = log.stat().st_size
    tree.ok("up")
    second = orcad_pid(tree.paths)
    assert second is not None and second != orcad
    assert keeper_pid(tree.paths) == keeper
    await until_logged(log, f"watching orcad (pid {second})", since)
    await kill_9_and_wait(second)
    third, back_s, failures = await wait_for_orcad_back(tree.home, second)
    print(f"orcad back {back_s:.2f}s after the kill -9 of the one `orca up` started")
    assert [code for code, _ in failures if code != 3] == [], failures
    assert psutil.Process(third).ppid() == keeper
    assert running_session(tree, session["sessionId"]) == (agent, True)


def stale_socket(path: Path) -> None:
    """The socket file a killed process leaves: connecting to it is refused."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.close()


# Commands that need the service: orcad's own, and those of three actors.
NEEDS_THE_SERVICE = (("status",), ("term", "ls"), ("repo", "ls"), ("worktree", "ls"))


def test_every_command_exits_3_while_orcad_is_down_or_not_answering_yet(
    orca_home: Path,
) -> None:
    """The sockets a killed tree leaves (each refuses) and an orcad that holds its lock
    but does not answer yet (the one the keeper just started): exit 3 and one line that
    says so, not 1 with "Connection refused" and a pointer to `orca status`."""
    paths = resolve_paths({"ORCA_HOME": str(orca_home)}).ensure()
    for name in ("supervisor", "ptyd", "store", "gitwatch"):
        stale_socket(Path(paths.ipc_endpoint(name, "rpc").removeprefix("ipc://")))
    lock = InstanceLock(paths.lock_file)
    lock.acquire(LockInfo(pid=os.getpid(), started_at=time.time()))
    try:
        for args in NEEDS_THE_SERVICE:
            starting = run_cli(orca_home, *args)
            assert starting.returncode == 3, (args, starting.stderr)
            [line] = starting.stderr.splitlines()
            assert line.startswith(f"orca: orca is starting (orcad pid {os.getpid()}"), line
    finally:
        lock.release()
    for args in NEEDS_THE_SERVICE:
        down = run_cli(orca_home, *args)
        assert down.returncode == 3, (args, down.stderr)
        [line] = down.stderr.splitlines()
        assert "orca is not running" in line and "start it with `orca up`" in line, line
        assert "refused" not in line, line
