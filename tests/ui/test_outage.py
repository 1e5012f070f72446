"""``orca ui`` through actor crashes: the outage is shown, the UI recovers by itself,
and no agent stops (issue 17, "kill -9 of each actor while the UI runs")."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any

import psutil
from support.ui_pilot import sidebar_row

from actors.ui.app import OrcaApp
from orca.paths import resolve_paths

CRASHED = ("store", "hooks", "ptyd", "gitwatch")


def attached(app: OrcaApp, pane: str) -> bool:
    """The pane is mounted, bound to its session and attached to its stream."""
    view = app.pane_view(pane)
    return view is not None and view.session_id is not None and view.feed is not None


def test_kill_9_of_each_actor_is_shown_and_recovered(tree: Any, drive: Any) -> None:
    """Each actor in turn: kill -9, the banner names it, it comes back, the shell still echoes."""
    alpha = tree.worktrees["alpha"]
    agent_pid: dict[str, int] = {}

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await app.wait_for(lambda: all(app.backend.alive.values()))
        await app.wait_for(lambda: app.item(alpha) is not None)
        app.select_worktree(alpha, focus_terminal=True)
        await pilot.press("ctrl+g", "t")
        await app.wait_for(
            lambda: len(app.pane_views()) == 1 and app.pane_views()[0].session_id is not None
        )
        pane = app.pane_views()[0].pane_key
        row = app.backend.session_for_pane(pane)
        assert row is not None
        agent_pid["pid"] = row.pid

        def screen() -> str:
            view = app.pane_view(pane)
            return "" if view is None else view.screen_text()

        for round_, actor in enumerate(CRASHED):
            pid = app.backend.actors[actor].pid
            assert pid is not None
            since = len(app.health_log)
            os.kill(pid, signal.SIGKILL)
            await app.wait_for(
                lambda a=actor, n=since: any(x == a and s != "up" for x, s in app.health_log[n:]),
                20,
            )
            await app.wait_for(
                lambda a=actor: app.actor_health()[a] == "up" and not app.banner_text(), 30
            )
            await app.wait_for(lambda a=actor, old=pid: app.backend.actors[a].pid != old)
            # the pane may be rebuilt as the restarted actor's rows come back: type into
            # it once it is mounted again and attached (keys sent before are dropped)
            await app.wait_for(lambda: attached(app, pane), 20)
            view = app.pane_view(pane)
            assert view is not None
            view.send(f"echo after-{actor}-$(({round_}*7+1))\r".encode())  # typed != printed
            await app.wait_for(lambda a=actor, r=round_: f"after-{a}-{r * 7 + 1}" in screen(), 20)
            assert psutil.pid_exists(agent_pid["pid"]), f"the agent died with {actor}"

    drive(OrcaApp(resolve_paths(), bell=False), scenario, timeout=150)
    assert psutil.Process(agent_pid["pid"]).status() != psutil.STATUS_ZOMBIE


def test_service_down_banner_then_reconnects_by_itself(tree: Any, drive: Any) -> None:
    """`orca down --keep-terminals` under the UI: the banner says so; `orca up`: it recovers."""
    alpha = tree.worktrees["alpha"]

    async def orca(*args: str) -> None:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "orca.cli.main",
            *args,
            env=tree.user.env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        assert await proc.wait() == 0, args

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await app.wait_for(lambda: all(app.backend.alive.values()))
        await app.wait_for(lambda: app.item(alpha) is not None)
        app.select_worktree(alpha, focus_terminal=True)
        await pilot.press("ctrl+g", "t")
        await app.wait_for(
            lambda: len(app.pane_views()) == 1 and app.pane_views()[0].session_id is not None
        )
        pane = app.pane_views()[0].pane_key
        await orca("down", "--keep-terminals")
        await app.wait_for(lambda: "not running" in app.banner_text(), 20)
        assert app.item(alpha) is not None, "the UI keeps showing what it had"
        await orca("up")
        await app.wait_for(lambda: not app.banner_text(), 30)
        await app.wait_for(lambda: attached(app, pane), 20)
        view = app.pane_view(pane)
        assert view is not None and view.session_id is not None
        view.send(b"echo back-$((40+2))\r")
        await app.wait_for(lambda: "back-42" in (app.pane_view(pane) or view).screen_text(), 20)

    drive(OrcaApp(resolve_paths(), bell=False), scenario, timeout=120)


def test_the_selected_worktree_listed_again_is_selected_again(tree: Any, drive: Any) -> None:
    """The selected worktree leaves the listing for a while (here its git worktree entry
    is removed behind Orca's back, then added again; after `orca up` a gitwatch that
    lists worktrees as it finds them does the same): the UI shows another meanwhile and
    goes back to it once it is listed again, unless the user picked another since (it
    stayed on the repo's main checkout, and `orca ui` lost its place)."""
    alpha, beta = tree.worktrees["alpha"], tree.worktrees["beta"]
    path = tree.paths["alpha"]
    (repo,) = tree.user.json("repo", "ls")["repos"]

    async def git(*args: str) -> None:
        proc = await asyncio.create_subprocess_exec(
            "git", "-C", repo["path"], *args,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _out, err = await proc.communicate()
        assert proc.returncode == 0, (args, err)

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await app.wait_for(lambda: all(app.backend.alive.values()))
        await app.wait_for(lambda: app.item(alpha) is not None and app.item(beta) is not None)
        app.select_worktree(alpha, focus_terminal=False)
        await git("worktree", "remove", "--force", path)
        await app.wait_for(lambda: app.item(alpha) is None, 20)
        assert app.selected_worktree not in (alpha, None)
        await git("worktree", "add", path, "alpha")
        await app.wait_for(lambda: app.item(alpha) is not None, 20)
        await app.wait_for(lambda: app.selected_worktree == alpha, 10)
        # ... and the sidebar's cursor with it: its keys (^G w: remove) act on that row
        await app.wait_for(lambda: sidebar_row(app) == alpha, 10)
        # Gone again, and the user picks beta meanwhile: beta it stays.
        await git("worktree", "remove", "--force", path)
        await app.wait_for(lambda: app.item(alpha) is None, 20)
        app.select_worktree(beta, focus_terminal=False)
        await git("worktree", "add", path, "alpha")
        await app.wait_for(lambda: app.item(alpha) is not None, 20)
        assert app.selected_worktree == beta

    drive(OrcaApp(resolve_paths(), bell=False), scenario, timeout=120)
