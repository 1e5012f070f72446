"""Approve or deny from the CLI (issue 40 item 5), as a user in a second shell would.

An agent (``permission_agent.sh``, asking the way Claude Code's PermissionRequest hook
does, through the hook script Orca installed) asks to run ``make deploy``: ``orca watch
--json`` prints the ask, ``orca worktree ps`` shows what is asked, ``orca approve`` lets
it run (the agent's next hook follows), ``orca deny --reason`` refuses the next ask and
the agent is told the reason; once answered there is nothing left to answer (exit 2).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from support.journey import User, make_git_repo
from support.watch import Watch
from support.web import PERMISSION_AGENT


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


async def test_approve_and_deny_a_held_permission_from_the_cli(user: User) -> None:
    watch = Watch(user)
    try:
        with trio.fail_after(90):
            await watch.live()  # its rows printed: every change from here is seen
            session = user.new_terminal(
                "project", "/bin/sh", str(PERMISSION_AGENT), str(user.hook_script)
            )
            handle, pane = session["handle"], session["paneKey"]
            await watch.until(lambda e: e["event"] == "set" and e["paneKey"] == pane)

            nothing = user.run("approve", handle)
            assert nothing.returncode == 2
            assert "is asking for a permission now" in nothing.stderr

            user.ok("term", "send", handle, "ask", "--enter")
            ask = await watch.until(lambda e: e["event"] == "ask" and e["paneKey"] == pane)
            assert (ask["toolName"], ask["summary"], ask["handle"]) == (
                "Bash",
                "make deploy",
                handle,
            )
            [agent] = [
                a for w in user.json("worktree", "ps")["worktrees"] for a in w["agents"]
                if a["paneKey"] == pane
            ]  # fmt: skip
            assert agent["state"] == "blocked"
            assert agent["asking"]["requestId"] == ask["requestId"]
            assert "asks Bash: make deploy" in user.ok("worktree", "ps")

            assert user.ok("approve", handle).strip() == "allowed: Bash: make deploy"
            answered = await watch.until(
                lambda e: e["event"] == "answered" and e["paneKey"] == pane
            )
            assert (answered["outcome"], answered["by"]) == ("allow", "cli")
            # The agent acted on it: its PostToolUse hook (sent only on "allow") lands.
            await watch.until(
                lambda e: e["event"] == "set" and e["paneKey"] == pane and e["state"] == "working"
            )
            again = user.run("approve", handle)
            assert again.returncode == 2, "an answered request was answered again"

            user.ok("term", "send", handle, "ask", "--enter")
            await watch.until(lambda e: e["event"] == "ask" and e["paneKey"] == pane)
            denied = user.json("deny", handle, "--reason", "not on a Friday")["answer"]
            assert denied["outcome"] == "decided"
            assert (denied["settlement"]["outcome"], denied["settlement"]["message"]) == (
                "deny",
                "not on a Friday",
            )
            answered = await watch.until(
                lambda e: e["event"] == "answered" and e["paneKey"] == pane
            )
            assert answered["outcome"] == "deny"
    finally:
        watch.close()


async def test_an_agent_asking_only_in_its_terminal_is_named_so(user: User) -> None:
    """Gemini CLI's hooks hold no approval (its Notification says it asks): `orca approve`
    says to answer in the agent's terminal instead of "nothing is asking"."""
    ask = '{"hook_event_name":"Notification","notification_type":"ToolPermission","session_id":"g"}'
    script = f"printf '%s' '{ask}' | {user.hook_script} gemini; exec sleep 600"
    watch = Watch(user)
    try:
        with trio.fail_after(60):
            await watch.live()  # its rows printed: every change from here is seen
            session = user.new_terminal("project", "/bin/sh", "-c", script)
            pane, handle = session["paneKey"], session["handle"]
            await watch.until(
                lambda e: e["event"] == "set" and e["paneKey"] == pane and e["state"] == "blocked"
            )
            told = user.run("approve", handle)
            assert told.returncode == 2
            assert told.stderr.strip() == (
                "orca: gemini asks in its own terminal, which Orca cannot answer for it: "
                f"answer there (`orca term attach {handle}`)"
            )
    finally:
        watch.close()
