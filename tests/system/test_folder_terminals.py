"""Terminals in a folder workspace (seed 01 §5.1 route A; issue 17), over the real tree.

A folder workspace is the store's record ``{id, projectGroupId, folderPath}``, shown as
a worktree ``folder:<id>``; its terminals are ``folder:<id>@@<8 hex>`` (orca.model.panes).
The whole path: ``orca term new`` names it like a worktree, the shell runs in the
folder, its OSC status lights ``orca worktree ps``, ptyd's GC keeps it while the store
lists the folder (several graces of checks) and reaps it once the folder is removed.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import psutil
import trio
from support.journey import User, hooks_mirror, recorded, wait_for_output
from support.lifecycle import lifecycle

from orca.actor import open_rpc_client
from orca.contracts import ptyd, store
from orca.contracts import supervisor as sup
from orca.model.panes import parse_pty_session_id

# ptyd re-resolves live owners every GC_INTERVAL_S; reaps no sooner than GC_GRACE_S
# after the first "unknown".
GC_GRACE_S = 1.0
GC_INTERVAL_S = 0.2
OSC_WORKING = """printf '\\033]9999;{"state":"working","agent":"claude"}\\007'"""


async def test_a_folder_workspace_runs_a_terminal_lit_listed_and_reaped_with_it(
    orca_home: Path, tmp_path: Path
) -> None:
    """term new by the folder's name → the shell runs in the folder; term ls lists it;
    its OSC status is the light in worktree ps; kept through several graces while the
    folder exists, and across a ptyd kill -9 (keeper hand-over); term close retires one
    of its panes; the rest are reaped (children ended, light off) after the folder is
    removed."""
    with trio.fail_after(90):
        user = User(orca_home, tmp_path / "user")
        user.env.update(
            ORCA_PTYD_GC_GRACE_S=str(GC_GRACE_S), ORCA_PTYD_GC_INTERVAL_S=str(GC_INTERVAL_S)
        )
        user.ok("up")
        folder_dir = tmp_path / "notes"
        folder_dir.mkdir()
        owner = user.add_folder(folder_dir, "notes", "research")
        folder_id = owner.removeprefix("folder:")
        async with (
            open_rpc_client(user.paths.ipc_endpoint(store.CONTRACT.actor, "rpc")) as st,
            recorded(orca_home, ptyd.CONTRACT, ptyd.SNAPSHOT) as (mirror, rec, pt),
        ):

            def cli(*args: str) -> Any:
                return trio.to_thread.run_sync(lambda: user.ok(*args))

            def new(worktree: str, *argv: str) -> Any:  # the new session's id
                return trio.to_thread.run_sync(lambda: user.new_terminal(worktree, *argv))

            session_id = (await new("notes", "/bin/sh"))["sessionId"]
            assert session_id.startswith(owner + "@@"), session_id
            (row,) = user.json("term", "ls")["sessions"]
            assert (row["sessionId"], row["worktreeId"], row["cwd"]) == (
                session_id,
                owner,
                str(folder_dir),
            )
            assert row["running"] and not row["folderMissing"]
            handle = row["handle"]
            assert handle.startswith("notes:"), "the folder's name, like a worktree's"
            await cli("term", "send", handle, "pwd", "--enter")
            await wait_for_output(pt, mirror, rec, session_id, f"{folder_dir}\r\n".encode())

            async with hooks_mirror(orca_home) as (agents, _):
                await cli("term", "send", handle, OSC_WORKING, "--enter")
                await agents.wait_until(
                    lambda m: any(r.worktree_id == owner for r in m.state.values())
                )
            (ps_row,) = user.json("worktree", "ps")["worktrees"]
            assert ps_row["worktreeId"] == owner
            (agent,) = ps_row["agents"]
            assert (agent["displayState"], agent["terminal"]["state"]) == ("working", "live")
            table = user.ok("worktree", "ps").splitlines()
            assert table[1].split()[:3] == [handle, "claude", "working"], table

            # ptyd killed: the keeper hands the folder's session back under the same id,
            # and the restarted ptyd's GC asks the store about it like any other.
            old_ptyd = next(a for a in user.json("status")["actors"] if a["name"] == "ptyd")
            async with lifecycle(orca_home) as (life, lrec):
                os.kill(old_ptyd["pid"], signal.SIGKILL)
                await life.wait_until(
                    lambda m: lrec.seen(sup.STARTED, "ptyd", lambda d: d.pid != old_ptyd["pid"])
                )
            (adopted,) = user.json("term", "ls")["sessions"]
            assert (adopted["sessionId"], adopted["pid"], adopted["running"]) == (
                session_id,
                row["pid"],
                True,
            )
            # The store lists the folder: several graces of GC checks reap nothing.
            with trio.move_on_after(3 * GC_GRACE_S):
                await mirror.wait_until(lambda m: rec.seen(ptyd.CLOSED))
            assert not rec.seen(ptyd.CLOSED), "reaped while the store lists the folder"
            # A pane close (term close) retires the folder's pane like any other.
            closing = (await new("notes", "sleep", "600"))["sessionId"]
            closed = await trio.to_thread.run_sync(lambda: user.run("term", "close", closing))
            assert closed.returncode == 0 and "fence" not in closed.stderr, closed.stderr
            await mirror.wait_until(
                lambda m: rec.seen(ptyd.CLOSED, lambda d: d.session_id == closing)
            )
            # Named by its id too; both terminals are the folder's.
            by_id = (await new(owner, "sleep", "600"))["sessionId"]
            assert parse_pty_session_id(by_id) is not None and by_id.startswith(owner + "@@")
            listed = {s["sessionId"]: s for s in user.json("term", "ls")["sessions"]}
            assert set(listed) == {session_id, by_id}
            assert listed[by_id]["cwd"] == str(folder_dir)
            children = [psutil.Process(s["pid"]) for s in listed.values()]

            removed_at = time.monotonic()
            async with hooks_mirror(orca_home) as (agents, _):
                await st.invoke(store.FOLDER_WORKSPACE_REMOVE, store.IdArgs(id=folder_id))
                await mirror.wait_until(
                    lambda m: all(
                        rec.seen(ptyd.CLOSED, lambda d, sid=sid: d.session_id == sid)
                        for sid in listed
                    )
                )
                waited = time.monotonic() - removed_at
                assert waited >= GC_GRACE_S, f"reaped {waited:.2f}s after removal, before the grace"
                # The exit reaches hooks after the terminal's last output: the row goes.
                await agents.wait_until(
                    lambda m: not any(r.worktree_id == owner for r in m.state.values())
                )
            gone, _ = await trio.to_thread.run_sync(lambda: psutil.wait_procs(children, timeout=10))
            assert len(gone) == 2, "the reaped terminals' programs were ended"
            assert user.json("term", "ls")["sessions"] == []
            # The light is off, and the folder workspace's status went with it (issue
            # 23: removing a workspace removes its rows, its exited agents' too).
            assert [w["worktreeId"] for w in user.json("worktree", "ps")["worktrees"]] == []
        user.ok("down", "--kill-terminals")
