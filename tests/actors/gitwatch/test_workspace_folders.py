"""Issue 15 item 4: two repos whose folders share a name no longer share a workspace folder.

Through the ``orca`` CLI (its ``main``, exit codes included) against real store and
gitwatch processes: the same worktree name created in ``work/api`` and ``oss/api``
gives two worktrees, the first repo's in ``<root>/api/``, the second's in
``<root>/api-<short repo id>/``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import trio
from support.gitwatch_harness import running_actors

from orca.cli.main import main
from orca.contracts import gitwatch as gw
from orca.contracts import store

TEST_TIMEOUT_S = 60


def _make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    for args in (("init", "-q", "-b", "main"), ("commit", "-q", "--allow-empty", "-m", "i")):
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)
    return path


async def orca(*argv: str) -> int:
    return await trio.to_thread.run_sync(lambda: main(list(argv)))


async def test_same_named_repos_get_separate_workspace_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`orca worktree create <repo> fix` in two repos both named api: two worktrees."""
    first = _make_repo(tmp_path / "work" / "api")
    later = _make_repo(tmp_path / "oss" / "api")
    root = tmp_path / "workspaces"
    monkeypatch.setenv("ORCA_HOME", str(tmp_path / "home"))
    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_actors(tmp_path / "home") as running:
            await running.store.invoke(
                store.SETTINGS_PATCH, store.PatchArgs(patch={"workspaceDir": str(root)})
            )
            ids = []
            for repo in (first, later):
                added = await running.store.invoke(
                    store.REPO_ADD, store.RepoAddArgs(path=str(repo), display_name="api")
                )
                ids.append(added.id)
                await running.events.next_of(
                    gw.WORKTREE_ADDED, lambda e, repo_id=added.id: e.repo_id == repo_id
                )
            capsys.readouterr()
            made = []
            for repo in (first, later):
                code = await orca(
                    "worktree", "create", str(repo), "fix", "--setup", "skip", "--json"
                )
                out, err = capsys.readouterr()
                assert code == 0, err
                made.append(json.loads(out)["worktree"]["path"])
            assert made == [str(root / "api" / "fix"), str(root / f"api-{ids[1][:8]}" / "fix")]
            # Each repo lists its own worktree, under its own id.
            listing = await running.gitwatch.invoke(gw.WORKTREE_LIST, gw.ListArgs())
            paths = {
                (row.repo_id, row.path) for row in listing.worktrees if not row.is_main_worktree
            }
            assert paths == {(ids[0], made[0]), (ids[1], made[1])}
