"""What creating, removing and renaming a worktree mean, decided without git (pure).

``lifecycle.py`` (the shell) reads the facts (the repo's rows, whether a branch or a
path exists, the dirty counts), asks here what they mean, and carries the answer out
with git and the store. The way ``mergeplan.py`` serves ``merging.py``:

* create: a branch checked out in another worktree is a conflict
  (:func:`refuse_checked_out`); the branch is reused if it exists, else made at the base
  (:func:`add_args`); git's refusal is read into our errors (:func:`add_failure`); what
  Orca records as its creation evidence (:func:`creation_evidence`);
* remove: a locked worktree is refused unless forced, a dirty one unless forced
  (:func:`remove_refusal`); a prunable one (its folder gone) is pruned
  (:func:`remove_args`); the branch is deleted only when asked, ``-D`` only when forced
  (:func:`branch_to_delete`);
* rename: every part decided before git runs (:func:`plan_rename`); a locked worktree
  does not move (:func:`rename_refusal`); a failed move restores the meta it patched
  (:func:`restore_patch`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from actors.gitwatch import errors
from actors.gitwatch.records import WorktreeFacts
from orca.model import naming
from orca.model.worktree import WorktreeMeta

HEADS = "refs/heads/"


# -- create ------------------------------------------------------------------------------
def refuse_checked_out(rows: Iterable[WorktreeFacts], branch: str) -> None:
    """``BranchCheckedOutElsewhere`` if a worktree of the repo has ``branch`` (short)."""
    for row in rows:
        if row.branch == HEADS + branch:
            raise errors.BranchCheckedOutElsewhere(branch, row.path)


def add_args(
    path: str, branch: str, base: str, *, branch_exists: bool, checkout: bool = True
) -> list[str]:
    """``git worktree add``'s arguments: an existing branch checked out, else a new one
    made at ``base``; with ``checkout=False`` the files are left to the caller."""
    head = ["worktree", "add"] + ([] if checkout else ["--no-checkout"])
    if branch_exists:
        return [*head, path, branch]
    return [*head, "-b", branch, path, base]


def add_failure(stderr: str, branch: str) -> errors.GitwatchError:
    """What a failed ``git worktree add`` means, from its stderr."""
    # (git's "Preparing worktree (new branch ...)" comes first and reads as success)
    lines = stderr.strip().splitlines()
    text = "\n".join(line for line in lines if not line.startswith("Preparing worktree"))
    if "already checked out" in text or "already used by worktree" in text:
        other = text.rsplit(" at ", 1)[-1].strip(" '\"") if " at " in text else "?"
        return errors.BranchCheckedOutElsewhere(branch, other)
    if "already exists" in text:
        # Lost a race with another create (same path or branch) since our own checks.
        return errors.DestinationExists(f"git worktree add: {text}")
    if "invalid reference" in text or "not a valid" in text:
        return errors.CallerError(f"git worktree add: {text}")
    return errors.GitFailure(f"git worktree add: {text}")


def creation_evidence(
    *,
    instance_id: str,
    now_ms: int,
    source: str,
    layout: str,
    base: str,
    branch_made: bool,
    pending_first_agent_message_rename: bool,
) -> WorktreeMeta:
    """The new worktree's meta: Orca made it (ownership reads "orca-managed")."""
    return WorktreeMeta(
        instance_id=instance_id,
        created_at=now_ms,
        last_activity_at=now_ms,
        orca_created_at=now_ms,
        orca_creation_source=source,
        orca_creation_workspace_layout=layout,
        base_ref=base if branch_made else None,  # only when a branch was made
        pending_first_agent_message_rename=pending_first_agent_message_rename or None,
    )


# -- remove ------------------------------------------------------------------------------
def counts_changes(row: WorktreeFacts, *, force: bool) -> bool:
    """Whether removing ``row`` needs its dirty count first (an unforced removal of a
    worktree that is neither locked, refused anyway, nor gone)."""
    return not force and not row.is_locked and not row.is_prunable


def remove_refusal(row: WorktreeFacts, *, force: bool, changed: int) -> errors.GitwatchError | None:
    """Why ``row`` may not be removed (``changed``: its changed paths, when counted)."""
    if row.is_locked and not force:
        return errors.WorktreeLocked(
            f"{row.path} is locked ({row.lock_reason or 'no reason given'})"
        )
    if changed:
        return errors.WorktreeDirty(
            f"{row.path} has {changed} changed paths; commit them or remove with force"
        )
    return None


def remove_args(row: WorktreeFacts, *, force: bool) -> list[str]:
    """``git worktree remove`` (twice forced for a locked one), or ``prune`` when the
    directory is already gone (dropping git's record)."""
    if row.is_prunable:
        return ["worktree", "prune"]
    return [
        "worktree",
        "remove",
        *(["--force"] * ((2 if row.is_locked else 1) if force else 0)),
        row.path,
    ]


def branch_to_delete(row: WorktreeFacts, *, delete_branch: bool) -> str | None:
    """The short name of the branch a removal deletes (asked for, and a local branch)."""
    if delete_branch and row.branch and row.branch.startswith(HEADS):
        return row.branch[len(HEADS) :]
    return None


# -- rename ------------------------------------------------------------------------------
class BranchNameTaken(errors.StateConflict):
    """The branch a rename would give the worktree already exists."""


@dataclass(frozen=True, slots=True)
class RenamePlan:
    """What one rename changes: every part is decided before git runs (seed 01 §4.3)."""

    old_path: str
    new_path: str
    old_branch: str | None  # short name; None when the branch is not renamed
    new_branch: str | None
    display_name: str


def plan_rename(
    row: WorktreeFacts, new_name: str, display_name: str | None, rename_branch: bool
) -> RenamePlan:
    try:
        leaf = naming.sanitize_worktree_name(new_name)
        new_path = naming.ensure_path_within_workspace(os.path.dirname(row.path), leaf)
    except naming.InvalidWorktreeName as exc:
        raise errors.InvalidWorktreeName(str(exc)) from exc
    old_branch = row.branch[len(HEADS) :] if row.branch and row.branch.startswith(HEADS) else None
    renames_branch = rename_branch and old_branch is not None and old_branch != leaf
    return RenamePlan(
        old_path=row.path,
        new_path=new_path,
        old_branch=old_branch if renames_branch else None,
        new_branch=leaf if renames_branch else None,
        display_name=(display_name if display_name is not None else new_name).strip() or leaf,
    )


def rename_refusal(row: WorktreeFacts, plan: RenamePlan) -> errors.GitwatchError | None:
    """Why ``row`` may not be renamed as planned: a locked worktree does not move."""
    if row.is_locked and plan.new_path != plan.old_path:
        return errors.WorktreeLocked(f"{plan.old_path} is locked; unlock it before moving")
    return None


def restore_patch(old_meta: WorktreeMeta | None, meta_patch: Mapping[str, Any]) -> dict[str, Any]:
    """The meta patch that undoes a rename's (``meta_patch`` and the display name)."""
    restore = {k: getattr(old_meta, _snake(k), None) for k in meta_patch}
    restore["displayName"] = old_meta.display_name if old_meta else None
    return restore


def _snake(camel: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in camel)
