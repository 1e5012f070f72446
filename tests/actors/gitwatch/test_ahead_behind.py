"""Ahead/behind counts through the real gitwatch process: events, worktree.list, the CLI."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import trio
from support.gitwatch_harness import Actors, running_actors

from orca.cli import output
from orca.cli.main import main
from orca.contracts import gitwatch as gw
from orca.contracts import store

# Actor start-up, the store mirror's first snapshot and a dozen git commands on a loaded box.
TEST_TIMEOUT_S = 60


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


async def git(cwd: Path, *args: str) -> str:
    return await trio.to_thread.run_sync(lambda: _git(cwd, *args))


def _commit(cwd: Path, message: str) -> list[str]:
    return ["-C", str(cwd), "commit", "-q", "--allow-empty", "-m", message]


@pytest.fixture
async def actors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Actors, str, Path]]:
    """store + gitwatch, a repo with ``main`` and ``develop`` imported, the root set."""
    repo = tmp_path / "proj"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "initial")
    _git(repo, "branch", "develop")
    monkeypatch.setenv("ORCA_HOME", str(tmp_path / "home"))
    async with running_actors(tmp_path / "home") as running:
        await running.store.invoke(
            store.SETTINGS_PATCH,
            store.PatchArgs(patch={"workspaceDir": str(tmp_path / "workspaces")}),
        )
        added = await running.store.invoke(
            store.REPO_ADD, store.RepoAddArgs(path=str(repo), display_name="proj")
        )
        await running.events.next_of(gw.WORKTREE_ADDED)
        yield running, added.id, repo


def _counts(path: Path, ahead: int, behind: int, against: str) -> Callable[[Any], bool]:
    """An added/changed event of ``path`` carrying exactly these counts."""
    want = gw.AheadBehind(ahead=ahead, behind=behind, against=against)

    def match(event: Any) -> bool:
        return bool(event.git.path == str(path) and event.git.ahead_behind == want)

    return match


async def test_counts_follow_commits_base_upstream_and_detached_head(
    actors: tuple[Actors, str, Path], tmp_path: Path
) -> None:
    """An Orca worktree counts against its recorded base, then against its upstream once
    one is configured; each move (its commit, the base's, a push) is an event."""
    running, repo_id, repo = actors
    events = running.events
    with trio.fail_after(TEST_TIMEOUT_S):
        created = await running.gitwatch.invoke(
            gw.WORKTREE_CREATE,
            gw.CreateArgs(repo_id=repo_id, name="task", base="develop", setup="skip"),
        )
        wt = Path(created.path)
        # Ahead of its base: the baseRef recorded at create (develop), not main.
        await git(wt, *_commit(wt, "task work"))
        await events.next_of(gw.WORKTREE_CHANGED, _counts(wt, 1, 0, "develop"))
        # The base moves ahead: the worktree is behind it, its own HEAD unchanged.
        await git(repo, *_commit(repo, "on main"))
        await git(repo, "branch", "-f", "develop", "main")
        await events.next_of(gw.WORKTREE_CHANGED, _counts(wt, 1, 1, "develop"))

        # An upstream configured by `push -u` (config + refs/remotes, no commit here).
        origin = tmp_path / "origin.git"
        await git(tmp_path, "init", "-q", "--bare", str(origin))
        await git(repo, "remote", "add", "origin", str(origin))
        await git(wt, "push", "-q", "-u", "origin", "task")
        await events.next_of(gw.WORKTREE_CHANGED, _counts(wt, 0, 0, "origin/task"))
        await git(wt, *_commit(wt, "not pushed yet"))
        await events.next_of(gw.WORKTREE_CHANGED, _counts(wt, 1, 0, "origin/task"))
        await git(wt, "push", "-q")  # moves only refs/remotes/origin/task
        await events.next_of(gw.WORKTREE_CHANGED, _counts(wt, 0, 0, "origin/task"))

        # A detached HEAD made by hand: no upstream, no recorded base → the default branch.
        detached = tmp_path / "detached"
        await git(repo, "worktree", "add", "-q", "--detach", str(detached), "main~1")
        await events.next_of(gw.WORKTREE_ADDED, _counts(detached, 0, 1, "main"))

        rows = {
            r.path: r
            for r in (await running.gitwatch.invoke(gw.WORKTREE_LIST, gw.ListArgs())).worktrees
        }
        assert rows[str(wt)].ahead_behind == gw.AheadBehind(
            ahead=0, behind=0, against="origin/task"
        )
        assert rows[str(detached)].ahead_behind == gw.AheadBehind(ahead=0, behind=1, against="main")
        # main is the default branch and has no upstream: nothing to compare with.
        assert rows[str(repo)].ahead_behind is None
        snapshot = await running.gitwatch.invoke(gw.SNAPSHOT, gw.NoArgs())
        git_of_wt = snapshot.repos[repo_id].worktrees[str(wt)].git
        assert git_of_wt.ahead_behind == rows[str(wt)].ahead_behind


def _orca(*argv: str) -> int:
    return main(list(argv))


async def test_worktree_ls_shows_counts_in_80_columns_and_json(
    actors: tuple[Actors, str, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`orca worktree ls --json` carries aheadBehind (null without a comparison ref); the
    table has an AHEAD/BEHIND column, the handle first, every line within 80 columns."""
    running, repo_id, repo = actors
    with trio.fail_after(TEST_TIMEOUT_S):
        created = await running.gitwatch.invoke(
            gw.WORKTREE_CREATE,
            gw.CreateArgs(repo_id=repo_id, name="a long task name for the table", setup="skip"),
        )
        wt = Path(created.path)
        for i in range(3):
            await git(wt, *_commit(wt, f"work {i}"))
        await git(repo, *_commit(repo, "main moves"))
        await running.events.next_of(gw.WORKTREE_CHANGED, _counts(wt, 3, 1, "main"))

        assert await trio.to_thread.run_sync(_orca, "worktree", "ls", "--json") == 0
        rows = {r["path"]: r for r in json.loads(capsys.readouterr().out)["worktrees"]}
        assert rows[str(wt)]["aheadBehind"] == {"ahead": 3, "behind": 1, "against": "main"}
        assert rows[str(repo)]["aheadBehind"] is None

        monkeypatch.setattr(output, "terminal_width", lambda: 80)
        assert await trio.to_thread.run_sync(_orca, "worktree", "ls") == 0
        lines = capsys.readouterr().out.splitlines()
        # Headers are fitted like every cell (print_table): a tight line cuts this one too.
        header = lines[0].split()
        assert header[:2] == ["WORKTREE", "BRANCH"] and header[2].startswith("AHEAD/")
        assert all(len(line) <= 80 for line in lines)
        by_handle = {line.split()[0]: line.split() for line in lines[1:]}
        assert by_handle[rows[str(wt)]["handle"]][2] == "+3/-1"
        assert by_handle[rows[str(repo)]["handle"]][2] == "-"
