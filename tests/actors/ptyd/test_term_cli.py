"""``orca term`` against a real ptyd: new, ls --json, send, read, attach/detach/reattach, kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
from support.actors import actor_tap, running_actor, stop_actor
from support.procs import REPO as ROOT
from support.ptyd_harness import call_retrying, read_pid, start_keeper, tree_env
from support.relay_steps import RELAY_STEPS, relay_step_env

from actors.ptyd.spawn import resize, spawn_on_pty
from orca.actor import open_rpc_client
from orca.contracts import ptyd as contract
from orca.paths import resolve_paths


def cli_argv(*args: str) -> list[str]:
    """``orca term ARGS`` through main (the one error boundary: exit codes 2/3 come from it)."""
    return [sys.executable, "-m", "orca.cli.main", "term", *args]


async def run_cli(home: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, ORCA_HOME=str(home), PYTHONPATH=str(ROOT))
    return await trio.run_process(cli_argv(*args), env=env, capture_stdout=True, check=False)


@pytest.fixture(params=RELAY_STEPS)
async def home(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Path]:
    """ptyd with the relay's native step, and with its Python one (test_handed_relay)."""
    async with running_actor("ptyd", tmp_path / "home", relay_step_env(request.param)) as ptyd:
        yield ptyd.home


async def read_master_until(fd: int, needle: bytes) -> bytes:
    seen = b""
    try:
        while needle not in seen:
            await trio.lowlevel.wait_readable(fd)
            try:
                seen += os.read(fd, 65536)
            except BlockingIOError:
                continue
    except trio.Cancelled:
        # What the terminal showed instead (a failure's report: CI, one run in five
        # never saw the second attach's "[detached]").
        print(f"waiting for {needle!r}, the terminal showed: {seen[-3000:]!r}")
        raise
    return seen


async def size_shows(master: int, size: bytes) -> None:
    """``stty size`` until it prints ``size``. A resize reaches the session through
    attach's SIGWINCH and a message to ptyd, keys straight from the terminal, so the
    first ``stty size`` after a resize may still run at the old size (so with tmux)."""
    for _ in range(100):
        os.write(master, b"stty size; echo :sized-$((1+1))\r")
        if size in await read_master_until(master, b":sized-2"):
            return
    raise AssertionError(f"the session never showed the size {size!r}")


async def test_new_ls_send_read_kill(home: Path, tmp_path: Path) -> None:
    """A session created by the CLI is listed as JSON, takes input, and shows output."""
    with trio.fail_after(30):
        wt = f"repo1::{tmp_path}"
        new = await run_cli(home, "new", wt, "--json", "--", "/bin/sh")
        assert new.returncode == 0
        made = json.loads(new.stdout)["session"]
        sid = made["sessionId"]
        listed = json.loads((await run_cli(home, "ls", "--json")).stdout)
        assert [(s["sessionId"], s["handle"]) for s in listed["sessions"]] == [(sid, made["handle"])]
        assert listed["sessions"][0]["cwd"] == str(tmp_path)
        tap = actor_tap(home, contract.CONTRACT, topics=[contract.output_topic(sid)])
        async with trio.open_nursery() as nursery:
            await tap.start(nursery)
            assert (
                await run_cli(home, "send", sid, "echo cli-$((2+3))", "--enter")
            ).returncode == 0
            seen = b""
            while b"cli-5\r\n" not in seen:
                seen += (await tap.next_of(contract.OUTPUT)).data
            nursery.cancel_scope.cancel()
        tap.close()
        assert b"cli-5\r\n" in (await run_cli(home, "read", sid)).stdout
        assert (await run_cli(home, "kill", sid)).returncode == 0
        missing = await run_cli(home, "read", "repo1::/nope@@00000000")
        assert missing.returncode == 2


async def test_attach_detach_and_reattach_shows_the_screen(home: Path, tmp_path: Path) -> None:
    """Attach types raw, forwards window size, detaches on Ctrl-]; reattach shows the screen."""
    # Four CLI starts and two attaches: generous for a loaded machine (CI: 30 s ran out
    # before the first paint under -n 3 beside a browser test).
    with trio.fail_after(90):
        sid = (await run_cli(home, "new", f"repo1::{tmp_path}", "--", "/bin/sh")).stdout
        sid_text = sid.decode().strip()
        env = dict(os.environ, ORCA_HOME=str(home), PYTHONPATH=str(ROOT))
        pids = []
        try:
            pid, master = spawn_on_pty(cli_argv("attach", sid_text), str(ROOT), env, 100, 30)
            pids.append(pid)
            # Type only once attach has switched to raw mode and painted (setraw
            # flushes pending input).
            await read_master_until(master, b"\x1b[2J")
            os.write(master, b"echo first-$((40+2))\r")
            await read_master_until(master, b"first-42")
            os.write(master, b"stty size\r")
            await read_master_until(master, b"30 100")
            resize(master, pid, 132, 43)  # the user resizes the window attach runs in
            await size_shows(master, b"43 132")
            # What reattach must show, on the screen: under load size_shows loops many
            # times, and its lines scrolled "first-42" off the 30-row screen (CI, 1 run).
            os.write(master, b"clear; echo shown-$((40+2))\r")
            await read_master_until(master, b"shown-42")
            os.write(master, b"\x1d")
            await read_master_until(master, b"[detached]")
            os.close(master)
            pid2, master2 = spawn_on_pty(cli_argv("attach", sid_text), str(ROOT), env, 100, 30)
            pids.append(pid2)
            screen = await read_master_until(master2, b"shown-42")
            assert b"shown-42" in screen
            os.write(master2, b"\x1d")
            await read_master_until(master2, b"[detached]")
            os.close(master2)
        finally:
            for p in pids:
                try:
                    os.kill(p, 9)
                except ProcessLookupError:
                    pass
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(os.waitpid, p, 0)


async def test_attach_keeps_typing_and_showing_across_kill_9_of_ptyd(tmp_path: Path) -> None:
    """``orca term attach``'s loop notices ptyd's death (its socket ends), reconnects to
    the restarted ptyd on its poll timeout, resumes from its offset, and keys typed
    after the restart reach the same shell and their output is shown."""
    home = tmp_path / "home"
    paths = resolve_paths({"ORCA_HOME": str(home)}).ensure()
    pidfile = tmp_path / "ptyd.pid"
    keeper = start_keeper(paths.runtime_dir / "ptyd-keeper.sock", pidfile, tree_env(home))
    cli_pid = shell_pid = 0
    try:
        with trio.fail_after(60):
            async with open_rpc_client(paths.ipc_endpoint("ptyd", "rpc")) as client:
                await call_retrying(client, contract.LIST.name, {})
                spawned = await call_retrying(
                    client,
                    contract.SPAWN.name,
                    {"argv": ["/bin/sh"], "cwd": "/", "worktreeId": f"repo1::{tmp_path}"},
                )
                shell_pid = spawned["pid"]
                env = dict(os.environ, ORCA_HOME=str(home), PYTHONPATH=str(ROOT))
                argv = cli_argv("attach", spawned["sessionId"])
                cli_pid, master = spawn_on_pty(argv, str(ROOT), env, 100, 30)
                await read_master_until(master, b"\x1b[2J")
                os.write(master, b"echo one-$((1+1))\r")
                await read_master_until(master, b"one-2")
                first = read_pid(pidfile)
                os.kill(first, signal.SIGKILL)
                rows = (await call_retrying(client, contract.LIST.name, {}))["sessions"]
                assert read_pid(pidfile) != first
                assert [r["pid"] for r in rows] == [shell_pid]  # adopted, still running
                os.write(master, b"echo two-$((2+2))\r")
                await read_master_until(master, b"two-4")
                os.write(master, b"\x1d")
                await read_master_until(master, b"[detached]")
                os.close(master)
    finally:
        await stop_actor(keeper, grace=20.0)
        for pid in (cli_pid, shell_pid):
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        if cli_pid:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(os.waitpid, cli_pid, 0)
