"""Issue 15 item 5: `orca worktree mv` renames branch, display name and folder together,
and the live session in the worktree follows (seed 01 §4.3). Through the CLI only, on a
real tree started by `orca up` in a fresh ORCA_HOME. 01-23: a worktree created without
a name is named the same way by the first prompt of an agent in it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from support.journey import User, make_git_repo

from orca.client.sync import invoke, subscribe
from orca.contracts import gitwatch, store

# The prompt's hook, the rename (a branch, a folder, store's identity migration) and
# the rescan after it, on a loaded 2-core box.
RENAME_WAIT_S = 30.0


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


@pytest.mark.timeout(120)
def test_the_first_prompt_names_a_worktree_created_without_a_name(
    user: User, tmp_path: Path
) -> None:
    """`worktree create proj` makes a placeholder; the first prompt an agent in it submits
    (Claude's UserPromptSubmit, through the installed hook script) names it: ls shows
    the prompt's first line as its NAME, and the branch and folder renamed after it."""
    made = user.json("worktree", "create", "proj", "--setup", "skip")["worktree"]
    placeholder = os.path.basename(made["path"])
    assert placeholder.startswith("untitled-")
    assert _row(user, made["path"])["pendingFirstAgentMessageRename"] is True
    new_path = str(tmp_path / "ws" / "proj" / "Fix-the-login-page")
    hook = (
        'printf \'{"hook_event_name":"UserPromptSubmit","session_id":"s-1",'
        '"prompt":"Fix the login page\\\\nand its tests"}\''
        f" | {user.hook_script} claude >/dev/null; exec sleep 600"
    )
    with subscribe(
        gitwatch.CONTRACT.actor,
        [gitwatch.WORKTREE_RENAMED, gitwatch.WORKTREE_CHANGED],
        consumer="tests",
        paths=user.paths,
    ) as events:
        assert events.wait_live(10.0)
        user.new_terminal(placeholder, "/bin/sh", "-c", hook)
        # The branch is renamed before the folder moves, and the moved row rescanned
        # after worktree.renamed: wait for the row's branch at its new path.
        deadline = time.monotonic() + RENAME_WAIT_S
        renamed = next(
            (e for _, e in events.until(deadline) if isinstance(e, gitwatch.WorktreeRenamed)),
            None,
        )
        assert renamed is not None, "the first prompt named nothing"
        assert (renamed.old_worktree_id, renamed.new_path) == (made["id"], new_path)
        rescanned = next(
            (
                e
                for _, e in events.until(deadline)
                if isinstance(e, gitwatch.WorktreeChanged)
                and e.worktree_id == renamed.new_worktree_id
                and e.git.branch == "refs/heads/Fix-the-login-page"
            ),
            None,
        )
        assert rescanned is not None, "the moved row's branch was not rescanned"
    row = _row(user, new_path)
    assert (row["displayName"], row["branch"]) == (
        "Fix the login page", "refs/heads/Fix-the-login-page"
    )  # fmt: skip
    assert not row.get("pendingFirstAgentMessageRename")
    assert made["path"] not in {r["path"] for r in user.json("worktree", "ls", "--all")["worktrees"]}
    [session] = _sessions(user)  # the agent's terminal moved with its worktree
    assert session["worktreeId"] == renamed.new_worktree_id
