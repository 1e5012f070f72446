"""The ``store`` actor's wire contract: every op and event, with fields and errors.

``store`` is the sole writer of ``orca-data.json`` (PersistedState). Field names are
camelCase as in the file. Records (repos, metas, sessions...) travel as maps and are
decoded with ``orca.model.codec`` so fields this build does not know survive. Errors:
``bad_request`` (malformed args or record, invalid id/host/path), ``not_found`` (no
such entity), ``conflict`` (contradicts current state, e.g. duplicate repo path,
group still in use), ``unavailable`` (the store is stopping), ``internal`` (a bug).
Mutations that change nothing reply normally and publish nothing. ``durable`` is false
when the save before the reply failed (disk full, I/O error): the change is applied in
memory, reported (``store.saveFailed``) and retried.

Ops (args → result)
-------------------
repo.add            {path, displayName?, kind?: "git"|"folder", fields?} → Repo (fresh UUID id)
                    conflict: path already added on that host; bad_request: relative path
repo.update         {id, patch} → Repo                 not_found; bad_request: id change
repo.remove         {id} → {id, removedWorktreeMeta}   also drops its worktrees' meta/lineage
repo.list           {} → {repos: [Repo]}
project.upsert      {project} → Project                (no id → a fresh UUID)
project.remove      {id} → {id}
projectGroup.upsert {projectGroup} → ProjectGroup      conflict: unknown parent
projectGroup.remove {id} → {id}                        conflict: has child groups/folders
folderWorkspace.upsert {folderWorkspace} → FolderWorkspace   conflict: unknown group
folderWorkspace.remove {id} → {id}
worktreeMeta.get    {worktreeId?} → {worktreeMeta: {id: Meta}} or Meta (not_found)
worktreeMeta.set    {worktreeId, meta} → Meta
worktreeMeta.patch  {worktreeId, patch} → Meta         (creates from defaults)
worktreeMeta.remove {worktreeId} → {removed: [id]}     not_found
worktreeMeta.gc     {} → {removed: [id]}               seed 01 §7.5 ② (also runs at start)
lineage.set         {worktreeId, lineage|null} → WorktreeLineage|null
workspaceLineage.set {childWorkspaceKey, lineage|null} → WorkspaceLineage|null
settings.get        {} → GlobalSettings;   settings.patch {patch} → GlobalSettings
ui.get              {} → PersistedUIState; ui.patch {patch} → PersistedUIState
session.get         {hostId?} → {hostId, revision, session}     hostId defaults to "local"
session.set         {hostId?, session, revision?} → {applied: full|metadata_only, changed, revision}
                    metadata_only: the writer's revision is stale; re-read with session.get
session.patch       {hostId?, patch, revision?} → same as session.set (top-level fields)
session.flush       {hostId?, session?, revision?} → {applied?, changed?, revision?, flushed}
                    applies the optional session, then saves before replying
session.retire_pane {hostId?, tabId, leafId} → {revision, durable}   bumps the host's
                    topology revision and saves before replying (seed 02 §9)
session.retired_since {hostId?, revision: int} → {hostId, revision, panes, truncated}
                    catch-up for a follower that missed session.paneRetired while down:
                    ``revision`` is the host's current topology revision; ``panes`` the
                    logged retirements newer than the given one, oldest first, each
                    {tabId, leafId, paneKey, revision, retiredAtMs (store clock)}; the log
                    keeps the last 1024 per host, so ``truncated`` is true when it no
                    longer reaches back to the given revision (some retirements unknown)
worktree.migrate_identity {oldId, newId} → {oldId, newId, durable}   saved before replying
identity.resolve    {worktreeId} → {status: current|alias|unknown, worktreeId|null}
state.snapshot      {} → {epoch, seq, revision, state}          for mirrors (Clone pattern)
sys.stats           built in, plus {store: {load, save, scheduler, revision}}

Events (type → data); every envelope carries epoch + seq
-------------------------------------------------------
repo.added {repo} · repo.updated {repo} · repo.removed {id, worktreeIds}
project.upserted {project} · project.removed {id}
projectGroup.upserted {projectGroup} · projectGroup.removed {id}
folderWorkspace.upserted {folderWorkspace} · folderWorkspace.removed {id}
worktreeMeta.changed {worktreeId, meta} · worktreeMeta.removed {worktreeIds}
lineage.changed {worktreeId, lineage} · workspaceLineage.changed {childWorkspaceKey, lineage}
settings.changed {settings} · ui.changed {ui}
session.changed {hostId, revision, fields, removed}: top-level session fields that changed
    (apply: drop ``removed`` wire names, then merge ``fields``); session.get has the whole
session.paneRetired {hostId, tabId, leafId, revision}
worktree.renamed {oldId, newId}, then worktreeMeta.removed/changed and session.changed
    for every record the migration re-keyed
store.saveFailed {errno, message, at} · store.saveRecovered {}
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec


class _Args(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Base of every op's args: camelCase on the wire, unknown fields ignored."""


class NoArgs(_Args, frozen=True, kw_only=True):
    pass


class RepoAddArgs(_Args, frozen=True, kw_only=True):
    path: str
    display_name: str | None = None
    kind: Literal["git", "folder"] | None = None
    fields: dict[str, Any] | None = None


class IdArgs(_Args, frozen=True, kw_only=True):
    id: str


class PatchByIdArgs(_Args, frozen=True, kw_only=True):
    id: str
    patch: dict[str, Any]


class ProjectArgs(_Args, frozen=True, kw_only=True):
    project: dict[str, Any]


class ProjectGroupArgs(_Args, frozen=True, kw_only=True):
    project_group: dict[str, Any]


class FolderWorkspaceArgs(_Args, frozen=True, kw_only=True):
    folder_workspace: dict[str, Any]


class WorktreeIdArgs(_Args, frozen=True, kw_only=True):
    worktree_id: str


class OptionalWorktreeIdArgs(_Args, frozen=True, kw_only=True):
    worktree_id: str | None = None


class MetaSetArgs(_Args, frozen=True, kw_only=True):
    worktree_id: str
    meta: dict[str, Any]


class MetaPatchArgs(_Args, frozen=True, kw_only=True):
    worktree_id: str
    patch: dict[str, Any]


class LineageSetArgs(_Args, frozen=True, kw_only=True):
    worktree_id: str
    lineage: dict[str, Any] | None


class WorkspaceLineageSetArgs(_Args, frozen=True, kw_only=True):
    child_workspace_key: str
    lineage: dict[str, Any] | None


class PatchArgs(_Args, frozen=True, kw_only=True):
    patch: dict[str, Any]


class SessionGetArgs(_Args, frozen=True, kw_only=True):
    host_id: str | None = None


class SessionSetArgs(_Args, frozen=True, kw_only=True):
    host_id: str | None = None
    session: dict[str, Any]
    revision: int | None = None


class SessionPatchArgs(_Args, frozen=True, kw_only=True):
    host_id: str | None = None
    patch: dict[str, Any]
    revision: int | None = None


class SessionFlushArgs(_Args, frozen=True, kw_only=True):
    host_id: str | None = None
    session: dict[str, Any] | None = None
    revision: int | None = None


class RetirePaneArgs(_Args, frozen=True, kw_only=True):
    host_id: str | None = None
    tab_id: str
    leaf_id: str


class RetiredSinceArgs(_Args, frozen=True, kw_only=True):
    host_id: str | None = None
    revision: int


class MigrateIdentityArgs(_Args, frozen=True, kw_only=True):
    old_id: str
    new_id: str
