"""Reading worktree facts and dirty counts from real repositories."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from actors.gitwatch.clifacts import count_porcelain_status
from actors.gitwatch.errors import RepoUnavailable
from actors.gitwatch.gitfacts import (
    common_dir,
    folder_facts,
    read_dirty_counts,
    scan_worktrees,
    scan_worktrees_async,
)
from actors.gitwatch.porcelain import parse_worktree_list_z
from actors.gitwatch.records import DirtyCounts

GitRunner = Callable[..., str]


def _porcelain(repo: Path) -> list[tuple[object, ...]]:
    out = subprocess.run(
        ["git", "worktree", "list", "--porcelain", "-z"], cwd=repo, check=True, capture_output=True
    ).stdout
    return [
        (w.path, w.head, w.branch, w.is_bare, w.is_detached, w.is_locked, w.lock_reason,
         w.is_prunable, w.prune_reason)
        for w in parse_worktree_list_z(out)
    ]  # fmt: skip


def _scanned(repo: Path) -> list[tuple[object, ...]]:
    return [
        (w.path, w.head, w.branch, w.is_bare, w.is_detached, w.is_locked, w.lock_reason,
         w.is_prunable, w.prune_reason)
        for w in scan_worktrees(str(repo))
    ]  # fmt: skip


def test_scan_agrees_with_git_cli_on_every_state(
    repo: Path, git: GitRunner, tmp_path: Path
) -> None:
    """The in-process scan reports what `git worktree list --porcelain` does (seed 01 §5.2)."""
    git(repo, "worktree", "add", "-q", str(tmp_path / "a"), "-b", "a")
    git(repo, "worktree", "add", "-q", "--detach", str(tmp_path / "b"))
    git(repo, "worktree", "add", "-q", str(tmp_path / "c"), "-b", "c")
    git(repo, "worktree", "lock", "--reason", "on a\nusb disk", str(tmp_path / "c"))
    git(repo, "worktree", "add", "-q", str(tmp_path / "d"), "-b", "d")
    git(repo, "worktree", "lock", str(tmp_path / "d"))
    git(repo, "worktree", "add", "-q", str(tmp_path / "e"), "-b", "e")
    shutil.rmtree(tmp_path / "e")
    git(repo, "worktree", "add", "-q", str(tmp_path / "f"), "-b", "f")
    git(tmp_path / "f", "commit", "-q", "--allow-empty", "-m", "moves f only")

    assert sorted(_scanned(repo), key=str) == sorted(_porcelain(repo), key=str)


def test_unborn_and_bare_repositories_agree_with_git_cli(tmp_path: Path, git: GitRunner) -> None:
    """A fresh repo (unborn branch) and a bare one read the same as the CLI listing."""
    git(tmp_path, "init", "-q", "-b", "trunk", "fresh")
    git(tmp_path, "init", "-q", "--bare", "b.git")
    assert _scanned(tmp_path / "fresh") == _porcelain(tmp_path / "fresh")
    assert _scanned(tmp_path / "b.git") == _porcelain(tmp_path / "b.git")


def test_main_worktree_comes_first_and_is_flagged(
    repo: Path, git: GitRunner, tmp_path: Path
) -> None:
    """The main worktree is listed first with is_main; linked ones are not main."""
    git(repo, "worktree", "add", "-q", str(tmp_path / "x"), "-b", "x")
    main, linked = scan_worktrees(str(repo))
    assert main.is_main and main.path == str(repo)
    assert not linked.is_main and linked.admin_dir.endswith("/worktrees/x")


def test_vanished_repository_is_unavailable(repo: Path) -> None:
    """A repo whose directory was deleted raises RepoUnavailable, not an OS error."""
    shutil.rmtree(repo)
    with pytest.raises(RepoUnavailable):
        scan_worktrees(str(repo))


def test_plain_directory_is_not_a_repository(tmp_path: Path) -> None:
    """A directory without .git is reported unavailable as a git repo."""
    with pytest.raises(RepoUnavailable):
        scan_worktrees(str(tmp_path))


def test_folder_repo_projects_to_one_row_without_git_facts(tmp_path: Path) -> None:
    """A folder repo is one main row with empty head/branch (seed 01 §5.2)."""
    row = folder_facts(str(tmp_path))
    assert (row.path, row.head, row.branch, row.is_main, row.is_bare) == (
        str(tmp_path), None, None, True, False,
    )  # fmt: skip
    shutil.rmtree(tmp_path)
    with pytest.raises(RepoUnavailable):
        folder_facts(str(tmp_path))


def test_dirty_counts_by_kind(repo: Path, git: GitRunner) -> None:
    """Staged, unstaged and untracked paths are counted separately; ignored files never."""
    assert read_dirty_counts(str(repo)) == DirtyCounts()
    (repo / "README").write_text("changed\n")
    (repo / "new.txt").write_text("x")
    (repo / "staged.txt").write_text("s")
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "noise.log").write_text("ignored")
    git(repo, "add", "staged.txt")
    counts = read_dirty_counts(str(repo))
    assert counts == DirtyCounts(staged=1, unstaged=1, untracked=2, conflicted=0)
    assert counts.total == 4


def test_dirty_counts_of_a_linked_worktree_are_its_own(
    repo: Path, git: GitRunner, tmp_path: Path
) -> None:
    """An edit in a linked worktree counts there and not in the main worktree."""
    git(repo, "worktree", "add", "-q", str(tmp_path / "w"), "-b", "w")
    (tmp_path / "w" / "README").write_text("edited\n")
    assert read_dirty_counts(str(tmp_path / "w")).unstaged == 1
    assert read_dirty_counts(str(repo)).total == 0


async def test_async_scan_runs_off_the_event_loop(repo: Path) -> None:
    """The async twin returns the same facts (it runs in a worker thread)."""
    import trio

    with trio.fail_after(10):
        assert await scan_worktrees_async(str(repo)) == scan_worktrees(str(repo))


def test_repo_libgit2_cannot_open_falls_back_to_git_cli(tmp_path: Path, git: GitRunner) -> None:
    """A SHA-256 repository (libgit2 refuses it) is still listed, with admin dirs and status."""
    repo = tmp_path / "sha"
    git(tmp_path, "init", "-q", "--object-format=sha256", "-b", "main", "sha")
    (repo / "a.txt").write_text("a")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "one")
    git(repo, "worktree", "add", "-q", str(tmp_path / "w"), "-b", "w")
    main, linked = scan_worktrees(str(repo))
    assert _scanned(repo) == _porcelain(repo)
    assert main.is_main and len(main.head or "") == 64
    assert linked.admin_dir == str(repo / ".git" / "worktrees" / "w")
    assert common_dir(str(tmp_path / "w")) == str(repo / ".git")
    (tmp_path / "w" / "a.txt").write_text("changed")
    (tmp_path / "w" / "b.txt").write_text("new")
    assert read_dirty_counts(str(tmp_path / "w")) == DirtyCounts(unstaged=1, untracked=1)


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (b"", (0, 0, 0, 0)),
        (b" M a\0?? b\0A  c\0MM d\0", (2, 2, 1, 0)),
        (b"R  new\0old\0UU both\0 D gone\0", (1, 1, 0, 1)),
    ],
)
def test_porcelain_status_counts(output: bytes, expected: tuple[int, int, int, int]) -> None:
    """`git status --porcelain -z` entries count by kind; a rename's source is not an entry."""
    assert count_porcelain_status(output) == expected


def test_corrupt_repository_is_unavailable_not_an_exception(repo: Path) -> None:
    """A HEAD that neither libgit2 nor git can read reports RepoUnavailable."""
    (repo / ".git" / "HEAD").write_text("garbage\n")
    with pytest.raises(RepoUnavailable):
        scan_worktrees(str(repo))
