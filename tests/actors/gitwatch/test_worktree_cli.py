"""`orca worktree ls|create|rm|mv` against real store + gitwatch processes."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
from support.gitwatch_harness import Actors, running_actors

from orca.cli.main import main
from orca.contracts import gitwatch as gw
from orca.contracts import store
from orca.model.types_repo import Repo
from orca.views.handles import AmbiguousReference, resolve_repo, resolve_worktree

TEST_TIMEOUT_S = 60


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def _orca(*argv: str) -> int:
    """The CLI in this process, through main's error boundary (exit codes included)."""
    return main(list(argv))


async def orca(*argv: str) -> int:
    return await trio.to_thread.run_sync(lambda: _orca(*argv))


@pytest.fixture
async def actors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Actors]:
    repo = tmp_path / "proj"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "orca.yaml").write_text("setup: |\n  echo installing\n  echo done-installing\n")
    _git(repo, "add", "orca.yaml")
    _git(repo, "commit", "-q", "-m", "initial")
    monkeypatch.setenv("ORCA_HOME", str(tmp_path / "home"))
    async with running_actors(tmp_path / "home") as running:
        root = tmp_path / "workspaces"
        await running.store.invoke(
            store.SETTINGS_PATCH, store.PatchArgs(patch={"workspaceDir": str(root)})
        )
        await running.store.invoke(
            store.REPO_ADD, store.RepoAddArgs(path=str(repo), display_name="proj")
        )
        await running.events.next_of(gw.WORKTREE_ADDED)
        yield running


async def test_cli_create_ls_mv_rm_round_trip(
    actors: Actors, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """create streams setup output, ls --json lists it, mv renames, rm removes (exit 0 each)."""
    with trio.fail_after(TEST_TIMEOUT_S):
        assert await orca("worktree", "create", "proj", "cli task") == 0
        out, err = capsys.readouterr()
        path = tmp_path / "workspaces" / "proj" / "cli-task"
        assert out.startswith(f"created 'cli-task' (from 'cli task'): {path} on cli-task")
        assert "installing" in err and "done-installing" in err

        assert await orca("worktree", "ls", "--json") == 0
        rows = json.loads(capsys.readouterr().out)["worktrees"]
        assert {r["path"] for r in rows} == {str(tmp_path / "proj"), str(path)}
        made = next(r for r in rows if r["path"] == str(path))
        assert made["ownership"] == "orca-managed" and made["gitStatus"]["total"] == 0

        assert await orca("worktree", "ls") == 0
        table = capsys.readouterr().out
        assert "cli-task" in table and "orca-managed" in table and "clean" in table

        assert await orca("worktree", "mv", "cli-task", "renamed") == 0
        assert "renamed" in capsys.readouterr().out
        assert await orca("worktree", "rm", str(path.parent / "renamed"), "--delete-branch") == 0
        capsys.readouterr()
        assert await orca("worktree", "ls", "--json") == 0
        rows = json.loads(capsys.readouterr().out)["worktrees"]
        assert [r["path"] for r in rows] == [str(tmp_path / "proj")]


async def test_cli_refusals_exit_nonzero_with_message(
    actors: Actors, capsys: pytest.CaptureFixture[str]
) -> None:
    """A refused create (branch checked out) and an unknown worktree exit non-zero with a reason."""
    with trio.fail_after(TEST_TIMEOUT_S):
        assert await orca("worktree", "create", "proj", "main", "--setup", "skip") == 2
        assert "already checked out" in capsys.readouterr().err
        assert await orca("worktree", "rm", "nope") == 2
        assert "no worktree matches" in capsys.readouterr().err


async def test_cli_reports_service_not_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With no actors running, ls exits 3 (not running) instead of hanging."""
    monkeypatch.setenv("ORCA_HOME", str(tmp_path / "empty-home"))
    with trio.fail_after(TEST_TIMEOUT_S):
        assert await orca("worktree", "ls") == 3
    assert "not running" in capsys.readouterr().err


def _row(worktree_id: str, path: str, display_name: str, branch: str) -> gw.WorktreeRow:
    repo_id = worktree_id.split("::", 1)[0]
    return gw.WorktreeRow(
        id=worktree_id,
        repo_id=repo_id,
        path=path,
        display_name=display_name,
        branch=branch,
        ownership="orca-managed",
    )


ROWS = [
    _row("r::/w/a", "/w/a", "alpha", "refs/heads/feat/a"),
    _row("r::/w/b", "/w/b", "beta", "refs/heads/b"),
    _row("s::/x/b", "/x/b", "other", ""),
]


@pytest.mark.parametrize(
    ("ref", "expected"),
    [
        ("r::/w/a", "/w/a"),
        ("/w/b", "/w/b"),
        ("alpha", "/w/a"),
        ("feat/a", "/w/a"),
        ("other", "/x/b"),
    ],
)
def test_worktree_reference_resolves_by_id_path_or_unique_name(ref: str, expected: str) -> None:
    """A worktree may be named by id, path, display name or branch, when unique."""
    assert resolve_worktree(ROWS, ref).path == expected


@pytest.mark.parametrize("ref", ["b", "missing"])
def test_ambiguous_or_unknown_worktree_reference_is_refused(ref: str) -> None:
    """A folder name shared by two worktrees, or an unknown name, is an error, not a guess."""
    with pytest.raises(AmbiguousReference):
        resolve_worktree(ROWS, ref)


def test_repo_reference_resolves_by_id_or_display_name() -> None:
    """A repo may be named by id or display name."""
    repos = [Repo(id="r1", path="/src/p", display_name="p")]
    assert resolve_repo(repos, "r1") == resolve_repo(repos, "p") == repos[0]
