"""Pure ops on the entity tables: repos, projects, project groups, folder workspaces,
settings and UI state (seed 01 §2, §7.2).

A repo gets a fresh UUID when added by path and keeps it for life (seed 01 §4.1); its
path must be absolute and is unique per execution host. Removing a repo drops the
sticky notes and lineage of its worktrees (they have no owner left) and its id from
projects' ``sourceRepoIds``. Records arrive as builtins so fields this build does not
know survive (``orca.model.codec``).
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from actors.store.change import Change, decode_record, patch_record
from orca.contracts import store as contract
from orca.model.hosts import repo_execution_host_id
from orca.model.ids import repo_id_of_worktree_id
from orca.model.state import GlobalSettings, PersistedState, PersistedUIState
from orca.model.types_repo import FolderWorkspace, Project, ProjectGroup, Repo, RepoKind
from orca.wire.errors import BadRequest, Conflict, NotFound

replace = msgspec.structs.replace


def repo_host(repo: Repo) -> str:
    return repo_execution_host_id(repo.execution_host_id, repo.connection_id)


def find_repo(state: PersistedState, repo_id: str) -> Repo:
    for repo in state.repos:
        if repo.id == repo_id:
            return repo
    raise NotFound(f"no repo with id {repo_id!r}")


def add_repo(
    state: PersistedState,
    path: str,
    *,
    new_id: str,
    now_ms: int,
    display_name: str | None = None,
    kind: RepoKind | None = None,
    fields: dict[str, Any] | None = None,
) -> Change:
    """Import a checkout or folder by absolute path under a fresh id."""
    if not os.path.isabs(path):
        raise BadRequest(f"repo path must be absolute: {path!r}")
    path = os.path.normpath(path)
    raw: dict[str, Any] = dict(fields or {})
    raw.update({"id": new_id, "path": path, "addedAt": now_ms})
    raw["displayName"] = display_name or raw.get("displayName") or os.path.basename(path) or path
    if kind is not None:
        raw["kind"] = kind
    repo = decode_record(Repo, raw, "repo")
    host = repo_host(repo)
    for existing in state.repos:
        if existing.path == path and repo_host(existing) == host:
            raise Conflict(f"{path} is already added as repo {existing.id}")
    new_state = replace(state, repos=(*state.repos, repo))
    return Change(new_state, repo, (contract.RepoAdded(repo=repo),))


def update_repo(state: PersistedState, repo_id: str, patch: dict[str, Any]) -> Change:
    current = find_repo(state, repo_id)
    if "path" in patch and not os.path.isabs(str(patch["path"])):
        raise BadRequest(f"repo path must be absolute: {patch['path']!r}")
    updated = patch_record(current, patch, "repo")
    if updated == current:
        return Change(state, current)
    host = repo_host(updated)
    for other in state.repos:
        if other.id != repo_id and other.path == updated.path and repo_host(other) == host:
            raise Conflict(f"{updated.path} is already repo {other.id}")
    repos = tuple(updated if r.id == repo_id else r for r in state.repos)
    event = contract.RepoUpdated(repo=updated)
    return Change(replace(state, repos=repos), updated, (event,))


def remove_repo(state: PersistedState, repo_id: str) -> Change:
    find_repo(state, repo_id)
    owned = [w for w in state.worktree_meta if repo_id_of_worktree_id(w) == repo_id]
    meta = {k: v for k, v in state.worktree_meta.items() if k not in owned}
    lineage = {
        k: v
        for k, v in state.worktree_lineage_by_id.items()
        if repo_id_of_worktree_id(k) != repo_id
    }
    projects = tuple(
        p
        if repo_id not in p.source_repo_ids
        else replace(p, source_repo_ids=tuple(r for r in p.source_repo_ids if r != repo_id))
        for p in state.projects
    )
    new_state = replace(
        state,
        repos=tuple(r for r in state.repos if r.id != repo_id),
        worktree_meta=meta,
        worktree_lineage_by_id=lineage,
        projects=projects,
    )
    events: list[msgspec.Struct] = [contract.RepoRemoved(id=repo_id, worktree_ids=sorted(owned))]
    if owned:
        events.append(contract.WorktreeMetaRemoved(worktree_ids=sorted(owned)))
    result = contract.RepoRemoveResult(id=repo_id, removed_worktree_meta=len(owned))
    return Change(new_state, result, tuple(events))


def _upsert(records: tuple[Any, ...], record: Any) -> tuple[tuple[Any, ...], bool]:
    """Replace the record with the same id, or append; returns (records, changed)."""
    for i, existing in enumerate(records):
        if existing.id == record.id:
            if existing == record:
                return records, False
            return (*records[:i], record, *records[i + 1 :]), True
    return (*records, record), True


def _with_id(raw: dict[str, Any], new_id: str) -> dict[str, Any]:
    return raw if raw.get("id") else {**raw, "id": new_id}


def upsert_project(
    state: PersistedState, raw: dict[str, Any], *, new_id: str, now_ms: int
) -> Change:
    project = decode_record(Project, _with_id(raw, new_id), "project")
    if not project.created_at:
        project = replace(project, created_at=now_ms)
    projects, changed = _upsert(state.projects, project)
    if not changed:
        return Change(state, project)
    event = contract.ProjectUpserted(project=project)
    return Change(replace(state, projects=projects), project, (event,))


def remove_project(state: PersistedState, project_id: str) -> Change:
    if not any(p.id == project_id for p in state.projects):
        raise NotFound(f"no project with id {project_id!r}")
    projects = tuple(p for p in state.projects if p.id != project_id)
    event = contract.ProjectRemoved(id=project_id)
    return Change(replace(state, projects=projects), contract.Removed(id=project_id), (event,))


def _refuse_group_cycle(state: PersistedState, group: ProjectGroup) -> None:
    """Walk up from the new parent; reaching ``group`` would make it its own ancestor."""
    parents = {g.id: g.parent_group_id for g in state.project_groups}
    parents[group.id] = group.parent_group_id
    chain = [group.id]
    seen = {group.id}
    current = group.parent_group_id
    while current is not None:
        chain.append(current)
        if current == group.id:
            raise Conflict(
                f"project group {group.id!r} would be its own ancestor: {' -> '.join(chain)}"
            )
        if current in seen:
            return  # a loop above that does not pass through ``group`` (a hand-edited file)
        seen.add(current)
        current = parents.get(current)


def upsert_project_group(
    state: PersistedState, raw: dict[str, Any], *, new_id: str, now_ms: int
) -> Change:
    group = decode_record(ProjectGroup, _with_id(raw, new_id), "project group")
    if group.parent_group_id is not None:
        if group.parent_group_id == group.id:
            raise BadRequest("a project group cannot be its own parent")
        if not any(g.id == group.parent_group_id for g in state.project_groups):
            raise Conflict(f"parent group {group.parent_group_id!r} does not exist")
        _refuse_group_cycle(state, group)
    if not group.created_at:
        group = replace(group, created_at=now_ms)
    groups, changed = _upsert(state.project_groups, group)
    if not changed:
        return Change(state, group)
    event = contract.ProjectGroupUpserted(project_group=group)
    return Change(replace(state, project_groups=groups), group, (event,))


def remove_project_group(state: PersistedState, group_id: str) -> Change:
    """Remove an empty group; repos in it become ungrouped."""
    if not any(g.id == group_id for g in state.project_groups):
        raise NotFound(f"no project group with id {group_id!r}")
    if any(g.parent_group_id == group_id for g in state.project_groups):
        raise Conflict(f"project group {group_id!r} still has child groups")
    if any(f.project_group_id == group_id for f in state.folder_workspaces):
        raise Conflict(f"project group {group_id!r} still holds folder workspaces")
    repos = tuple(
        replace(r, project_group_id=None, project_group_order=None)
        if r.project_group_id == group_id
        else r
        for r in state.repos
    )
    groups = tuple(g for g in state.project_groups if g.id != group_id)
    event = contract.ProjectGroupRemoved(id=group_id)
    new_state = replace(state, project_groups=groups, repos=repos)
    return Change(new_state, contract.Removed(id=group_id), (event,))


def upsert_folder_workspace(
    state: PersistedState, raw: dict[str, Any], *, new_id: str, now_ms: int
) -> Change:
    folder = decode_record(FolderWorkspace, _with_id(raw, new_id), "folder workspace")
    if ":" in folder.id or "/" in folder.id:
        raise BadRequest(f"folder workspace id must not contain ':' or '/': {folder.id!r}")
    if not os.path.isabs(folder.folder_path):
        raise BadRequest(f"folder path must be absolute: {folder.folder_path!r}")
    if not any(g.id == folder.project_group_id for g in state.project_groups):
        raise Conflict(f"project group {folder.project_group_id!r} does not exist")
    if not folder.created_at:
        folder = replace(folder, created_at=now_ms)
    folders, changed = _upsert(state.folder_workspaces, folder)
    if not changed:
        return Change(state, folder)
    event = contract.FolderWorkspaceUpserted(folder_workspace=folder)
    return Change(replace(state, folder_workspaces=folders), folder, (event,))


def remove_folder_workspace(state: PersistedState, folder_id: str) -> Change:
    if not any(f.id == folder_id for f in state.folder_workspaces):
        raise NotFound(f"no folder workspace with id {folder_id!r}")
    folders = tuple(f for f in state.folder_workspaces if f.id != folder_id)
    event = contract.FolderWorkspaceRemoved(id=folder_id)
    new_state = replace(state, folder_workspaces=folders)
    return Change(new_state, contract.Removed(id=folder_id), (event,))


def patch_settings(state: PersistedState, patch: dict[str, Any]) -> Change:
    settings: GlobalSettings = patch_record(state.settings, patch, "settings", fixed=())
    if settings == state.settings:
        return Change(state, settings)
    event = contract.SettingsChanged(settings=settings)
    return Change(replace(state, settings=settings), settings, (event,))


def patch_ui(state: PersistedState, patch: dict[str, Any]) -> Change:
    ui: PersistedUIState = patch_record(state.ui, patch, "ui state", fixed=())
    if ui == state.ui:
        return Change(state, ui)
    return Change(replace(state, ui=ui), ui, (contract.UiChanged(ui=ui),))
