"""Parsing ``git worktree list --porcelain -z``."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.gitwatch.errors import GitOutputMalformed
from actors.gitwatch.porcelain import (
    PorcelainWorktree,
    format_worktree_list_z,
    parse_worktree_list_z,
)

GitRunner = Callable[..., str]

_hex = st.text("0123456789abcdef", min_size=40, max_size=40).filter(lambda h: h != "0" * 40)
# Paths and reasons may hold anything but NUL (the field terminator) — newlines included.
_no_nul = st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)))
_path = _no_nul.filter(bool).map(lambda s: "/" + s)
_branch = _path.map("refs/heads".__add__)
_reason = st.one_of(st.none(), _no_nul.filter(bool))


@st.composite
def _worktrees(draw: st.DrawFn) -> PorcelainWorktree:
    bare = draw(st.booleans())
    detached = not bare and draw(st.booleans())
    locked = draw(st.booleans())
    prunable = draw(st.booleans())
    return PorcelainWorktree(
        path=draw(_path),
        head=None if bare else draw(st.one_of(st.none(), _hex)),
        branch=None if bare or detached else draw(st.one_of(st.none(), _branch)),
        is_bare=bare,
        is_detached=detached,
        is_locked=locked,
        lock_reason=draw(_reason) if locked else None,
        is_prunable=prunable,
        prune_reason=draw(_reason) if prunable else None,
    )


@given(st.lists(_worktrees(), max_size=6))
def test_parse_inverts_git_format(worktrees: list[PorcelainWorktree]) -> None:
    """Any listing git can print parses back to the same records (newlines in reasons included)."""
    assert parse_worktree_list_z(format_worktree_list_z(worktrees)) == worktrees


@given(st.binary(max_size=200))
def test_parser_never_crashes_on_garbage(data: bytes) -> None:
    """Arbitrary bytes either parse or raise GitOutputMalformed, nothing else."""
    try:
        parse_worktree_list_z(data)
    except GitOutputMalformed:
        pass


def test_unknown_labels_are_skipped() -> None:
    """A field added by a newer git does not blank out the record."""
    out = b"worktree /a\0HEAD " + b"1" * 40 + b"\0sparse cone\0branch refs/heads/x\0\0"
    [wt] = parse_worktree_list_z(out)
    assert (wt.path, wt.branch) == ("/a", "refs/heads/x")


def test_record_not_starting_with_worktree_is_malformed() -> None:
    """A record whose first field is not ``worktree`` is git's fault, reported as such."""
    with pytest.raises(GitOutputMalformed):
        parse_worktree_list_z(b"HEAD " + b"1" * 40 + b"\0\0")


def test_real_git_output_with_every_state(repo: Path, git: GitRunner, tmp_path: Path) -> None:
    """Main, branch, detached, locked (newline in reason) and prunable worktrees parse from git."""
    git(repo, "worktree", "add", "-q", str(tmp_path / "w1"), "-b", "b1")
    git(repo, "worktree", "add", "-q", "--detach", str(tmp_path / "w2"))
    git(repo, "worktree", "add", "-q", str(tmp_path / "w3"), "-b", "b3")
    git(repo, "worktree", "lock", "--reason", "on a\nusb disk", str(tmp_path / "w3"))
    git(repo, "worktree", "add", "-q", str(tmp_path / "w4"), "-b", "b4")
    shutil.rmtree(tmp_path / "w4")
    out = subprocess.run(
        ["git", "worktree", "list", "--porcelain", "-z"], cwd=repo, check=True, capture_output=True
    ).stdout
    head = git(repo, "rev-parse", "HEAD").strip()

    main, w1, w2, w3, w4 = parse_worktree_list_z(out)

    assert (main.path, main.branch, main.head) == (str(repo), "refs/heads/main", head)
    assert (w1.branch, w1.is_detached) == ("refs/heads/b1", False)
    assert (w2.branch, w2.is_detached, w2.head) == (None, True, head)
    assert (w3.is_locked, w3.lock_reason) == (True, "on a\nusb disk")
    assert w4.is_prunable and w4.prune_reason and "non-existent" in w4.prune_reason
    assert not any(wt.is_bare for wt in (main, w1, w2, w3, w4))


def test_unborn_branch_has_no_head(tmp_path: Path, git: GitRunner) -> None:
    """A fresh repository's all-zero HEAD is reported as no commit, still on its branch."""
    git(tmp_path, "init", "-q", "-b", "trunk", "fresh")
    out = subprocess.run(
        ["git", "worktree", "list", "--porcelain", "-z"],
        cwd=tmp_path / "fresh",
        check=True,
        capture_output=True,
    ).stdout
    [wt] = parse_worktree_list_z(out)
    assert (wt.head, wt.branch) == (None, "refs/heads/trunk")


def test_bare_repository_is_flagged(tmp_path: Path, git: GitRunner) -> None:
    """A bare repository lists its main entry as bare, with no HEAD or branch."""
    git(tmp_path, "init", "-q", "--bare", "b.git")
    out = subprocess.run(
        ["git", "worktree", "list", "--porcelain", "-z"],
        cwd=tmp_path / "b.git",
        check=True,
        capture_output=True,
    ).stdout
    [wt] = parse_worktree_list_z(out)
    assert wt.is_bare and wt.head is None and wt.branch is None
