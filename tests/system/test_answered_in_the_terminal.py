"""A permission answered in the agent's own dialog (issue 40 item 4), as Claude Code 2.1
does it: refused (Esc, "No"), the agent prints its interrupt line and returns to its
prompt sending no hook, and Orca must not show it ``working``; approved, it works (its
spinner redraws) and is never shown idle until its own hooks say so.

The agent is ``dialog_agent.sh``: its PermissionRequest hook is held by Orca while its
dialog waits for a key typed into its terminal (``orca term send``), as Claude's does.
What ``orca watch --json`` prints is checked, in order.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from support.journey import User, make_git_repo

from actors.hooks.answer_watch import IDLE_DETAIL, INTERRUPTED_DETAIL

DIALOG_AGENT = Path(__file__).parents[1] / "fixtures" / "support" / "dialog_agent.sh"


@pytest.fixture
def user(orca_home: Path, tmp_path: Path) -> Iterator[User]:
    person = User(orca_home, tmp_path / "user")
    project = make_git_repo(tmp_path / "project")
    person.ok("up")
    try:
        person.ok("repo", "add", str(project))
        yield person
    finally:
        person.run("down", "--kill-terminals")


class Watch:
    def __init__(self, user: User) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "orca.cli.main", "watch", "--json"],
            env=user.env,
            stdout=subprocess.PIPE,
            text=True,
        )

    async def live(self) -> None:
        """Until ``orca watch`` has printed the current rows (``{"event": "live"}``)."""
        assert self.proc.stdout is not None
        while True:
            raw = await trio.to_thread.run_sync(self.proc.stdout.readline, abandon_on_cancel=True)
            assert raw, "orca watch ended"
            if json.loads(raw)["event"] == "live":
                return

    async def state(self, pane: str) -> tuple[str, str]:
        """The next (state, detail) ``orca watch`` prints for ``pane``."""
        assert self.proc.stdout is not None
        while True:
            raw = await trio.to_thread.run_sync(self.proc.stdout.readline, abandon_on_cancel=True)
            assert raw, "orca watch ended"
            line = json.loads(raw)
            if line["event"] == "set" and line["paneKey"] == pane:
                return str(line["state"]), str(line["detail"])

    async def until(self, pane: str, state: str) -> list[tuple[str, str]]:
        """Every (state, detail) of ``pane`` up to and including the first ``state``."""
        seen = []
        while not seen or seen[-1][0] != state:
            seen.append(await self.state(pane))
        return seen

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@pytest.mark.parametrize(
    ("agent", "quiet", "detail"),
    [("claude", "", INTERRUPTED_DETAIL), ("codex", "1", IDLE_DETAIL)],
    ids=["interrupt-line", "quiet-prompt"],
)
async def test_refused_in_the_agents_dialog_is_waiting_not_working(
    user: User, agent: str, quiet: str, detail: str
) -> None:
    user.env["AGENT_QUIET_REFUSAL"] = quiet
    watch = Watch(user)
    try:
        with trio.fail_after(60):
            await watch.live()  # its rows printed: every change from here is seen
            session = user.new_terminal(
                "project", "/bin/bash", str(DIALOG_AGENT), str(user.hook_script), agent
            )
            pane, handle = session["paneKey"], session["handle"]
            assert (await watch.until(pane, "working"))[-1][0] == "working"
            user.ok("term", "send", handle, "ask", "--enter")
            await watch.until(pane, "blocked")
            user.ok("term", "send", handle, "\x1b")  # Esc in the agent's own dialog
            assert await watch.state(pane) == ("working", "prompt answered")
            # No hook comes; the terminal says the agent is idle at its prompt.
            assert await watch.state(pane) == ("waiting", detail)
            [row] = [
                a for w in user.json("worktree", "ps")["worktrees"] for a in w["agents"]
                if a["paneKey"] == pane
            ]  # fmt: skip
            assert row["state"] == "waiting"
    finally:
        watch.close()


async def test_approved_in_the_agents_dialog_stays_working_until_its_hooks(user: User) -> None:
    watch = Watch(user)
    try:
        with trio.fail_after(60):
            await watch.live()  # its rows printed: every change from here is seen
            session = user.new_terminal(
                "project", "/bin/bash", str(DIALOG_AGENT), str(user.hook_script), "claude"
            )
            pane, handle = session["paneKey"], session["handle"]
            await watch.until(pane, "working")
            user.ok("term", "send", handle, "ask", "--enter")
            await watch.until(pane, "blocked")
            user.ok("term", "send", handle, "y")  # approved: it runs for 5 s, animating
            seen = await watch.until(pane, "done")
            assert "waiting" not in [state for state, _ in seen], seen
            assert seen[0] == ("working", "prompt answered")
    finally:
        watch.close()
