"""Issue 32, errors a newcomer meets, through the real CLI on a real tree: each is one
line that says what to do, and nothing is left running.

* ``orca web`` on a port another program holds: one line naming the port and the
  option that fixes it (``--bind``), no traceback; the dashboard's own process, run on
  that port, says the same in one line.
* ``worktree create "fix login"`` says the name it made (``fix-login``) and the name as
  given finds it later; a ``--base`` that names nothing is refused before git prints
  "Preparing worktree"; a worktree whose folder was deleted lists as ``missing`` and
  ``term new`` there says so and what to run; ``worktree mv`` says it renames the
  branch too, and warns that shells running there keep their old ``$PWD``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.journey import User, make_git_repo
from support.remote import wait_until


@pytest.fixture
def user(orca_home: Path, tmp_path: Path) -> Iterator[User]:
    user = User(orca_home, tmp_path / "user")
    user.ok("up")
    try:
        yield user
    finally:
        user.ok("down", "--kill-terminals")


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port another program listens on."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        yield int(other.getsockname()[1])


def test_orca_web_on_a_port_in_use_says_so_in_one_line(user: User, taken_port: int) -> None:
    done = user.run("web", "--bind", f"127.0.0.1:{taken_port}", timeout=60)
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith(f"orca: 127.0.0.1:{taken_port} is in use"), line
    assert "orca web --bind 127.0.0.1:PORT" in line and "web.toml" in line
    assert "Traceback" not in done.stdout + done.stderr


def test_the_web_process_on_a_port_in_use_says_so_in_one_line(user: User, taken_port: int) -> None:
    """As orcad starts it (web.toml's port taken): one line in its stderr, not the
    traceback of the nursery its start-up ran in."""
    env = {**user.env, "ORCA_WEB_BIND": f"127.0.0.1:{taken_port}"}
    env["ORCA_SUPERVISOR_PID"] = str(os.getpid())
    done = subprocess.run(
        [sys.executable, "-m", "actors.web"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith(f"web: 127.0.0.1:{taken_port} is in use"), line


@pytest.fixture
def repo(user: User, tmp_path: Path) -> str:
    user.ok("repo", "add", str(make_git_repo(tmp_path / "project")))
    return "project"


def test_a_sanitised_worktree_name_is_said_and_found_by_the_name_given(
    user: User, repo: str
) -> None:
    made = user.ok("worktree", "create", repo, "fix login", "--setup", "skip")
    assert made.startswith("created 'fix-login' (from 'fix login'): "), made
    escaped = user.ok("worktree", "create", repo, "../escape", "--setup", "skip")
    assert escaped.startswith("created 'escape' (from '../escape'): "), escaped
    names = {Path(r["path"]).name for r in user.json("worktree", "ls")["worktrees"]}
    assert {"fix-login", "escape"} <= names
    removed = user.ok("worktree", "rm", "fix login")
    assert removed.startswith("removed ") and removed.rstrip().endswith("/fix-login")
    gone = user.run("worktree", "rm", "fix login")
    assert gone.returncode == 2
    assert gone.stderr.strip() == (
        "orca: no worktree matches 'fix login' (nor 'fix-login') (see `orca worktree ls`)"
    )


def test_a_base_that_names_nothing_is_refused_before_git_speaks(user: User, repo: str) -> None:
    done = user.run("worktree", "create", repo, "w", "--base", "nope", "--setup", "skip")
    assert done.returncode == 2, done
    [line] = done.stderr.splitlines()
    assert "'nope' is not a branch, tag or commit" in line, line
    assert "Preparing" not in done.stdout + done.stderr
    assert all(Path(r["path"]).name != "w" for r in user.json("worktree", "ls")["worktrees"])


def test_a_worktree_whose_folder_was_deleted_is_missing(user: User, repo: str) -> None:
    user.ok("worktree", "create", repo, "gone", "--setup", "skip")
    [row] = [r for r in user.json("worktree", "ls")["worktrees"] if r["path"].endswith("/gone")]
    shutil.rmtree(row["path"])
    # gitwatch hears of it through inotify (the folder's own watch) and re-reads git.
    wait_until(
        lambda: [r for r in user.json("worktree", "ls")["worktrees"] if r["prunable"]],
        "the deleted worktree listed as prunable",
    )
    listed = user.ok("worktree", "ls").splitlines()
    [line] = [ln for ln in listed if ln.rstrip().endswith("/gone")]
    assert " missing " in line and " clean " not in line, line
    refused = user.run("term", "new", "gone", "--", "/bin/sh")
    assert refused.returncode == 2, refused
    assert refused.stderr.strip() == (
        f"orca: the folder of worktree 'gone' is missing ({row['path']}; deleted?):"
        " `orca worktree rm gone` forgets it"
    )
    user.ok("worktree", "rm", "gone")
    assert not [r for r in user.json("worktree", "ls")["worktrees"] if r["path"] == row["path"]]


def test_worktree_mv_says_it_renames_the_branch_and_warns_of_stale_shells(
    user: User, repo: str
) -> None:
    assert "its folder and its branch" in " ".join(user.ok("worktree", "mv", "--help").split())
    user.ok("worktree", "create", repo, "old", "--setup", "skip")
    quiet = user.run("worktree", "mv", "old", "older")
    assert quiet.returncode == 0 and quiet.stderr == "", quiet
    user.new_terminal("older", "/bin/sh")
    moved = user.run("worktree", "mv", "older", "new")
    assert moved.returncode == 0, moved
    assert "on new" in moved.stdout
    [new] = [r for r in user.json("worktree", "ls")["worktrees"] if r["path"].endswith("/new")]
    old_path = new["path"].removesuffix("/new") + "/older"
    assert moved.stderr.strip() == (
        f"orca: 1 terminal running there keeps {old_path} as $PWD until it cds (`cd {new['path']}`)"
    )


def test_worktree_ps_lists_terminals_no_agent_reports_from(user: User, repo: str) -> None:
    """Five plain shells running said "no agents reporting": each is listed, its state
    unknown, with a line saying how an agent comes to report."""
    user.ok("worktree", "create", repo, "shells", "--setup", "skip")
    assert user.ok("worktree", "ps").strip() == "no agents reporting, no terminals running"
    made = [user.new_terminal("shells", "/bin/sh", "-c", f"exec sleep 60{n}") for n in range(2)]
    lines = user.ok("worktree", "ps").splitlines()
    assert lines[0].split() == ["TERMINAL", "AGENT", "STATE", "AGE", "SOURCE", "DETAIL"]
    rows = {line.split()[0]: line.split() for line in lines[1:3]}
    for n, terminal in enumerate(made):
        assert rows[terminal["handle"]][1:3] == ["-", "unknown"]
        assert rows[terminal["handle"]][-5:] == ["/bin/sh", "-c", "exec", "sleep", f"60{n}"]
    assert lines[3].startswith("(2 terminals report no agent state: an agent reports once")
    silent = user.json("worktree", "ps")["silentTerminals"]
    assert sorted(t["handle"] for t in silent) == sorted(t["handle"] for t in made)
    assert user.ok("worktree", "ps", "--needs-me").strip() == "nothing needs you"


def test_where_worktrees_go_is_shown_and_chosen(user: User, repo: str, tmp_path: Path) -> None:
    """README "Where worktrees go": `orca settings` shows the folder (under ORCA_HOME
    here, ~/orca/workspaces for a user), `settings set workspace-dir` moves where the
    next worktree is made, nest-workspaces drops the repo's folder from the path."""
    shown = user.json("settings")["settings"]
    assert shown == {
        "workspace-dir": str(user.orca_home / "orca" / "workspaces"),
        "nest-workspaces": True,
    }
    chosen = tmp_path / "elsewhere"
    said = user.ok("settings", "set", "workspace-dir", str(chosen))
    assert said.strip() == f"workspace-dir = {chosen} (worktrees created from now on)"
    assert user.ok("worktree", "create", repo, "here", "--setup", "skip").startswith(
        f"created {chosen / 'project' / 'here'} on here"
    )
    user.ok("settings", "set", "nest-workspaces", "false")
    assert user.ok("worktree", "create", repo, "flat", "--setup", "skip").startswith(
        f"created {chosen / 'flat'} on flat"
    )
    bad = user.run("settings", "set", "nest-workspaces", "maybe")
    assert bad.returncode == 2
    assert bad.stderr.strip() == "orca: nest-workspaces takes true or false, not 'maybe'"
