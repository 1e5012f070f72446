"""``orca term resume`` of a pane whose agent Orca does not know (issue 34): it says so
and offers the plain re-run, which starts the command again in the same pane."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from support.journey import User, make_git_repo
from support.orch import orch_user
from support.procs import kill_like_a_reboot
from support.watch import Watch, exits_after, state_is


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
        running = [
            s for s in user.json("term", "ls")["sessions"] if s["paneKey"] == pane and s["running"]
        ]
        assert [s["sessionId"] for s in running] == [rerun["sessionId"]]


def test_a_running_terminal_is_not_resumed(user: User) -> None:
    session = user.new_terminal("project", "/bin/sh", "-c", "exec sleep 60")
    refused = user.run("term", "resume", session["handle"])
    assert refused.returncode == 2 and "still running" in refused.stderr, refused


async def test_orca_up_names_a_reboots_lost_agents_once(orca_home: Path, tmp_path: Path) -> None:
    """After a reboot, `orca up` names the agent it can resume; the next `orca up` (the
    agent left lost: the user chose not to) does not name it again, though `orca term ls
    --all` still lists it lost (it named every lost agent of the 30 days' history at
    every start)."""
    person, _log = orch_user(orca_home, tmp_path)  # `claude` on PATH: the fake agent
    person.ok("up")
    try:
        person.ok("repo", "add", str(make_git_repo(tmp_path / "project")))
        watch = Watch(person)
        try:
            with trio.fail_after(60):
                await watch.live()
                session = person.new_terminal("project", "claude")
                await watch.until(state_is(session["paneKey"], "waiting"))  # its session bound
        finally:
            watch.close()
        # The service stopped with its terminals kept (every file written), then the
        # machine went down with the agent (a kill -9 within hooks' 0.25 s save debounce
        # would also take the binding the resume needs).
        person.ok("down", "--keep-terminals")
        kill_like_a_reboot(person.paths)
        shutil.rmtree(person.paths.runtime_dir)
        said = person.ok("up")
        assert f"1 agent running when the machine went down can resume: {session['handle']}" in said
        person.ok("down", "--kill-terminals")
        again = person.ok("up")
        assert "can resume" not in again, again
        [row] = [
            s
            for s in person.json("term", "ls", "--all")["sessions"]
            if s["sessionId"] == session["sessionId"]
        ]
        assert row["lost"] and row["lostAt"] is not None, row
    finally:
        person.run("down", "--kill-terminals")
