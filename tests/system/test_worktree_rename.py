"""Issue 15 item 5: `orca worktree mv` renames branch, display name and folder together,
and the live session in the worktree follows (seed 01 §4.3). Through the CLI only, on a
real tree started by `orca up` in a fresh ORCA_HOME.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.journey import User, make_git_repo

from orca.client.sync import invoke
from orca.contracts import store


def _row(user: User, path: str) -> dict[str, Any]:
    rows = user.json("worktree", "ls", "--all")["worktrees"]
    return next(r for r in rows if r["path"] == path)


def _sessions(user: User) -> list[dict[str, Any]]:
    sessions: list[dict[str, Any]] = user.json("term", "ls")["sessions"]
    return sessions


@pytest.fixture
def user(orca_home: Path, tmp_path: Path) -> Any:
    user = User(orca_home, tmp_path / "user")
    user.ok("up")
    try:
        user.ok("repo", "add", str(make_git_repo(tmp_path / "proj")))
        invoke(
            store.SETTINGS_PATCH,
            store.PatchArgs(patch={"workspaceDir": str(tmp_path / "ws")}),
            paths=user.paths,
        )
        yield user
    finally:
        user.ok("down", "--kill-terminals")


@pytest.mark.timeout(120)
def test_worktree_mv_renames_branch_display_name_and_folder(user: User, tmp_path: Path) -> None:
    """After mv, ls shows the new NAME, branch and path; the old branch is gone."""
    made = user.json("worktree", "create", "proj", "draft", "--setup", "skip")["worktree"]
    out = user.ok("worktree", "mv", "draft", "Login fix")
    new_path = str(tmp_path / "ws" / "proj" / "Login-fix")
    assert new_path in out
    row = _row(user, new_path)
    assert (row["displayName"], row["branch"]) == ("Login fix", "refs/heads/Login-fix")
    assert made["path"] not in {
        r["path"] for r in user.json("worktree", "ls", "--all")["worktrees"]
    }
    table = user.ok("worktree", "ls")  # its columns belong to the handles work
    assert "Login-fix" in table and "draft" not in table


@pytest.mark.timeout(120)
def test_live_session_follows_worktree_mv(user: User, tmp_path: Path) -> None:
    """A session started in the worktree is re-keyed to the new worktree id, not killed."""
    user.json("worktree", "create", "proj", "draft", "--setup", "skip")
    user.ok("term", "new", "draft", "--", "sleep", "600")
    [before] = _sessions(user)
    user.ok("worktree", "mv", "draft", "renamed")
    new_path = str(tmp_path / "ws" / "proj" / "renamed")
    [after] = _sessions(user)
    assert after["worktreeId"].endswith("::" + new_path)
    assert after["pid"] == before["pid"]


@pytest.mark.timeout(120)
def test_live_session_cwd_follows_worktree_mv(user: User, tmp_path: Path) -> None:
    """The session's reported cwd moves with its folder."""
    user.json("worktree", "create", "proj", "draft", "--setup", "skip")
    user.ok("term", "new", "draft", "--", "sleep", "600")
    user.ok("worktree", "mv", "draft", "renamed")
    [after] = _sessions(user)
    assert after["cwd"] == str(tmp_path / "ws" / "proj" / "renamed")
