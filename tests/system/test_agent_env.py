"""What an agent's environment carries of Orca (issue 23 item 4).

ptyd passed its whole environment on: the supervisor's variables for its actors
(``ORCA_SUPERVISOR``, ``ORCA_ACTOR_NAME``, ``ORCA_PTYD_FD_KEEPER``, ``ORCA_TCP_HOST``...)
and the actors' settings reached every agent (and the actors' PYTHONUNBUFFERED, too).
Now a spawned shell sees only the pane's
identity, its launch token and hook endpoint (set by ptyd), and ``ORCA_HOME``; its hook
POST, through the installed script, still lands.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from support.journey import User, recorded

from orca.client.sync import invoke
from orca.contracts import hooks, ptyd

WT = "repo1::/w/env"
# Set in the user's shell before `orca up`: settings of the actors, not of agents.
ACTOR_SETTINGS = {"ORCA_TCP_HOST": "127.0.0.1", "ORCA_PTYD_GC_GRACE_S": "300"}
EXPECTED = {
    "ORCA_HOME",
    "ORCA_PANE_KEY",
    "ORCA_TAB_ID",
    "ORCA_WORKTREE_ID",
    "ORCA_AGENT_LAUNCH_TOKEN",
    "ORCA_AGENT_HOOK_ENDPOINT",
}
HOOK = """{"hook_event_name":"UserPromptSubmit","session_id":"env-test"}"""


@pytest.fixture
def user(orca_home: Path, tmp_path: Path) -> Iterator[User]:
    person = User(orca_home, tmp_path / "user")
    person.env.update(ACTOR_SETTINGS)
    person.env.pop("PYTHONUNBUFFERED", None)  # so the supervisor's is the only one
    person.ok("up")
    try:
        yield person
    finally:
        person.run("down", "--kill-terminals")


async def test_an_agent_sees_only_the_orca_variables_it_needs(user: User, tmp_path: Path) -> None:
    """A spawned shell's ``env`` holds the pane's identity, launch token, hook endpoint
    and ORCA_HOME, none of the supervisor's or the actors' variables; the hook it posts
    through the installed script is applied to its pane."""
    script = (
        f"env; printf '%s' '{HOOK}' | {user.hook_script} claude; echo HOOK-POSTED; exec sleep 600"
    )
    with trio.fail_after(60):
        async with recorded(user.orca_home, ptyd.CONTRACT, ptyd.SNAPSHOT) as (mirror, rec, client):
            args = ptyd.SpawnArgs(argv=["/bin/sh", "-c", script], cwd=str(tmp_path), worktree_id=WT)
            spawned: ptyd.SpawnResult = await client.invoke(ptyd.SPAWN, args)
            while True:
                seen = len(rec.events)
                output = await client.invoke(
                    ptyd.READ, ptyd.ReadArgs(session_id=spawned.session_id)
                )
                if b"HOOK-POSTED" in output.data:
                    break
                await mirror.wait_until(lambda m, n=seen: len(rec.events) > n)
        snapshot = await trio.to_thread.run_sync(lambda: invoke(hooks.SNAPSHOT, paths=user.paths))
    lines = output.data.decode().replace("\r\n", "\n").splitlines()
    env = dict(line.split("=", 1) for line in lines if "=" in line and line[:1].isupper())
    assert {k for k in env if k.startswith("ORCA_")} == EXPECTED
    assert "PYTHONUNBUFFERED" not in env  # the actors' (for their logs), not the agent's
    assert env["ORCA_HOME"] == str(user.orca_home)
    assert env["ORCA_PANE_KEY"] == spawned.pane_key
    [row] = [r for r in snapshot.rows if r.pane_key == spawned.pane_key]
    assert (row.worktree_id, row.state, row.source) == (WT, "working", "hook")
