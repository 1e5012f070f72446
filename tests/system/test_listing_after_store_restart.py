"""Issue 33: a worktree just created is listed after store is killed, or the listing
says store is catching up; it is never answered without it (real `orca up` tree, CLI).

gitwatch answers from a mirror of store that re-snapshots when store restarts; a reader
waits (bounded) for the new snapshot instead of joining git's facts with the copy being
replaced (``actors/gitwatch/storeview.RpcStorePort.whole_view``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
from support.actors import kill_9_and_wait
from support.journey import User, make_git_repo
from support.procs import write_config

from orca.actor import open_rpc_client
from orca.client.sync import invoke
from orca.contracts import store
from orca.contracts import sys as sys_contract

ROUNDS = 10
# Ten kills of store in well under a minute: above the shipped intensity (5 in 60 s,
# then store is marked failed) and its growing restart delay.
QUICK_RESTARTS = "[supervisor]\nintensity = 50\nbackoff_initial_s = 0.05\nbackoff_max_s = 0.2\n"
STORE_BACK_S = 15.0


async def orca(user: User, *args: str) -> Any:
    return await trio.to_thread.run_sync(lambda: user.run(*args))


async def orca_json(user: User, *args: str) -> Any:
    return await trio.to_thread.run_sync(lambda: user.json(*args))


async def store_pid(user: User) -> int:
    """Once store answers again: the pid `orca status` gives it."""
    endpoint = user.paths.ipc_endpoint("store", "rpc")
    async with open_rpc_client(endpoint, timeout=1.0) as client:
        # Each attempt waits for the connection (ZMQ_IMMEDIATE); the retries cover the
        # restart delay and a request lost to a socket still being set up.
        await client.invoke(sys_contract.PING, retries=int(STORE_BACK_S))
    status = json.loads(await trio.to_thread.run_sync(lambda: user.ok("status", "--json")))
    (pid,) = [a["pid"] for a in status["actors"] if a["name"] == "store"]
    return int(pid)


@pytest.mark.timeout(120)
async def test_a_worktree_created_before_store_dies_is_listed_or_store_is_catching_up(
    orca_home: Path, tmp_path: Path
) -> None:
    """create W, kill -9 store, at once `worktree ls --json`: W is listed, or the call
    fails (exit 1) saying store is catching up; never a listing without W. Then
    `worktree mv W W2` works once store is back."""
    write_config(orca_home, QUICK_RESTARTS)
    user = User(orca_home, tmp_path / "user")
    await trio.to_thread.run_sync(user.ok, "up")
    try:
        await trio.to_thread.run_sync(
            user.ok, "repo", "add", str(make_git_repo(tmp_path / "proj"))
        )
        patch = store.PatchArgs(patch={"workspaceDir": str(tmp_path / "ws")})
        invoke(store.SETTINGS_PATCH, patch, paths=user.paths)
        outcomes: list[str] = []
        made: dict[str, Any] = {}
        with trio.fail_after(90):
            for round_ in range(ROUNDS):
                pid = await store_pid(user)
                name = f"w{round_}"
                made = (await orca_json(user, "worktree", "create", "proj", name, "--setup", "skip"))
                await kill_9_and_wait(pid)
                listed = await orca(user, "worktree", "ls", "--json")
                if listed.returncode == 0:
                    paths = {w["path"] for w in json.loads(listed.stdout)["worktrees"]}
                    assert made["worktree"]["path"] in paths, (name, listed.stdout)
                    outcomes.append("listed")
                else:
                    assert listed.returncode == 1, listed
                    assert "store is catching up" in listed.stderr, listed.stderr
                    outcomes.append("catching up")
            await store_pid(user)
            moved = await orca(user, "worktree", "mv", f"w{ROUNDS - 1}", "renamed")
            assert moved.returncode == 0, moved.stderr
            rows = (await orca_json(user, "worktree", "ls"))["worktrees"]
            assert str(tmp_path / "ws" / "proj" / "renamed") in {r["path"] for r in rows}
            assert made["worktree"]["path"] not in {r["path"] for r in rows}
        print("outcomes:", outcomes)
    finally:
        await trio.to_thread.run_sync(user.ok, "down", "--kill-terminals")
