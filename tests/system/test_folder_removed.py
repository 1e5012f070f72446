"""A worktree folder removed by hand while its terminal runs is reported, not hidden
(issue 13): the program keeps running, and the listings say its folder is gone."""

from __future__ import annotations

import shutil
from pathlib import Path

from support.journey import User, make_git_repo
from support.procs import alive


def test_removing_the_folder_under_a_running_terminal_is_reported(
    orca_home: Path, tmp_path: Path
) -> None:
    user = User(orca_home, tmp_path / "user")
    project = make_git_repo(tmp_path / "src" / "project")
    user.ok("up")
    user.ok("repo", "add", str(project))
    created = user.json("worktree", "create", "project", "doomed", "--setup", "skip")["worktree"]
    user.ok("term", "new", "doomed", "--", "/bin/sh")
    (before,) = user.json("term", "ls")["sessions"]
    assert before["running"] and not before["folderMissing"]
    assert "warning" not in user.ok("term", "ls")

    shutil.rmtree(created["path"])  # as a user would, behind Orca's back

    (after,) = user.json("term", "ls")["sessions"]
    assert after["running"] and after["folderMissing"], after
    assert alive([after["pid"]]) == [after["pid"]], "the program is not ended for it"
    table = user.ok("term", "ls")
    assert "folder removed" in table
    assert f"warning: {before['handle']}: the folder was removed" in table
