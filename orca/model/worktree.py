"""Worktree records: git facts, Orca's sticky notes, and their merge (seed 01 §4, §5).

The split mirrors "file system + sticky notes": :class:`GitWorktreeInfo` holds
hard facts asked of git on every refresh (path, HEAD, branch) and is never
persisted; :class:`WorktreeMeta` holds what only Orca knows (display name,
pins, links, creation evidence) and is persisted in ``worktreeMeta`` keyed by
worktree id. :class:`Worktree` is the merged, app-level view; a
:class:`DetectedWorktree` adds who created it (ownership) and visibility.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from orca.model.codec import Record

__all__ = [
    "DetectedWorktree",
    "GitPushTarget",
    "GitWorktreeInfo",
    "LineageOrigin",
    "WorkspaceLineage",
    "Worktree",
    "WorktreeLineage",
    "WorktreeLineageCapture",
    "WorktreeMeta",
    "WorktreeOwnership",
]

WorktreeOwnership = Literal["orca-managed", "external", "unknown-legacy", "agent-scratch"]


class GitWorktreeInfo(Record, frozen=True, kw_only=True):
    """One entry of ``git worktree list`` (hard facts; never persisted)."""

    path: str
    head: str = ""
    branch: str = ""  # full ref such as ``refs/heads/main``; "" when detached
    is_bare: bool = False
    is_sparse: bool | None = None
    locked: bool | None = None
    lock_reason: str | None = None
    prunable: bool | None = None
    prunable_reason: str | None = None
    is_main_worktree: bool = False


class GitPushTarget(Record, frozen=True, kw_only=True):
    """Remote and branch Orca publishes review commits to (strong Orca-created evidence)."""

    remote_name: str
    branch_name: str
    remote_url: str | None = None
    remote_created: bool | None = None


class WorktreeMeta(Record, frozen=True, kw_only=True):
    """Orca's persisted notes about one worktree (no git facts: no head/branch/path)."""

    # Immutable per instance: rejects stale lineage after a path is reused (§4.4).
    instance_id: str | None = None
    project_id: str | None = None
    host_id: str | None = None
    display_name: str = ""
    display_name_is_pinned: bool | None = None
    comment: str = ""
    linked_issue: int | None = None
    linked_pr: int | None = msgspec.field(default=None, name="linkedPR")
    linked_linear_issue: str | None = None
    is_archived: bool = False
    is_unread: bool = False
    is_pinned: bool = False
    sort_order: int = 0
    manual_order: float | None = None
    last_activity_at: int = 0
    created_at: int | None = None
    # --- Orca-creation evidence: only Orca writes these (ownership.py) ---
    created_with_agent: str | None = None
    sparse_directories: tuple[str, ...] | None = None
    sparse_base_ref: str | None = None
    sparse_preset_id: str | None = None
    base_ref: str | None = None
    push_target: GitPushTarget | None = None
    orca_created_at: int | None = None
    orca_creation_source: str | None = None
    orca_creation_workspace_layout: str | None = None
    # ---
    pending_first_agent_message_rename: bool | None = None
    first_agent_message_rename_error: str | None = None
    workspace_status: str | None = None
    # Ids this worktree had before its folder was renamed (the id embeds the path).
    # The PTY session GC treats sessions minted under these ids as still owned (§4.3).
    prior_worktree_ids: tuple[str, ...] = ()


class Worktree(Record, frozen=True, kw_only=True):
    """A workspace as the app sees it: notes merged over git facts (§5.2).

    ``id`` is ``<repoId>::<path>`` for git worktrees, ``<repoId>::<path>::workspace:<id>``
    for folder-repo sessions and ``folder:<id>`` for folder workspaces. For the folder
    projections ``head``/``branch`` are "" and ``isBare`` is False: half the fields
    are placeholders, so code reading git fields must check the shape first (§9).
    """

    id: str
    repo_id: str
    instance_id: str | None = None
    project_id: str | None = None
    host_id: str | None = None
    display_name: str = ""
    comment: str = ""
    linked_issue: int | None = None
    linked_pr: int | None = msgspec.field(default=None, name="linkedPR")
    linked_linear_issue: str | None = None
    is_archived: bool = False
    is_unread: bool = False
    is_pinned: bool = False
    sort_order: int = 0
    manual_order: float | None = None
    last_activity_at: int = 0
    created_at: int | None = None
    created_with_agent: str | None = None
    pending_first_agent_message_rename: bool | None = None
    first_agent_message_rename_error: str | None = None
    sparse_directories: tuple[str, ...] | None = None
    sparse_base_ref: str | None = None
    sparse_preset_id: str | None = None
    base_ref: str | None = None
    push_target: GitPushTarget | None = None
    prior_worktree_ids: tuple[str, ...] = ()
    workspace_status: str | None = None
    # --- git facts (GitWorktreeInfo) ---
    path: str
    head: str = ""
    branch: str = ""
    is_bare: bool = False
    is_sparse: bool | None = None
    locked: bool | None = None
    lock_reason: str | None = None
    prunable: bool | None = None
    prunable_reason: str | None = None
    is_main_worktree: bool = False


class DetectedWorktree(Worktree, frozen=True, kw_only=True):
    """A Worktree with who created it and whether the sidebar shows it (§5.3)."""

    ownership: WorktreeOwnership
    selected_checkout: bool = False
    visible: bool = True


# Enumerations read from files are typed ``str`` on records; the Literal aliases
# name the values this build knows. A value added by a newer build must not make
# orca-data.json unreadable (seed 01 §7.3: older and newer builds share the file).
LineageOrigin = Literal["orchestration", "cli", "manual"]


class WorktreeLineageCapture(Record, frozen=True, kw_only=True):
    """How a parent link was learned (e.g. ``explicit-cli-flag``) and how sure it is."""

    source: str
    confidence: str = "inferred"  # "explicit" | "inferred"


class WorktreeLineage(Record, frozen=True, kw_only=True):
    """Who spawned this worktree; ids drift with paths, instance ids do not (§4.4)."""

    worktree_id: str
    worktree_instance_id: str
    parent_worktree_id: str
    parent_worktree_instance_id: str
    origin: str = "manual"  # LineageOrigin
    capture: WorktreeLineageCapture | None = None
    orchestration_run_id: str | None = None
    task_id: str | None = None
    created_at: int = 0


class WorkspaceLineage(Record, frozen=True, kw_only=True):
    """Lineage between WorkspaceKeys (covers folder workspaces too)."""

    child_workspace_key: str
    parent_workspace_key: str
    child_instance_id: str | None = None
    parent_instance_id: str | None = None
    origin: str = "manual"  # LineageOrigin
    capture: WorktreeLineageCapture | None = None
    task_id: str | None = None
    created_at: int = 0
