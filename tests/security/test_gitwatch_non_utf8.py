"""Issue 16 item 8 (gitwatch): a worktree at a non-UTF-8 path crash-looped gitwatch.

``git worktree add "$(printf '../wt-\\xfe')"`` put a path with an undecodable byte in
git's admin files; publishing it raised ``UnicodeEncodeError`` out of gitwatch's loop,
every restart did the same and the supervisor marked gitwatch ``failed``. Now such a
worktree is withheld (it cannot have an id) and reported, the other rows are served,
and branch names and lock reasons carrying such bytes are shown escaped.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support.journey import User, make_git_repo

from orca.client.sync import invoke
from orca.contracts import gitwatch
from orca.contracts import supervisor as sup
from orca.contracts import sys as sys_contract


def _git(repo: Path, *args: bytes) -> None:
    ident = [b"-c", b"user.email=t@example.com", b"-c", b"user.name=t"]
    subprocess.run([b"git", *ident, *args], cwd=repo, check=True, capture_output=True)


@pytest.mark.timeout(120)
def test_non_utf8_worktree_path_is_reported_and_gitwatch_keeps_running(
    orca_home: Path, tmp_path: Path
) -> None:
    """A non-UTF-8 worktree is listed as unrepresentable; gitwatch is never restarted."""
    user = User(orca_home, tmp_path / "user")
    repo = make_git_repo(tmp_path / "proj")
    _git(repo, b"worktree", b"add", b"-q", b"../wt-\xfe")
    # A readable path, but its branch name and lock reason are not UTF-8 either.
    _git(repo, b"worktree", b"add", b"-q", b"-b", b"b-\xfe", b"../wt-ok")
    _git(repo, b"worktree", b"lock", b"--reason", b"held \xff", b"../wt-ok")
    user.ok("up")
    try:
        user.ok("repo", "add", str(repo))
        rows = user.json("worktree", "ls", "--all")["worktrees"]
        by_path = {row["path"]: row for row in rows}
        assert set(by_path) == {str(repo), str(tmp_path / "wt-ok")}
        ok = by_path[str(tmp_path / "wt-ok")]
        assert ok["branch"] == "refs/heads/b-\\xfe"
        assert ok["lockReason"] == "held \\xff"

        listing = invoke(gitwatch.WORKTREE_LIST, gitwatch.ListArgs(), paths=user.paths)
        assert [(w.path, w.reason) for w in listing.unrepresentable] == [
            (str(tmp_path) + "/wt-\\xfe", "path is not valid UTF-8")
        ]
        stats = invoke(sys_contract.STATS, endpoint=user.paths.ipc_endpoint("gitwatch", "rpc"))
        assert stats["gitwatch"]["unrepresentable"] == 1

        status = invoke(sup.STATUS, paths=user.paths)
        watcher = next(a for a in status.actors if a.name == "gitwatch")
        assert (watcher.state, watcher.restarts) == ("running", 0)
    finally:
        user.ok("down", "--kill-terminals")
