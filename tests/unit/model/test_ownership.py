"""Worktree ownership classification and detection (seed 01 §5.3, §8.2)."""

from __future__ import annotations

import pytest

from orca.model.merge import merge_worktree
from orca.model.ownership import (
    classify_worktree_ownership,
    has_strong_orca_metadata,
    is_agent_scratch_path,
    to_detected_worktree,
)
from orca.model.types_repo import Repo
from orca.model.worktree import GitPushTarget, GitWorktreeInfo, WorktreeMeta

ROOT = "/home/u/orca/workspaces"
ROOTS = [ROOT]


@pytest.mark.parametrize(
    "meta",
    [
        WorktreeMeta(orca_created_at=1),
        WorktreeMeta(orca_creation_workspace_layout="nested"),
        WorktreeMeta(created_with_agent="claude"),
        WorktreeMeta(push_target=GitPushTarget(remote_name="origin", branch_name="b")),
        WorktreeMeta(sparse_preset_id="p1"),
    ],
)
def test_strong_metadata_alone_makes_a_worktree_orca_managed(meta: WorktreeMeta) -> None:
    """Any field only Orca writes proves Orca made it, wherever the path is (seed 01 §5.3)."""
    assert has_strong_orca_metadata(meta)
    assert classify_worktree_ownership("/elsewhere/x", meta, ROOTS) == "orca-managed"


def test_path_inside_workspace_root_without_evidence_is_not_orca_managed() -> None:
    """A plain ``git worktree add`` into Orca's directory is unknown-legacy, not orca-managed (seed 01 §5.3)."""
    weak = WorktreeMeta(display_name="x", comment="c", is_pinned=True)
    assert not has_strong_orca_metadata(weak)
    assert classify_worktree_ownership(f"{ROOT}/repo/x", weak, ROOTS) == "unknown-legacy"
    assert classify_worktree_ownership(f"{ROOT}/repo/x", None, ROOTS) == "unknown-legacy"


def test_agent_scratch_trees_are_recognised_by_path() -> None:
    """``.claude/worktrees/<name>`` is an agent's scratch tree (seed 01 §5.3)."""
    path = "/src/repo/.claude/worktrees/agent-123"
    assert is_agent_scratch_path(path)
    assert classify_worktree_ownership(path, None, ROOTS) == "agent-scratch"
    assert not is_agent_scratch_path("/src/repo/.claude/worktrees")
    assert not is_agent_scratch_path("/src/repo/claude/worktrees/x")


def test_worktrees_outside_every_root_are_external() -> None:
    """Outside Orca's workspace roots and without evidence means user-made (seed 01 §5.3)."""
    assert classify_worktree_ownership("/src/repo-hotfix", None, ROOTS) == "external"
    assert classify_worktree_ownership(f"{ROOT}-other/x", None, ROOTS) == "external"
    assert classify_worktree_ownership(f"{ROOT}/x", None, []) == "external"


def _repo(**kw: object) -> Repo:
    return Repo(id="r1", path="/src/repo", display_name="repo", **kw)  # type: ignore[arg-type]


def _detect(path: str, meta: WorktreeMeta | None, repo: Repo, main: bool = False):  # type: ignore[no-untyped-def]
    git = GitWorktreeInfo(path=path, head="abc", branch="refs/heads/x", is_main_worktree=main)
    return to_detected_worktree(merge_worktree(repo.id, git, meta), meta, repo, ROOTS)


def test_detected_worktree_keeps_worktree_fields_and_adds_ownership() -> None:
    """DetectedWorktree = Worktree + ownership, selectedCheckout, visible (seed 01 §5.3)."""
    detected = _detect(f"{ROOT}/repo/x", WorktreeMeta(orca_created_at=5, display_name="X"), _repo())
    assert (detected.id, detected.display_name, detected.head) == (f"r1::{ROOT}/repo/x", "X", "abc")
    assert (detected.ownership, detected.selected_checkout, detected.visible) == ("orca-managed", False, True)


def test_main_checkout_is_selected_and_always_visible() -> None:
    """The repo's own checkout is the selected checkout and is never hidden."""
    detected = _detect("/src/repo", None, _repo(external_worktree_visibility="hide"), main=True)
    assert detected.selected_checkout and detected.visible


def test_external_and_agent_visibility_follow_repo_preferences() -> None:
    """External trees show per the repo's choice (legacy repos default to show); agent scratch is opt-in."""
    assert not _detect("/src/hotfix", None, _repo(external_worktree_visibility="hide")).visible
    assert _detect("/src/hotfix", None, _repo(external_worktree_visibility="show")).visible
    assert _detect("/src/hotfix", None, _repo(external_worktree_visibility_legacy=True)).visible
    assert not _detect("/src/hotfix", None, _repo()).visible
    imported = _repo(external_worktree_visibility="hide", imported_external_worktree_paths=("/src/hotfix",))
    assert _detect("/src/hotfix", None, imported).visible
    scratch = "/src/repo/.claude/worktrees/a"
    assert not _detect(scratch, None, _repo()).visible
    assert _detect(scratch, None, _repo(agent_worktree_visibility="show")).visible
