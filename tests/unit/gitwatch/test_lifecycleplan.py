"""The pure rules of worktree create, remove and rename (actors/gitwatch/lifecycleplan.py)."""

from __future__ import annotations

import dataclasses

import pytest

from actors.gitwatch import errors
from actors.gitwatch import lifecycleplan as plan
from actors.gitwatch.records import WorktreeFacts
from orca.model.worktree import WorktreeMeta

ROW = WorktreeFacts(
    path="/ws/repo/feature", head="a" * 40, branch="refs/heads/feature", is_main=False,
    admin_dir="/repo/.git/worktrees/feature",
)  # fmt: skip


def test_a_branch_checked_out_elsewhere_is_refused_by_name() -> None:
    plan.refuse_checked_out([ROW], "other")
    with pytest.raises(errors.BranchCheckedOutElsewhere) as info:
        plan.refuse_checked_out([ROW], "feature")
    assert "/ws/repo/feature" in str(info.value)


def test_add_reuses_an_existing_branch_else_makes_one_at_the_base() -> None:
    assert plan.add_args("/p", "b", "main", branch_exists=True) == ["worktree", "add", "/p", "b"]
    assert plan.add_args("/p", "b", "main", branch_exists=False) == [
        "worktree", "add", "-b", "b", "/p", "main",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("stderr", "kind"),
    [
        (
            "Preparing worktree\nfatal: 'b' is already checked out at '/x'",
            errors.BranchCheckedOutElsewhere,
        ),
        ("fatal: '/p' already exists", errors.DestinationExists),
        ("fatal: invalid reference: nope", errors.CallerError),
        ("fatal: something else", errors.GitFailure),
    ],
)
def test_git_add_failures_are_read_into_our_errors(stderr: str, kind: type[Exception]) -> None:
    failure = plan.add_failure(stderr, "b")
    assert type(failure) is kind
    assert "Preparing worktree" not in str(failure)


def test_creation_evidence_records_the_base_only_for_a_made_branch() -> None:
    def evidence(made: bool) -> WorktreeMeta:
        return plan.creation_evidence(
            instance_id="i", now_ms=5, source="rpc", layout="flat", base="main",
            branch_made=made, pending_first_agent_message_rename=False,
        )  # fmt: skip

    made = evidence(True)
    assert (made.base_ref, made.orca_created_at, made.created_at) == ("main", 5, 5)
    assert made.pending_first_agent_message_rename is None
    assert evidence(False).base_ref is None


def test_removal_refuses_locked_and_dirty_worktrees_unless_forced() -> None:
    locked = dataclasses.replace(ROW, is_locked=True, lock_reason="usb")
    assert not plan.counts_changes(locked, force=False)  # refused without counting
    assert "locked (usb)" in str(plan.remove_refusal(locked, force=False, changed=0))
    assert plan.remove_refusal(locked, force=True, changed=0) is None
    assert plan.counts_changes(ROW, force=False) and not plan.counts_changes(ROW, force=True)
    assert isinstance(plan.remove_refusal(ROW, force=False, changed=3), errors.WorktreeDirty)
    assert plan.remove_refusal(ROW, force=False, changed=0) is None
    gone = dataclasses.replace(ROW, is_prunable=True)
    assert not plan.counts_changes(gone, force=False)


def test_removal_arguments_and_the_branch_deleted() -> None:
    assert plan.remove_args(ROW, force=False) == ["worktree", "remove", ROW.path]
    assert plan.remove_args(ROW, force=True) == ["worktree", "remove", "--force", ROW.path]
    locked = dataclasses.replace(ROW, is_locked=True)
    assert plan.remove_args(locked, force=True).count("--force") == 2
    assert plan.remove_args(dataclasses.replace(ROW, is_prunable=True), force=True) == [
        "worktree", "prune",
    ]  # fmt: skip
    assert plan.branch_to_delete(ROW, delete_branch=False) is None
    assert plan.branch_to_delete(ROW, delete_branch=True) == "feature"
    assert plan.branch_to_delete(dataclasses.replace(ROW, branch=None), delete_branch=True) is None


def test_rename_plans_branch_folder_and_name_and_a_locked_one_does_not_move() -> None:
    p = plan.plan_rename(ROW, "better name", None, True)
    assert (p.new_path, p.old_branch, p.new_branch) == (
        "/ws/repo/better-name", "feature", "better-name",
    )  # fmt: skip
    assert p.display_name == "better name"
    kept = plan.plan_rename(ROW, "better name", "Shown", False)
    assert (kept.old_branch, kept.new_branch, kept.display_name) == (None, None, "Shown")
    locked = dataclasses.replace(ROW, is_locked=True)
    assert isinstance(plan.rename_refusal(locked, p), errors.WorktreeLocked)
    assert plan.rename_refusal(ROW, p) is None
    same = plan.plan_rename(ROW, "feature", None, True)
    assert plan.rename_refusal(locked, same) is None  # nothing moves
    with pytest.raises(errors.InvalidWorktreeName):
        plan.plan_rename(ROW, "...", None, True)


def test_a_failed_move_restores_the_patched_meta() -> None:
    old = WorktreeMeta(display_name="Old", comment="c")
    assert plan.restore_patch(old, {"comment": "new"}) == {"comment": "c", "displayName": "Old"}
    assert plan.restore_patch(None, {"isPinned": True}) == {"isPinned": None, "displayName": None}
