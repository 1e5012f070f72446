"""Repo, Project, ProjectGroup and FolderWorkspace records (seed 01 §2, §5.1).

Field names are the camelCase wire names of ``orca-data.json`` (``rename="camel"``
on :class:`~orca.model.codec.Record`); unknown fields survive in ``extra``.
Only the fields Orca's rules read are typed here; everything else a newer build
writes rides along untouched.
"""

from __future__ import annotations

from typing import Literal

from orca.model.codec import Record

__all__ = [
    "ExternalWorktreeVisibility",
    "FolderWorkspace",
    "Project",
    "ProjectGroup",
    "Repo",
    "RepoKind",
    "WorkspaceLinkedItem",
]

# Enumerations read from files are typed ``str`` on records; the Literal aliases
# name the values this build knows. A value added by a newer build must not make
# orca-data.json unreadable (seed 01 §7.3: older and newer builds share the file).
RepoKind = Literal["git", "folder"]
ExternalWorktreeVisibility = Literal["hide", "show"]


class Repo(Record, frozen=True, kw_only=True):
    """An imported local or remote checkout (or plain folder). ``id`` is a UUID that never changes."""

    id: str
    path: str
    display_name: str
    badge_color: str = ""
    added_at: int = 0
    kind: str | None = None  # RepoKind
    worktree_base_ref: str | None = None
    # Repo-scoped workspace root override; relative values resolve from ``path``.
    worktree_base_path: str | None = None
    # SSH target id for remote repos; None means local (or runtime, see executionHostId).
    connection_id: str | None = None
    # Explicit owner: runtime-host repos have connectionId None and would look local.
    execution_host_id: str | None = None
    external_worktree_visibility: str | None = None  # ExternalWorktreeVisibility
    external_worktree_visibility_legacy: bool | None = None
    imported_external_worktree_paths: tuple[str, ...] = ()
    agent_worktree_visibility: str | None = None  # ExternalWorktreeVisibility
    project_group_id: str | None = None
    project_group_order: int | None = None


class Project(Record, frozen=True, kw_only=True):
    """A durable project identity that ties checkouts on several hosts together."""

    id: str
    display_name: str
    badge_color: str = ""
    kind: str | None = None  # RepoKind
    source_repo_ids: tuple[str, ...] = ()
    created_at: int = 0
    updated_at: int = 0


class ProjectGroup(Record, frozen=True, kw_only=True):
    """A sidebar group (pure organisation); nests through ``parentGroupId``."""

    id: str
    name: str
    parent_path: str | None = None
    connection_id: str | None = None
    execution_host_id: str | None = None
    parent_group_id: str | None = None
    created_from: str = "manual"  # "manual" | "folder-scan" | "migration"
    tab_order: int = 0
    is_collapsed: bool = False
    color: str | None = None
    created_at: int = 0
    updated_at: int = 0


class WorkspaceLinkedItem(Record, frozen=True, kw_only=True):
    """An issue / PR / MR linked to a workspace."""

    provider: str
    type: str
    number: int
    title: str = ""
    url: str = ""
    linear_identifier: str | None = None


class FolderWorkspace(Record, frozen=True, kw_only=True):
    """A non-git workspace hung on a project group (route A, id shape ``folder:<uuid>``)."""

    id: str
    project_group_id: str
    name: str
    folder_path: str
    connection_id: str | None = None
    execution_host_id: str | None = None
    linked_task: WorkspaceLinkedItem | None = None
    comment: str = ""
    is_archived: bool = False
    is_unread: bool = False
    is_pinned: bool = False
    sort_order: int = 0
    manual_order: float | None = None
    workspace_status: str | None = None
    created_with_agent: str | None = None
    pending_first_agent_message_rename: bool | None = None
    first_agent_message_rename_error: str | None = None
    last_activity_at: int = 0
    created_at: int = 0
    updated_at: int = 0
