"""Panes retired while ptyd was down are ended after it restarts (ARCHITECTURE §3.2)."""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path

import psutil
import trio
from support.actors import start_actor, stop_actor, wait_ready
from support.ptyd_harness import call_retrying, read_pid, start_keeper, tree_env

from orca.actor import open_rpc_client
from orca.paths import resolve_paths

WT = "repo1::/w/catch-up"
CALL_TIMEOUT_S = 15.0


def pane() -> tuple[str, str, str]:
    tab, leaf = f"tab-{uuid.uuid4().hex[:6]}", str(uuid.uuid4())
    return tab, leaf, f"{tab}:{leaf}"


def wait_gone(pid: int, timeout_s: float) -> bool:
    """True once ``pid`` is gone (reaped by the keeper), False after ``timeout_s``."""
    try:
        psutil.Process(pid).wait(timeout_s)
    except psutil.NoSuchProcess:
        return True
    except psutil.TimeoutExpired:
        return False
    return True


async def test_pane_retired_while_ptyd_was_down_has_its_pty_ended(tmp_path: Path) -> None:
    """After a restart ptyd ends the adopted PTY of a pane retired while it was down, but
    not one spawned in a pane key retired *before* that spawn (key reuse) nor others."""
    home = tmp_path / "home"
    paths = resolve_paths({"ORCA_HOME": str(home)}).ensure()
    store = start_actor("store", home)
    pidfile = tmp_path / "ptyd.pid"
    keeper = start_keeper(paths.runtime_dir / "ptyd-keeper.sock", pidfile, tree_env(home))
    pids: list[int] = []
    try:
        async with (
            open_rpc_client(paths.ipc_endpoint("store", "rpc")) as st,
            open_rpc_client(paths.ipc_endpoint("ptyd", "rpc")) as pt,
        ):
            with trio.fail_after(60):
                await wait_ready(store)
                (tab_a, leaf_a, key_a), (_, _, key_b), (tab_c, leaf_c, key_c) = (
                    pane(),
                    pane(),
                    pane(),
                )
                # Pane c's key was retired earlier, then reused by a later spawn.
                await st.call("session.retire_pane", {"tabId": tab_c, "leafId": leaf_c})
                await call_retrying(pt, "term.list", {})
                for key in (key_a, key_b, key_c):
                    args = {"argv": ["/bin/sleep", "60"], "cwd": "/", "worktreeId": WT}
                    spawned = await pt.call(
                        "term.spawn", {**args, "paneKey": key}, timeout=CALL_TIMEOUT_S
                    )
                    pids.append(spawned["pid"])
                first = read_pid(pidfile)
                # Hold the keeper so ptyd stays down until the retirement is in the store.
                keeper.send_signal(signal.SIGSTOP)
                try:
                    pidfd = os.pidfd_open(first)
                    try:
                        os.kill(first, signal.SIGKILL)
                        await trio.lowlevel.wait_readable(pidfd)  # dead, if not yet reaped
                    finally:
                        os.close(pidfd)
                    await st.call("session.retire_pane", {"tabId": tab_a, "leafId": leaf_a})
                finally:
                    keeper.send_signal(signal.SIGCONT)
                rows = (await call_retrying(pt, "term.list", {}))["sessions"]
                assert read_pid(pidfile) != first
                assert sorted(r["pid"] for r in rows) == sorted(pids)
                assert await trio.to_thread.run_sync(lambda: wait_gone(pids[0], 20))
                assert all(psutil.pid_exists(pid) for pid in pids[1:])
    finally:
        keeper.terminate()
        await trio.to_thread.run_sync(keeper.wait)
        await stop_actor(store.proc)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
