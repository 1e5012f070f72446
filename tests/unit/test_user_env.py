"""An agent's environment is the user's (issue 40 items 1-2): Orca's virtualenv and
Orca's own variables are taken off whatever environment an agent starts in."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from orca.user_env import (
    UNBUFFERED_SET_ENV,
    check_bounds,
    parse_assignments,
    user_environment,
    which,
)


def _activated(venv: Path) -> dict[str, str]:
    """What ``. venv/bin/activate`` exports into a shell (CPython 3.11's script)."""
    return {
        "PATH": f"{venv}/bin:/home/u/.local/bin:/usr/bin:/bin",
        "VIRTUAL_ENV": str(venv),
        "VIRTUAL_ENV_PROMPT": "(.venv) ",
        "PS1": "(.venv) \\u@\\h:\\w\\$ ",
        "HOME": "/home/u",
    }


def test_orcas_virtualenv_is_taken_off(tmp_path: Path) -> None:
    venv = tmp_path / ".venv"
    (venv / "bin").mkdir(parents=True)
    env = user_environment(_activated(venv), prefix=str(venv))
    assert env == {
        "PATH": "/home/u/.local/bin:/usr/bin:/bin",
        "PS1": "\\u@\\h:\\w\\$ ",
        "HOME": "/home/u",
    }


def test_orcas_bin_is_off_path_when_reached_through_a_symlink(tmp_path: Path) -> None:
    venv = tmp_path / ".venv"
    (venv / "bin").mkdir(parents=True)
    (tmp_path / "link").symlink_to(venv)
    env = user_environment({"PATH": f"{tmp_path}/link/bin:/bin"}, prefix=str(venv))
    assert env["PATH"] == "/bin"


def test_a_users_own_virtualenv_stays(tmp_path: Path) -> None:
    orca_venv, project = tmp_path / "orca-venv", tmp_path / "project" / ".venv"
    for d in (orca_venv / "bin", project / "bin"):
        d.mkdir(parents=True)
    given = _activated(project)
    assert user_environment(given, prefix=str(orca_venv)) == given


def test_orca_internal_variables_go_and_the_documented_ones_stay() -> None:
    given = {
        "ORCA_HOME": "/h",
        "ORCA_HOST_ID": "local",
        "ORCA_NOTIFY_COMMAND": "notify-send",
        "ORCA_SUPERVISOR": "ipc:///x",
        "ORCA_PTYD_FD_KEEPER": "/k",
        "PYTHONUNBUFFERED": "1",
        UNBUFFERED_SET_ENV: "1",
        "PATH": "/bin",
    }
    env = user_environment(given, prefix=sys.base_prefix)
    assert env == {
        "ORCA_HOME": "/h",
        "ORCA_HOST_ID": "local",
        "ORCA_NOTIFY_COMMAND": "notify-send",
        "PATH": "/bin",
    }


def test_without_a_virtualenv_nothing_of_path_is_touched() -> None:
    given = {"PATH": f"{sys.base_prefix}/bin:/bin"}
    assert user_environment(given, prefix=sys.base_prefix) == given


def test_assignments() -> None:
    assert parse_assignments(["A=1", "B_2=x=y", "EMPTY="]) == {"A": "1", "B_2": "x=y", "EMPTY": ""}
    for bad in ("A", "=1", "1A=2", "A-B=1"):
        with pytest.raises(ValueError, match="NAME=VALUE"):
            parse_assignments([bad])


def test_bounds() -> None:
    check_bounds({"A": "1"})
    for bad in ({"A=B": "1"}, {"A": "x\0y"}, {"": "1"}, {"A": "x" * (1 << 20)}):
        with pytest.raises(ValueError, match="env"):
            check_bounds(bad)


def test_which_searches_the_given_path(tmp_path: Path) -> None:
    tool = tmp_path / "bin" / "claude"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    assert which("claude", f"/nonexistent:{tool.parent}") is None
    tool.chmod(0o755)
    assert which("claude", f"/nonexistent:{tool.parent}") == str(tool)
    assert which("claude", "/nonexistent") is None
    assert which(str(tool), "") == str(tool)
    assert which("sh", os.defpath) is not None
