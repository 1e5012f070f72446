"""Projections into the one Worktree type (seed 01 §5.2).

Three roads lead to a :class:`~orca.model.worktree.Worktree`::

    git worktree list (GitWorktreeInfo) + WorktreeMeta --merge_worktree-------> Worktree
    folder repo + session instance id   + WorktreeMeta --merge_folder_workspace-> Worktree  (route B)
    FolderWorkspace                                    --folder_workspace_to_worktree-> Worktree (route A)

The display name falls back from what the user typed to what the disk says:
``meta.displayName`` -> branch short name -> the repo's default display name ->
basename of the path. Folder projections have no git facts: ``head`` and
``branch`` are "" and ``isBare`` is False.
"""

from __future__ import annotations

import os
from typing import Any, Final

from orca.model.ids import (
    folder_workspace_key,
    make_worktree_id,
    split_worktree_id_for_filesystem,
)
from orca.model.types_repo import FolderWorkspace, Repo
from orca.model.worktree import GitWorktreeInfo, Worktree, WorktreeMeta

__all__ = [
    "FOLDER_WORKSPACE_REPO_ID_PREFIX",
    "branch_short_name",
    "folder_workspace_to_worktree",
    "merge_folder_workspace",
    "merge_worktree",
    "resolve_display_name",
]

_HEADS_PREFIX: Final = "refs/heads/"
# Synthetic repo id of a route-A projection: folder workspaces hang on a group, not a repo.
FOLDER_WORKSPACE_REPO_ID_PREFIX: Final = "folder-workspace:"

# Meta fields copied verbatim onto the Worktree (same name on both records).
_META_FIELDS: Final = (
    "instance_id",
    "project_id",
    "host_id",
    "comment",
    "linked_issue",
    "linked_pr",
    "linked_linear_issue",
    "is_archived",
    "is_unread",
    "is_pinned",
    "sort_order",
    "manual_order",
    "last_activity_at",
    "created_at",
    "created_with_agent",
    "pending_first_agent_message_rename",
    "first_agent_message_rename_error",
    "sparse_directories",
    "sparse_base_ref",
    "sparse_preset_id",
    "base_ref",
    "push_target",
    "prior_worktree_ids",
    "workspace_status",
)
_GIT_FIELDS: Final = (
    "path",
    "head",
    "branch",
    "is_bare",
    "is_sparse",
    "locked",
    "lock_reason",
    "prunable",
    "prunable_reason",
    "is_main_worktree",
)


def branch_short_name(branch: str) -> str:
    """``refs/heads/feat/x`` -> ``feat/x``; other refs unchanged; "" for detached."""
    return branch[len(_HEADS_PREFIX) :] if branch.startswith(_HEADS_PREFIX) else branch


def _basename(path: str) -> str:
    return os.path.basename(path.rstrip("/\\")) or path


def resolve_display_name(
    meta_display_name: str | None,
    branch: str,
    default_display_name: str | None,
    path: str,
) -> str:
    """The first non-empty of: meta name, branch short name, repo default, path basename."""
    return meta_display_name or branch_short_name(branch) or default_display_name or _basename(path)


def _meta_values(meta: WorktreeMeta | None) -> dict[str, Any]:
    if meta is None:
        return {}
    return {f: getattr(meta, f) for f in _META_FIELDS}


def merge_worktree(
    repo_id: str,
    git: GitWorktreeInfo,
    meta: WorktreeMeta | None,
    default_display_name: str | None = None,
) -> Worktree:
    """Hard facts from git plus Orca's notes; id = ``<repoId>::<git.path>``."""
    return Worktree(
        id=make_worktree_id(repo_id, git.path),
        repo_id=repo_id,
        display_name=resolve_display_name(
            meta.display_name if meta else None, git.branch, default_display_name, git.path
        ),
        **_meta_values(meta),
        **{f: getattr(git, f) for f in _GIT_FIELDS},
    )


def merge_folder_workspace(repo: Repo, worktree_id: str, meta: WorktreeMeta | None) -> Worktree:
    """Route B: a session instance of a folder repo; ``path`` is the real (shared) folder."""
    parts = split_worktree_id_for_filesystem(worktree_id)
    path = parts.path if parts is not None else repo.path
    return Worktree(
        id=worktree_id,
        repo_id=repo.id,
        display_name=resolve_display_name(
            meta.display_name if meta else None, "", repo.display_name, path
        ),
        **_meta_values(meta),
        path=path,
        is_main_worktree=False,
    )


def folder_workspace_to_worktree(folder: FolderWorkspace) -> Worktree:
    """Route A: project a FolderWorkspace; id = ``folder:<id>``, repo id = ``folder-workspace:<groupId>``."""
    task = folder.linked_task
    linked_issue = (
        task.number
        if task is not None and task.provider == "github" and task.type == "issue"
        else None
    )
    linked_linear = (
        task.linear_identifier if task is not None and task.provider == "linear" else None
    )
    return Worktree(
        id=folder_workspace_key(folder.id),
        repo_id=FOLDER_WORKSPACE_REPO_ID_PREFIX + folder.project_group_id,
        display_name=folder.name or _basename(folder.folder_path),
        comment=folder.comment,
        linked_issue=linked_issue,
        linked_linear_issue=linked_linear,
        is_archived=folder.is_archived,
        is_unread=folder.is_unread,
        is_pinned=folder.is_pinned,
        sort_order=folder.sort_order,
        manual_order=folder.manual_order,
        last_activity_at=folder.last_activity_at,
        created_at=folder.created_at,
        created_with_agent=folder.created_with_agent,
        pending_first_agent_message_rename=folder.pending_first_agent_message_rename,
        first_agent_message_rename_error=folder.first_agent_message_rename_error,
        workspace_status=folder.workspace_status,
        path=folder.folder_path,
        is_sparse=False,
        is_main_worktree=False,
    )
