"""``orca term resume`` of a pane whose agent Orca does not know (issue 34): it says so
and offers the plain re-run, which starts the command again in the same pane."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from support.journey import User, make_git_repo
from support.watch import exits_after


@pytest.fixture
def user(orca_home: Path, tmp_path: Path) -> Iterator[User]:
    person = User(orca_home, tmp_path / "user")
    person.ok("up")
    try:
        person.ok("repo", "add", str(make_git_repo(tmp_path / "project")))
        yield person
    finally:
        person.run("down", "--kill-terminals")


async def test_a_pane_with_no_known_agent_offers_the_plain_rerun(user: User) -> None:
    with trio.fail_after(60):
        argv = ["/bin/sh", "-c", "read x; echo ran-$x; exit 3"]
        session = user.new_terminal("project", *argv)
        handle, pane = session["handle"], session["paneKey"]
        answer = lambda: user.ok("term", "send", handle, "go", "--enter")  # noqa: E731
        await trio.to_thread.run_sync(exits_after, user, session["sessionId"], answer)

        refused = user.run("term", "resume", handle)
        assert refused.returncode == 2, refused
        assert refused.stderr.count("\n") == 1, refused.stderr  # one line
        assert "no agent session is known for this terminal" in refused.stderr
        assert f"orca term resume {handle} --rerun" in refused.stderr

        rerun = user.json("term", "resume", handle, "--rerun")["session"]
        assert rerun["paneKey"] == pane and rerun["resumed"] is None
        assert rerun["argv"] == argv
        running = [s for s in user.json("term", "ls")["sessions"] if s["paneKey"] == pane and s["running"]]
        assert [s["sessionId"] for s in running] == [rerun["sessionId"]]


def test_a_running_terminal_is_not_resumed(user: User) -> None:
    session = user.new_terminal("project", "/bin/sh", "-c", "exec sleep 60")
    refused = user.run("term", "resume", session["handle"])
    assert refused.returncode == 2 and "still running" in refused.stderr, refused
