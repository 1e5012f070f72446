"""Issues 23 and 33: agent status across restarts and worktree removal, over the real tree.

1. After `orca restart --all`, or `kill -9` of orcad and `orca up`, an agent whose PTY
   lived on is tied to its terminal again but shown restored (`idle (restored:
   working)`) until it reports: a live PTY proves the process, not its turn (seed 03
   R15). One whose PTY died meanwhile is never shown working (docs/protocols.md §3
   "Restored rows and ptyd's truth").
2. Issue 33: an agent that finished while Orca was down (its Stop hook lost) is not
   shown `working`, fresh, after `orca up`; its next hook confirms the row.
3. `orca worktree rm` of a worktree whose agent had exited leaves no row in
   `orca worktree ps`, also when hooks was down during the removal.

Every agent reports through the installed hook script (`orca-agent-hook.sh`), as a real
agent's hook does: once at start, then only when the test tells it to.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import psutil
import trio
from support.actors import event_tap
from support.chaos import wait_gone
from support.journey import User, hooks_mirror, make_git_repo
from support.lifecycle import lifecycle
from support.procs import kill_all
from trio.lowlevel import FdStream

from orca.contracts import hooks
from orca.contracts import supervisor as sup

# Reports one turn in progress through the hook script (as Claude Code does), then
# does what its FIFO ($2) says, one line at a time: `exit N`, or a hook event to post
# (`Stop` also prints "agent: done"; `Notification KIND` posts that notification). Each
# post done, it writes the event to its acknowledgement FIFO ($3). A hook posted while
# Orca is down is lost: the script exits 0 silently.
AGENT = r"""
hook=$1
post() {
  printf '{"hook_event_name":"%s","session_id":"s","prompt":"go","notification_type":"%s"}' \
    "$1" "$2" | "$hook" claude >/dev/null
}
post UserPromptSubmit ""
echo "agent: working"
while read -r event kind < "$2"; do
  case $event in
    exit) exit "$kind" ;;
    Stop) post Stop ""; echo "agent: done" ;;
    *) post "$event" "$kind"; echo "agent: $event $kind" ;;
  esac
  echo "$event" > "$3"
done
"""


class Agent:
    """One agent in a worktree's terminal: its pane, pid, terminal handle, and the FIFOs
    that drive it."""

    def __init__(self, user: User, tmp: Path, worktree: str, name: str) -> None:
        script = tmp / "agent.sh"
        script.write_text(AGENT)
        self.fifo = tmp / f"end-{name}"
        acks = tmp / f"acks-{name}"
        os.mkfifo(self.fifo)
        os.mkfifo(acks)
        # Held open read-write so writing never blocks and the agent's read waits, and
        # the agent's acknowledgements never wait for a reader either.
        self._fd = os.open(self.fifo, os.O_RDWR)
        self._acks = FdStream(os.open(acks, os.O_RDWR))
        argv = ("/bin/sh", str(script), str(user.hook_script), str(self.fifo), str(acks))
        row = user.new_terminal(worktree, *argv)
        self.session_id, self.pane, self.pid = row["sessionId"], str(row["paneKey"]), int(row["pid"])
        self.terminal_handle = str(row["terminalHandle"])

    def exit(self, code: int) -> None:
        os.write(self._fd, f"exit {code}\n".encode())

    async def post(self, event: str, kind: str = "") -> None:
        """The agent posts hook ``event`` (a ``Notification`` of ``kind``); returns once
        its hook script has run, whether anyone was listening or not."""
        os.write(self._fd, f"{event} {kind}\n".encode())
        acked = b""
        while not acked.endswith(f"{event}\n".encode()):
            acked += await self._acks.receive_some()

    def close(self) -> None:
        os.close(self._fd)
        self._acks.close()


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


async def wait_tied(user: User, agent: Agent) -> None:
    """Until ptyd's truth reached hooks: the agent's row names its live terminal again
    (the handle is never saved, so a restored row has none until then)."""
    async with hooks_mirror(user.orca_home) as (rows, _):
        await rows.wait_until(
            lambda m: agent.pane in m.state
            and m.state[agent.pane].terminal_handle == agent.terminal_handle
        )


def assert_shown_restored(user: User, agent: Agent, state: str = "working") -> None:
    """ps shows the agent's row as restored (`idle (restored: working)`), tied to its
    live terminal: the state it last reported, never as fresh truth."""
    shown = ps_agents(user)[agent.pane]
    assert (shown["state"], shown["displayState"], shown["restoredUnconfirmed"]) == (
        state,
        "idle",
        True,
    ), shown
    assert not shown["fresh"], shown
    assert shown["terminal"] == {"state": "live"}, shown
    assert shown["terminalHandle"] == agent.terminal_handle, shown
    assert f"idle (restored: {state})" in user.ok("worktree", "ps")
    assert psutil.Process(agent.pid).is_running(), "the agent must have lived on"


async def test_restart_all_ties_a_live_agent_to_its_terminal_restored(
    orca_home: Path, tmp_path: Path
) -> None:
    """`orca restart --all`: every Orca pid changes, the agent's does not; ps shows its
    row on its live terminal, restored (`idle (restored: working)`) - it never reports
    again, so nothing says its turn is still on."""
    with trio.fail_after(120):
        user, worktrees = setup(orca_home, tmp_path, "busy")
        agent = Agent(user, tmp_path, worktrees["busy"], "busy")
        try:
            await wait_reported(user, agent)
            user.ok("restart", "--all")
            await wait_tied(user, agent)
            assert_shown_restored(user, agent)
        finally:
            agent.close()
            user.run("down", "--kill-terminals")
            kill_all([agent.pid])


async def test_orcad_crash_keeps_the_live_agent_and_never_shows_a_dead_one_working(
    orca_home: Path, tmp_path: Path
) -> None:
    """kill -9 of orcad (its actors stop; the keeper holds the PTYs), one agent killed
    while nothing of Orca but the keeper runs, then `orca up`: the live one is shown
    on its terminal, restored, the dead one as exited, not working - neither reported
    again."""
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
            await wait_tied(user, live)
            assert_shown_restored(user, live)
            async with hooks_mirror(user.orca_home) as (rows, _):
                await rows.wait_until(lambda m: dead.pane not in m.state)
            shown = ps_agents(user)[dead.pane]
            assert (shown["displayState"], shown["terminal"]["state"]) == ("exited", "exited")
        finally:
            for agent in (live, dead):
                agent.close()
            user.run("down", "--kill-terminals")
            kill_all([live.pid, dead.pid])


async def test_an_agent_that_finished_while_orca_was_down_is_not_shown_working(
    orca_home: Path, tmp_path: Path
) -> None:
    """Issue 33 (seed 03 R15): the agent posts working; `orca down --keep-terminals`;
    its Stop is lost (hooks is down) and it prints done; `orca up`: ps shows its row
    restored on its live terminal, not fresh `working`. Its next hook (Claude's
    idle_prompt notification) confirms the row with that state."""
    with trio.fail_after(120):
        user, worktrees = setup(orca_home, tmp_path, "finished")
        agent = Agent(user, tmp_path, worktrees["finished"], "finished")
        try:
            await wait_reported(user, agent)
            user.ok("down", "--keep-terminals")
            await agent.post("Stop")  # lost: nothing listens
            user.ok("up")
            await wait_tied(user, agent)
            assert_shown_restored(user, agent)
            await agent.post("Notification", "idle_prompt")
            async with hooks_mirror(user.orca_home) as (rows, _):
                await rows.wait_until(
                    lambda m: agent.pane in m.state and m.state[agent.pane].state == "waiting"
                )
            shown = ps_agents(user)[agent.pane]
            assert (
                shown["state"],
                shown["displayState"],
                shown["fresh"],
                shown["restoredUnconfirmed"],
                shown["terminalHandle"],
            ) == ("waiting", "waiting", True, False, agent.terminal_handle), shown
            assert "restored" not in user.ok("worktree", "ps")
        finally:
            agent.close()
            user.run("down", "--kill-terminals")
            kill_all([agent.pid])


async def _exited(user: User, tmp_path: Path, worktree: str, code: int) -> Agent:
    """An agent of ``worktree`` that reported working, then exited with ``code``."""
    agent = Agent(user, tmp_path, worktree, "gone")
    await wait_reported(user, agent)
    agent.exit(code)
    await wait_gone([agent.pid])
    async with hooks_mirror(user.orca_home) as (rows, _):
        await rows.wait_until(lambda m: agent.pane not in m.state)  # the exit reached hooks
    return agent


async def test_worktree_rm_removes_the_exited_agents_row(orca_home: Path, tmp_path: Path) -> None:
    """The agent exited (ps: `exited 3`), then `orca worktree rm`: its status goes with
    the worktree (one clear), from ps too; the other worktree's agent stays."""
    with trio.fail_after(120):
        user, worktrees = setup(orca_home, tmp_path, "done-with", "still-here")
        other = Agent(user, tmp_path, worktrees["still-here"], "other")
        agent: Agent | None = None
        try:
            agent = await _exited(user, tmp_path, worktrees["done-with"], 3)
            shown = ps_agents(user)[agent.pane]
            assert (shown["displayState"], shown["terminal"]["exitCode"]) == ("exited", 3)
            pane = agent.pane
            async with event_tap(orca_home, hooks.CONTRACT, topics=["agentStatus.clear"]) as tap:
                user.ok("worktree", "rm", worktrees["done-with"])
                cleared = await tap.next_of(hooks.STATUS_CLEARED, lambda c: c.pane_key == pane)
            assert (cleared.worktree_id, cleared.reason) == (
                worktrees["done-with"],
                "worktree_removed",
            )
            agents = ps_agents(user)
            assert [a for a in agents.values() if a["worktreeId"] == worktrees["done-with"]] == []
            assert other.pane in agents
        finally:
            for a in (other, agent):
                if a is not None:
                    a.close()
            user.run("down", "--kill-terminals")
            kill_all([other.pid])


async def test_worktree_rm_while_hooks_is_down_leaves_no_row_after(
    orca_home: Path, tmp_path: Path
) -> None:
    """hooks stopped (orcad held so it stays down), the agent exits meanwhile (the exit
    never reaches hooks, whose file still holds the row working), `orca worktree rm`,
    then hooks comes back: no row of the removed worktree, in ps or on disk."""
    with trio.fail_after(120):
        user, worktrees = setup(orca_home, tmp_path, "removed-blind")
        worktree = worktrees["removed-blind"]
        agent = Agent(user, tmp_path, worktree, "blind")
        try:
            await wait_reported(user, agent)
            status = {a["name"]: a["pid"] for a in user.json("status")["actors"]}
            orcad = int(json.loads(user.paths.lock_file.read_text())["pid"])
            async with lifecycle(orca_home) as (life, rec):
                os.kill(orcad, signal.SIGSTOP)
                try:
                    os.kill(status["hooks"], signal.SIGTERM)  # it saves its rows first
                    await wait_gone([status["hooks"]])
                    saved = json.loads((user.paths.hooks_dir / "last-status.json").read_bytes())
                    assert [r["paneKey"] for r in saved["rows"]] == [agent.pane]
                    agent.exit(3)
                    await wait_gone([agent.pid])
                    user.ok("worktree", "rm", worktree)
                finally:
                    os.kill(orcad, signal.SIGCONT)
                await life.wait_until(
                    lambda m: rec.seen(sup.STARTED, "hooks", lambda d: d.pid != status["hooks"])
                )
            saved = json.loads((user.paths.hooks_dir / "last-status.json").read_bytes())
            assert all(r["worktreeId"] != worktree for r in saved["rows"]), saved
            snapshot_ps = ps_agents(user)
            assert [a for a in snapshot_ps.values() if a["worktreeId"] == worktree] == []
        finally:
            agent.close()
            user.run("down", "--kill-terminals")
            kill_all([agent.pid])
