"""Worktree name sanitising and path computation (seed 01 §5.4, §8.7)."""

from __future__ import annotations

import os
import re
import subprocess

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from orca.model.naming import (
    MAX_WORKTREE_NAME_BYTES,
    InvalidWorktreeName,
    PathOutsideWorkspace,
    WorkspaceRootUnset,
    compute_workspace_root,
    compute_worktree_path,
    ensure_path_within_workspace,
    sanitize_worktree_name,
)
from orca.model.state import GlobalSettings
from orca.model.types_repo import Repo

from .strategies import text

ROOT = "/home/u/orca/workspaces"
# Characters git check-ref-format refuses anywhere in a ref (plus '/', which would nest).
_GIT_REFUSED = re.compile(r"[\x00-\x20\x7f~^:?*\[\\/]|@\{|\.\.")


def _repo(path: str = "/src/my-repo", **kw: object) -> Repo:
    return Repo(id="r1", path=path, display_name="My Repo", **kw)  # type: ignore[arg-type]


@given(text)
@example("../../foo")
@example("feature.lock")
@example("a..b...c")
@example("@{u}")
def test_sanitized_names_are_safe_for_git_and_the_file_system(name: str) -> None:
    """No sanitized name contains ``..``, ``/`` or a git-refused character, nor starts/ends badly (seed 01 §5.4)."""
    try:
        out = sanitize_worktree_name(name)
    except InvalidWorktreeName:
        return
    assert out
    assert _GIT_REFUSED.search(out) is None
    assert out[0] not in ".-" and out[-1] not in ".-"
    assert not out.endswith(".lock")
    assert out not in ("HEAD", "@")
    assert len(out.encode()) <= MAX_WORKTREE_NAME_BYTES


@given(text, st.booleans())
def test_computed_worktree_paths_never_escape_the_workspace_root(name: str, nested: bool) -> None:
    """Whatever the name, the computed path lies strictly under the workspace root (seed 01 §5.4)."""
    try:
        path = compute_worktree_path(_repo(), name, GlobalSettings(workspace_dir=ROOT, nest_workspaces=nested))
    except InvalidWorktreeName:
        return
    assert path.startswith(ROOT + os.sep)
    assert os.path.normpath(path) == path
    assert ".." not in path.split(os.sep)


def test_unicode_letters_and_digits_are_kept() -> None:
    """Chinese and accented names survive sanitising (seed 01 §8.7)."""
    assert sanitize_worktree_name("修复 登录 bug") == "修复-登录-bug"
    assert sanitize_worktree_name("café-2") == "café-2"


def test_dot_runs_collapse_so_git_never_sees_double_dots() -> None:
    """A slug like ``../../foo`` never reaches git with ``..`` in it (seed 01 §5.4)."""
    assert sanitize_worktree_name("../../foo") == "foo"
    assert sanitize_worktree_name("v1..2...3") == "v1.2.3"


def test_other_characters_become_single_dashes() -> None:
    """Spaces, slashes and punctuation become one '-' each run; leading/trailing ones are stripped."""
    assert sanitize_worktree_name("  Fix: the *thing* / now!  ") == "Fix-the-thing-now"


@pytest.mark.parametrize("name", ["", "   ", "../..", "!!!", "-.-"])
def test_names_with_nothing_usable_are_rejected_clearly(name: str) -> None:
    """An empty result is an error naming the input, never an empty directory name (seed 01 §5.4)."""
    with pytest.raises(InvalidWorktreeName, match="no letters or digits"):
        sanitize_worktree_name(name)


@pytest.mark.parametrize("name", ["feature.lock", "HEAD"])
def test_names_git_refuses_are_rejected(name: str) -> None:
    """Names git check-ref-format refuses as a whole are rejected, not passed on to fail in git."""
    with pytest.raises(InvalidWorktreeName):
        sanitize_worktree_name(name)


def test_long_names_are_cut_to_the_byte_budget_on_a_character_boundary() -> None:
    """A very long (multi-byte) name is truncated to MAX_WORKTREE_NAME_BYTES of valid UTF-8."""
    out = sanitize_worktree_name("界" * 300)
    assert len(out.encode()) <= MAX_WORKTREE_NAME_BYTES and set(out) == {"界"}


@pytest.mark.parametrize(
    "name", ["../../foo", "修复 登录", "a..b", "x@{y}", "name.lock-x", "-dash-", "~tilde^caret:colon?star*[br"]
)
def test_real_git_accepts_sanitized_names_as_branch_names(name: str) -> None:
    """``git check-ref-format --branch`` (real git) accepts every sanitized name (seed 01 §5.4)."""
    out = sanitize_worktree_name(name)
    result = subprocess.run(
        ["git", "check-ref-format", "--branch", out], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, (out, result.stderr)


def test_nested_layout_puts_worktrees_under_the_repo_name() -> None:
    """nestWorkspaces=true: ``<root>/<repoName>/<name>`` (seed 01 §5.4)."""
    path = compute_worktree_path(_repo(), "feat x", GlobalSettings(workspace_dir=ROOT, nest_workspaces=True))
    assert path == f"{ROOT}/my-repo/feat-x"


def test_flat_layout_puts_worktrees_directly_under_the_root() -> None:
    """nestWorkspaces=false: ``<root>/<name>`` (seed 01 §5.4)."""
    path = compute_worktree_path(_repo(), "feat x", GlobalSettings(workspace_dir=ROOT, nest_workspaces=False))
    assert path == f"{ROOT}/feat-x"


def test_repo_worktree_base_path_overrides_settings_and_resolves_relative_to_repo() -> None:
    """root = repo.worktreeBasePath (relative to the repo) before settings.workspaceDir (seed 01 §5.4)."""
    settings = GlobalSettings(workspace_dir=ROOT, nest_workspaces=False)
    assert compute_workspace_root(_repo(worktree_base_path="../trees"), settings) == "/src/trees"
    assert compute_workspace_root(_repo(worktree_base_path="/abs/trees"), settings) == "/abs/trees"
    assert compute_worktree_path(_repo(worktree_base_path="/abs"), "x", settings) == "/abs/x"


def test_missing_workspace_root_is_a_configuration_error() -> None:
    """No repo override and no workspaceDir: WorkspaceRootUnset, not a path under cwd."""
    with pytest.raises(WorkspaceRootUnset):
        compute_worktree_path(_repo(), "x", GlobalSettings(workspace_dir=""))


@pytest.mark.parametrize("path", ["../escape", "/etc/passwd", f"{ROOT}/../x", ".", ROOT, f"{ROOT}-sibling/x"])
def test_paths_outside_the_workspace_root_are_refused(path: str) -> None:
    """Traversal out of (or onto) the root raises PathOutsideWorkspace (seed 01 §5.4)."""
    with pytest.raises(PathOutsideWorkspace):
        ensure_path_within_workspace(ROOT, path)


def test_paths_inside_the_root_are_normalised() -> None:
    """Relative paths resolve from the root; redundant parts are normalised away."""
    assert ensure_path_within_workspace(ROOT, "a/./b/../c") == f"{ROOT}/a/c"
    assert ensure_path_within_workspace(ROOT, f"{ROOT}/a") == f"{ROOT}/a"


def test_relative_workspace_root_is_refused() -> None:
    """A root that is not absolute cannot anchor anything."""
    with pytest.raises(WorkspaceRootUnset):
        ensure_path_within_workspace("rel/root", "x")
