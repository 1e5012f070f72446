"""An agent's PYTHONUNBUFFERED is the user's: the supervisor sets it for its actors
(their logs), and says so, and ptyd leaves it out of a child's environment then."""

from __future__ import annotations

from pathlib import Path

from actors.ptyd.spawn import LaunchToken, PaneIdentity, child_environment
from orca.user_env import UNBUFFERED_SET_ENV

IDENTITY = PaneIdentity(pane_key="t:1", tab_id="t", worktree_id="r::/w")


def _env(base: dict[str, str]) -> dict[str, str]:
    return child_environment(base, None, IDENTITY, LaunchToken.fresh(), Path("/x/endpoint"))


def test_pythonunbuffered_set_by_the_supervisor_stays_with_the_actors() -> None:
    env = _env({"PATH": "/bin", "PYTHONUNBUFFERED": "1", UNBUFFERED_SET_ENV: "1"})
    assert "PYTHONUNBUFFERED" not in env and UNBUFFERED_SET_ENV not in env
    assert env["PATH"] == "/bin"


def test_pythonunbuffered_the_user_set_reaches_the_agent() -> None:
    assert _env({"PYTHONUNBUFFERED": "x"})["PYTHONUNBUFFERED"] == "x"
