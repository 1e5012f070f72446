"""Issue 23: agent status across restarts, over the real tree.

1. After `orca restart --all`, or `kill -9` of orcad and `orca up`, an agent whose PTY
   lived on is shown as it last reported (not `idle (restored: ...)`) without
   reporting again; one whose PTY died meanwhile is never shown working
   (docs/protocols.md §3 "Restored rows and ptyd's truth").

Every agent reports through the installed hook script (`orca-agent-hook.sh`), as a real
agent's hook does, exactly once: nothing after a restart can come from it.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import psutil
import trio
from support.chaos import wait_gone
from support.journey import User, hooks_mirror, make_git_repo
from support.procs import kill_all

# Reports one turn in progress through the hook script, then waits (as an agent at
# work does) until its FIFO says how to end.
AGENT = r"""
printf '{"hook_event_name":"UserPromptSubmit","session_id":"s","prompt":"go"}' | "$1" claude
read how < "$2"
exit "$how"
"""


class Agent:
    """One agent in a worktree's terminal: its pane, pid, and the FIFO that ends it."""

    def __init__(self, user: User, tmp: Path, worktree: str, name: str) -> None:
        script = tmp / "agent.sh"
        script.write_text(AGENT)
        self.fifo = tmp / f"end-{name}"
        os.mkfifo(self.fifo)
        # Held open read-write so writing never blocks and the agent's read waits.
        self._fd = os.open(self.fifo, os.O_RDWR)
        argv = ("/bin/sh", str(script), str(user.hook_script), str(self.fifo))
        sid = user.ok("term", "new", worktree, "--", *argv).strip()
        (row,) = [s for s in user.json("term", "ls")["sessions"] if s["sessionId"] == sid]
        self.session_id, self.pane, self.pid = sid, str(row["paneKey"]), int(row["pid"])

    def exit(self, code: int) -> None:
        os.write(self._fd, f"{code}\n".encode())

    def close(self) -> None:
        os.close(self._fd)


def setup(orca_home: Path, tmp_path: Path, *names: str) -> tuple[User, dict[str, str]]:
    """A running tree, one git repo, a worktree per name (name -> worktree id)."""
    user = User(orca_home, tmp_path / "user")
    project = make_git_repo(tmp_path / "project")
    user.ok("up")
    user.ok("repo", "add", str(project))
    (repo,) = user.json("repo", "ls")["repos"]
    worktrees = {}
    for name in names:
        created = user.json("worktree", "create", repo["id"], name, "--setup", "skip")
        worktrees[name] = str(created["worktree"]["worktreeId"])
    return user, worktrees


def ps_agents(user: User) -> dict[str, dict[str, Any]]:
    """`orca worktree ps --json`: every agent by pane key, with its worktree id."""
    return {
        a["paneKey"]: {**a, "worktreeId": w["worktreeId"]}
        for w in user.json("worktree", "ps")["worktrees"]
        for a in w["agents"]
    }


async def wait_reported(user: User, *agents: Agent) -> None:
    """Until hooks holds each agent's `working` row (its one report arrived)."""
    panes = {a.pane for a in agents}
    async with hooks_mirror(user.orca_home) as (rows, _):
        await rows.wait_until(
            lambda m: all(p in m.state and m.state[p].state == "working" for p in panes)
        )


async def wait_confirmed(user: User, agent: Agent) -> None:
    """Until hooks' row for the agent is live again (restoredUnconfirmed false)."""
    async with hooks_mirror(user.orca_home) as (rows, _):
        await rows.wait_until(
            lambda m: agent.pane in m.state and not m.state[agent.pane].restored_unconfirmed
        )


def assert_shown_working(user: User, agent: Agent) -> None:
    shown = ps_agents(user)[agent.pane]
    assert (shown["state"], shown["displayState"], shown["restoredUnconfirmed"]) == (
        "working",
        "working",
        False,
    ), shown
    assert shown["terminal"] == {"state": "live"}, shown
    assert psutil.Process(agent.pid).is_running(), "the agent must have lived on"


async def test_restart_all_keeps_a_live_agent_shown_as_it_reported(
    orca_home: Path, tmp_path: Path
) -> None:
    """`orca restart --all`: every Orca pid changes, the agent's does not, and ps shows
    it working (confirmed by ptyd's truth), though it never reports again."""
    with trio.fail_after(120):
        user, worktrees = setup(orca_home, tmp_path, "busy")
        agent = Agent(user, tmp_path, worktrees["busy"], "busy")
        try:
            await wait_reported(user, agent)
            user.ok("restart", "--all")
            await wait_confirmed(user, agent)
            assert_shown_working(user, agent)
        finally:
            agent.close()
            user.run("down", "--kill-terminals")
            kill_all([agent.pid])


async def test_orcad_crash_keeps_the_live_agent_and_never_shows_a_dead_one_working(
    orca_home: Path, tmp_path: Path
) -> None:
    """kill -9 of orcad (its actors stop; the keeper holds the PTYs), one agent killed
    while nothing of Orca but the keeper runs, then `orca up`: the live one is shown
    working, the dead one as exited, not working - neither reported again."""
    with trio.fail_after(120):
        user, worktrees = setup(orca_home, tmp_path, "lives", "dies")
        live = Agent(user, tmp_path, worktrees["lives"], "lives")
        dead = Agent(user, tmp_path, worktrees["dies"], "dies")
        try:
            await wait_reported(user, live, dead)
            status = {a["name"]: a["pid"] for a in user.json("status")["actors"]}
            orcad = int(json.loads(user.paths.lock_file.read_text())["pid"])
            os.kill(orcad, signal.SIGKILL)
            await wait_gone([orcad, status["ptyd"], status["hooks"]])
            os.kill(dead.pid, signal.SIGKILL)
            await wait_gone([dead.pid])  # re-parented away from Orca: exit code unknown
            user.ok("up")
            await wait_confirmed(user, live)
            assert_shown_working(user, live)
            async with hooks_mirror(user.orca_home) as (rows, _):
                await rows.wait_until(lambda m: dead.pane not in m.state)
            shown = ps_agents(user)[dead.pane]
            assert (shown["displayState"], shown["terminal"]["state"]) == ("exited", "exited")
        finally:
            for agent in (live, dead):
                agent.close()
            user.run("down", "--kill-terminals")
            kill_all([live.pid, dead.pid])

