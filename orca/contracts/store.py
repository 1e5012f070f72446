"""The ``store`` actor's wire contract: every op and event, with fields and errors.

``store`` is the sole writer of ``orca-data.json`` (PersistedState). Field names are
camelCase as in the file. Records (repos, metas, sessions...) are sent as builtins
produced by ``orca.model.codec.to_builtins``, so fields this build does not know
travel as ordinary top-level keys; records *sent to* the store (``project``, ``meta``,
``session``, patches) are open maps for the same reason (the store decodes them with
``orca.model.codec.from_builtins``). In results and events records are typed as the
``orca.model`` record; decoding them with the contract keeps the known fields (a
client that must keep unknown fields reads ``state.snapshot`` with ``from_builtins``
and writes through the ``*.patch`` ops).

Errors: ``bad_request`` (malformed args or record, invalid id/host/path), ``not_found``
(no such entity), ``conflict`` (contradicts current state, e.g. duplicate repo path,
group still in use), ``unavailable`` (the store is stopping, the change could not be
written to disk, or orca-data.json has a newer ``schemaVersion`` than this build: it is
then served read-only, never rewritten, and every mutation is refused naming the
version), ``internal`` (a bug).

Durability: a mutation replies only once its change is on disk, in the fsync'd
append-only journal ``orca-data.json.journal`` (group commit: concurrent mutations share
one fsync), so ``kill -9`` at any instant loses nothing that was acknowledged; the
journal is replayed on load and compacted into ``orca-data.json`` at the debounced
cadence (1 s trailing, 5 s max). Its events are published after that write, in commit
order. If the journal cannot be written (disk full, I/O error) the mutation replies
``unavailable``: the change is applied in memory and saved by the next compaction that
works, but it is not acknowledged. Mutations that change nothing reply normally and
publish nothing. ``durable`` (pane retirement, identity migration) is false when the
compaction of the primary before the reply failed: the change is in the journal, the
failure is reported (``store.saveFailed``) and retried. Adding, changing or removing a
repo, project, group, folder workspace or worktree meta (and a stop) also writes the
backup ring at the next compaction, so a damaged primary is recovered from a backup
that holds every repo, plus the journal.

Ops (args → result)
-------------------
repo.add            {path, displayName?, kind?: "git"|"folder", fields?} → Repo (fresh UUID id)
                    conflict: path already added on that host; bad_request: relative path
repo.update         {id, patch} → Repo                 not_found; bad_request: id change
repo.remove         {id} → {id, removedWorktreeMeta}   also drops its worktrees' meta/lineage
repo.list           {} → {repos: [Repo]}
project.upsert      {project} → Project                (no id → a fresh UUID)
project.remove      {id} → {id}
projectGroup.upsert {projectGroup} → ProjectGroup      conflict: unknown parent, or the
                    parent chain would make the group its own ancestor (a cycle)
projectGroup.remove {id} → {id}                        conflict: has child groups/folders
folderWorkspace.upsert {folderWorkspace} → FolderWorkspace   conflict: unknown group
folderWorkspace.remove {id} → {id}
folderWorkspace.list {} → {folderWorkspaces: [FolderWorkspace]}   route A (seed 01 §5.1)
sshTarget.upsert    {sshTarget} → SshTarget            (no id → a fresh UUID); bad_request:
                    an id that makes no host id (``ssh:<encoded id>``)
sshTarget.remove    {id} → {id}                        not_found
sshTarget.list      {} → {sshTargets: [SshTarget]}     seed 02 §2 (``orca host add`` over ssh)
worktreeMeta.get    {worktreeId} → WorktreeMeta        not_found
worktreeMeta.list   {} → {worktreeMeta: {worktreeId: WorktreeMeta}}
worktreeMeta.set    {worktreeId, meta} → WorktreeMeta
worktreeMeta.patch  {worktreeId, patch} → WorktreeMeta (creates from defaults)
worktreeMeta.remove {worktreeId} → {removed: [id]}     not_found (nothing names the id)
                    the worktree is gone: its lineage row and every session row naming
                    it, on every host, go too (session.changed; seed 01 §3 step 3)
worktreeMeta.gc     {} → {removed: [id]}               seed 01 §7.5 ② (also runs at start)
lineage.set         {worktreeId, lineage|null} → WorktreeLineage|null
                    conflict: worktreeInstanceId is not the meta's instanceId, or
                    parentWorktreeInstanceId is not the parent meta's (a reused path,
                    seed 01 §4.4); removing a worktree's meta drops its lineage row
lineage.get         {worktreeId} → {worktreeId, lineage|null, verdict}   the row only
                    while the instance ids agree (``orca.model.lineage``); verdict:
                    current | stale_child | stale_parent | none
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
                    topology revision and saves before replying (seed 02 §9); ``tabId``
                    is non-empty without ':' and ``leafId`` non-empty (the pane key
                    ``<tabId>:<leafId>`` of ``orca.model.panes``)
session.retire_pty  {hostId?, ptyIds: [ptyId]} → {revision, unbound, durable}   sent by ptyd
                    when a PTY exits on its own (seed 02 §9, §13): every binding of that
                    host to one of ``ptyIds`` (the exited PTY's id and the ids it had
                    before a rename; ``ptyIdsByLeafId``, legacy ``ptyId``) leaves the
                    session; the leaf stays (an ended pane is shown and runs again).
                    When one did, the topology revision goes up and the store saves
                    before replying (a stale write cannot bind it again); ``unbound``
                    0 (nothing bound): no write, no event, the current revision
session.retired_since {hostId?, revision: int} → {hostId, revision, panes, truncated}
                    catch-up for a follower that missed session.paneRetired while down:
                    ``revision`` is the host's current topology revision; ``panes`` the
                    logged retirements newer than the given one, oldest first, each
                    {tabId, leafId, paneKey, revision, retiredAtMs (store clock)}; the log
                    keeps the last 1024 per host, so ``truncated`` is true when it no
                    longer reaches back to the given revision (some retirements unknown)
session.reconcile_ptys {hostId?, running: [ptyId], ended: {ptyId: exitCode}}
                    → {exited, gone, shutdownWorktreesWithoutPty}   sent by ptyd after
                    every start (issue 13; docs/protocols.md §4): the store marks each
                    saved binding of that host (``ptyIdsByLeafId``, legacy ``ptyId``)
                    whose id is not in ``running`` as ``exited`` (ptyd keeps its history)
                    or ``gone``, and lists the ``activeWorktreeIdsOnShutdown`` without a
                    running PTY, in the session's ``ptyReconciliation`` (replaced whole;
                    bindings themselves untouched; session.set/patch never change it);
                    ``session.changed`` follows
worktree.migrate_identity {oldId, newId} → {oldId, newId, durable}   saved before replying
identity.resolve    {worktreeId} → {status: current|alias|unknown, worktreeId|null}
automation.list     {} → {automations: [Automation], automationRuns: [AutomationRun]}
                    (issue 38; orca/model/automations.py; orch is their one writer)
automation.put      {automation} → Automation          inserted, or replaced by id;
                    conflict: another automation has the name; bad_request: not a record
automation.remove   {id} → {id}                        its runs go with it; not_found
automationRun.begin {run} → {run, created}             a firing's intent: inserted when
                    no run has its id (``<automationId>@<scheduledFor>``), else the one
                    recorded (``created`` false: the due time fired already); the oldest
                    settled runs of that automation beyond 50 are dropped; not_found: no
                    such automation
automationRun.settle {id, status, output?, error?, finishedAt} → AutomationRun   the
                    firing's result; not_found
state.snapshot      {} → {epoch, seq, revision, state}          for mirrors (Clone pattern);
                    ``state`` is the whole PersistedState as builtins (an open map)
sys.stats           built in, plus {store: {load, save, journal, scheduler, revision, file}};
                    load.readOnlySchemaVersion = the newer file's version (else null),
                    also named in load.stateProblems;
                    load.journal = {applied, matched, tornTail, problems} (the replay),
                    journal = {batches, appended, failures, rotations, size, broken,
                    largestBatch}; a file that is not a usable state (torn, garbage,
                    nested deeper than 100 levels, over 256 MiB) is kept aside as
                    ``orca-data.json.corrupt-<UTC stamp>`` and named in load.problems

Events (type → data); every envelope carries epoch + seq
-------------------------------------------------------
repo.added {repo} · repo.updated {repo} · repo.removed {id, worktreeIds}
project.upserted {project} · project.removed {id}
projectGroup.upserted {projectGroup} · projectGroup.removed {id}
folderWorkspace.upserted {folderWorkspace} · folderWorkspace.removed {id}
sshTarget.upserted {sshTarget} · sshTarget.removed {id}
worktreeMeta.changed {worktreeId, meta} · worktreeMeta.removed {worktreeIds}
lineage.changed {worktreeId, lineage|null} · workspaceLineage.changed {childWorkspaceKey, lineage|null}
settings.changed {settings} · ui.changed {ui}
session.changed {hostId, revision, fields, removed}: top-level session fields that changed
    (apply: drop ``removed`` wire names, then merge ``fields``); session.get has the whole
session.paneRetired {hostId, tabId, leafId, revision}
worktree.renamed {oldId, newId}, then worktreeMeta.removed/changed and session.changed
    for every record the migration re-keyed
automation.changed {id, automation|null} (null: removed) · automationRun.recorded {run}
store.saveFailed {errno, message, at} · store.saveRecovered {}
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar, cast

import msgspec

from orca.contracts.base import Args, NoArgs, Payload
from orca.contracts.store_core import CONTRACT as CONTRACT  # every op below is declared on it
from orca.contracts.store_core import SESSION_BINDINGS as SESSION_BINDINGS
from orca.contracts.store_core import SavedBinding as SavedBinding
from orca.contracts.store_core import SessionBindings as SessionBindings
from orca.contracts.store_core import SessionBindingsArgs as SessionBindingsArgs
from orca.model.automations import Automation, AutomationOutput, AutomationRun
from orca.model.session import WorkspaceSessionState
from orca.model.ssh_target import SshTarget
from orca.model.state import GlobalSettings, PersistedUIState
from orca.model.types_repo import FolderWorkspace, Project, ProjectGroup, Repo
from orca.model.worktree import WorkspaceLineage, WorktreeLineage, WorktreeMeta
from orca.wire.errors import BadRequest, Conflict, NotFound, Unavailable

T = TypeVar("T")


def _optional(record: type[T]) -> type[T | None]:
    """``record | None`` as a result type (a cleared lineage replies ``null``)."""
    return cast("type[T | None]", record | None)


# A non-empty id (entity, worktree, host, leaf...).
Id = Annotated[str, msgspec.Meta(min_length=1)]
# The tab part of a pane key: non-empty and without ':' (``orca.model.panes``), so
# ``<tabId>:<leafId>`` splits unambiguously.
TabId = Annotated[str, msgspec.Meta(min_length=1, pattern="^[^:]+$")]
Applied = Literal["full", "metadata_only"]
IdentityStatus = Literal["current", "alias", "unknown"]


# -- args ---------------------------------------------------------------------------
class RepoAddArgs(Args, frozen=True, kw_only=True):
    path: Id
    display_name: str | None = None
    kind: Literal["git", "folder"] | None = None
    fields: dict[str, Any] | None = None


class IdArgs(Args, frozen=True, kw_only=True):
    id: Id


class PatchByIdArgs(Args, frozen=True, kw_only=True):
    id: Id
    patch: dict[str, Any]


class ProjectArgs(Args, frozen=True, kw_only=True):
    project: dict[str, Any]


class ProjectGroupArgs(Args, frozen=True, kw_only=True):
    project_group: dict[str, Any]


class FolderWorkspaceArgs(Args, frozen=True, kw_only=True):
    folder_workspace: dict[str, Any]


class SshTargetArgs(Args, frozen=True, kw_only=True):
    ssh_target: dict[str, Any]


class SshTargetList(Payload, frozen=True, kw_only=True):
    ssh_targets: list[SshTarget]


class WorktreeIdArgs(Args, frozen=True, kw_only=True):
    worktree_id: Id


class MetaSetArgs(Args, frozen=True, kw_only=True):
    worktree_id: Id
    meta: dict[str, Any]


class MetaPatchArgs(Args, frozen=True, kw_only=True):
    worktree_id: Id
    patch: dict[str, Any]


class LineageSetArgs(Args, frozen=True, kw_only=True):
    worktree_id: Id
    lineage: dict[str, Any] | None


class LineageView(Payload, frozen=True, kw_only=True):
    worktree_id: str
    lineage: WorktreeLineage | None  # None unless verdict is "current"
    verdict: Literal["current", "stale_child", "stale_parent", "none"]


class WorkspaceLineageSetArgs(Args, frozen=True, kw_only=True):
    child_workspace_key: Id
    lineage: dict[str, Any] | None


class PatchArgs(Args, frozen=True, kw_only=True):
    patch: dict[str, Any]


class SessionGetArgs(Args, frozen=True, kw_only=True):
    host_id: str | None = None  # None or "" → "local"


class SessionSetArgs(Args, frozen=True, kw_only=True):
    host_id: str | None = None
    session: dict[str, Any]
    revision: int | None = None


class SessionPatchArgs(Args, frozen=True, kw_only=True):
    host_id: str | None = None
    patch: dict[str, Any]
    revision: int | None = None


class SessionFlushArgs(Args, frozen=True, kw_only=True):
    host_id: str | None = None
    session: dict[str, Any] | None = None
    revision: int | None = None


class RetirePaneArgs(Args, frozen=True, kw_only=True):
    host_id: str | None = None
    tab_id: TabId
    leaf_id: Id


class RetirePtyArgs(Args, frozen=True, kw_only=True):
    """A PTY that exited: its id and the ids it had before a worktree rename."""

    host_id: str | None = None
    pty_ids: list[Id]


class ReconcilePtysArgs(Args, frozen=True, kw_only=True):
    """ptyd's truth after its start: the PTY ids it runs, and those it knows ended."""

    host_id: str | None = None
    running: list[str]
    # PTY id -> exit code (-1 unknown) of sessions ptyd keeps the history of.
    ended: dict[str, int]


class PtysReconciled(Payload, frozen=True, kw_only=True):
    """How many saved bindings were marked not running (``exited``/``gone``)."""

    exited: int
    gone: int
    shutdown_worktrees_without_pty: list[str]


class RetiredSinceArgs(Args, frozen=True, kw_only=True):
    host_id: str | None = None
    revision: int


class MigrateIdentityArgs(Args, frozen=True, kw_only=True):
    old_id: Id
    new_id: Id


# -- results ------------------------------------------------------------------------
class AutomationPutArgs(Args, frozen=True, kw_only=True):
    automation: dict[str, Any]  # an Automation record as builtins (unknown keys kept)


class AutomationRunBeginArgs(Args, frozen=True, kw_only=True):
    run: dict[str, Any]  # an AutomationRun record as builtins


class AutomationRunSettleArgs(Args, frozen=True, kw_only=True):
    id: Id
    status: str
    finished_at: int
    output: AutomationOutput | None = None
    error: str | None = None


class AutomationList(Payload, frozen=True, kw_only=True):
    automations: list[Automation]
    automation_runs: list[AutomationRun]


class AutomationRunBegun(Payload, frozen=True, kw_only=True):
    run: AutomationRun
    created: bool


class RepoRemoveResult(Payload, frozen=True, kw_only=True):
    id: Id
    removed_worktree_meta: int  # how many worktreeMeta entries went with the repo


class RepoList(Payload, frozen=True, kw_only=True):
    repos: list[Repo]


class FolderWorkspaceList(Payload, frozen=True, kw_only=True):
    folder_workspaces: list[FolderWorkspace]


class Removed(Payload, frozen=True, kw_only=True):
    """The id of the record an ``*.remove`` op removed."""

    id: Id


class MetaList(Payload, frozen=True, kw_only=True):
    worktree_meta: dict[str, WorktreeMeta]


class MetasRemoved(Payload, frozen=True, kw_only=True):
    removed: list[str]


class SessionView(Payload, frozen=True, kw_only=True):
    host_id: Id
    revision: int
    session: WorkspaceSessionState


class SessionWritten(Payload, frozen=True, kw_only=True):
    applied: Applied
    changed: bool
    revision: int


class SessionFlushed(Payload, frozen=True, kw_only=True, omit_defaults=True):
    """``applied``/``changed``/``revision`` are present only when a session was given."""

    applied: Applied | None = None
    changed: bool | None = None
    revision: int | None = None
    flushed: bool


class PaneRetiredResult(Payload, frozen=True, kw_only=True):
    revision: int
    durable: bool = True


class PtyRetiredResult(Payload, frozen=True, kw_only=True):
    revision: int
    unbound: int  # bindings removed; 0: nothing was bound to it, nothing written
    durable: bool = True


class RetiredPane(Payload, frozen=True, kw_only=True):
    """One logged retirement (``retiredAtMs`` on the store's clock)."""

    tab_id: TabId
    leaf_id: Id
    pane_key: Id
    revision: int
    retired_at_ms: int


class RetiredSince(Payload, frozen=True, kw_only=True):
    host_id: Id
    revision: int
    panes: list[RetiredPane]
    truncated: bool


class IdentityMigrated(Payload, frozen=True, kw_only=True):
    old_id: Id
    new_id: Id
    durable: bool = True  # also true when nothing had to be migrated (nothing to save)


class IdentityResolved(Payload, frozen=True, kw_only=True):
    status: IdentityStatus
    worktree_id: str | None  # the current id (current/alias), None when unknown


class StateSnapshot(Payload, frozen=True, kw_only=True):
    epoch: str
    seq: int
    revision: int
    state: dict[str, Any]  # PersistedState as builtins (orca.model.codec.from_builtins)


# -- events -------------------------------------------------------------------------
class RepoAdded(Payload, frozen=True, kw_only=True):
    repo: Repo


class RepoUpdated(Payload, frozen=True, kw_only=True):
    repo: Repo


class RepoRemoved(Payload, frozen=True, kw_only=True):
    id: Id
    worktree_ids: list[str]  # the worktrees whose meta/lineage went with the repo


class ProjectUpserted(Payload, frozen=True, kw_only=True):
    project: Project


class ProjectRemoved(Payload, frozen=True, kw_only=True):
    id: Id


class SshTargetUpserted(Payload, frozen=True, kw_only=True):
    ssh_target: SshTarget


class SshTargetRemoved(Payload, frozen=True, kw_only=True):
    id: Id


class ProjectGroupUpserted(Payload, frozen=True, kw_only=True):
    project_group: ProjectGroup


class ProjectGroupRemoved(Payload, frozen=True, kw_only=True):
    id: Id


class FolderWorkspaceUpserted(Payload, frozen=True, kw_only=True):
    folder_workspace: FolderWorkspace


class FolderWorkspaceRemoved(Payload, frozen=True, kw_only=True):
    id: Id


class WorktreeMetaChanged(Payload, frozen=True, kw_only=True):
    worktree_id: Id
    meta: WorktreeMeta


class WorktreeMetaRemoved(Payload, frozen=True, kw_only=True):
    worktree_ids: list[str]


class LineageChanged(Payload, frozen=True, kw_only=True):
    worktree_id: Id
    lineage: WorktreeLineage | None  # None: cleared


class WorkspaceLineageChanged(Payload, frozen=True, kw_only=True):
    child_workspace_key: Id
    lineage: WorkspaceLineage | None  # None: cleared


class SettingsChanged(Payload, frozen=True, kw_only=True):
    settings: GlobalSettings


class UiChanged(Payload, frozen=True, kw_only=True):
    ui: PersistedUIState


class SessionChanged(Payload, frozen=True, kw_only=True):
    """Top-level session fields that changed: a mirror drops the ``removed`` wire names
    (fields back to their default), then merges ``fields`` (wire names → builtins)."""

    host_id: Id
    revision: int
    fields: dict[str, Any]
    removed: list[str]


class PaneRetired(Payload, frozen=True, kw_only=True):
    host_id: Id
    tab_id: TabId
    leaf_id: Id
    revision: int


class WorktreeRenamed(Payload, frozen=True, kw_only=True):
    old_id: Id
    new_id: Id


class SaveFailed(Payload, frozen=True, kw_only=True):
    errno: str  # the errno name, e.g. "ENOSPC"
    message: str
    at: float  # wall clock, seconds


class SaveRecovered(Payload, frozen=True, kw_only=True):
    pass


class AutomationChanged(Payload, frozen=True, kw_only=True):
    id: str
    automation: Automation | None  # None: removed


class AutomationRunRecorded(Payload, frozen=True, kw_only=True):
    run: AutomationRun


# -- the contract -------------------------------------------------------------------
# CONTRACT is made in store_core with the ops a start-up-bound reader needs; every other
# op and event is added to it here.
_W = (BadRequest, Unavailable)  # every mutation: malformed args, or the store is stopping

REPO_ADD = CONTRACT.op("repo.add", RepoAddArgs, Repo, *_W, Conflict)
REPO_UPDATE = CONTRACT.op("repo.update", PatchByIdArgs, Repo, *_W, NotFound, Conflict)
REPO_REMOVE = CONTRACT.op("repo.remove", IdArgs, RepoRemoveResult, *_W, NotFound)
REPO_LIST = CONTRACT.op("repo.list", NoArgs, RepoList)
PROJECT_UPSERT = CONTRACT.op("project.upsert", ProjectArgs, Project, *_W)
PROJECT_REMOVE = CONTRACT.op("project.remove", IdArgs, Removed, *_W, NotFound)
PROJECT_GROUP_UPSERT = CONTRACT.op(
    "projectGroup.upsert", ProjectGroupArgs, ProjectGroup, *_W, Conflict
)
PROJECT_GROUP_REMOVE = CONTRACT.op("projectGroup.remove", IdArgs, Removed, *_W, NotFound, Conflict)
FOLDER_WORKSPACE_UPSERT = CONTRACT.op(
    "folderWorkspace.upsert", FolderWorkspaceArgs, FolderWorkspace, *_W, Conflict
)
FOLDER_WORKSPACE_REMOVE = CONTRACT.op("folderWorkspace.remove", IdArgs, Removed, *_W, NotFound)
FOLDER_WORKSPACE_LIST = CONTRACT.op("folderWorkspace.list", NoArgs, FolderWorkspaceList)
SSH_TARGET_UPSERT = CONTRACT.op("sshTarget.upsert", SshTargetArgs, SshTarget, *_W)
SSH_TARGET_REMOVE = CONTRACT.op("sshTarget.remove", IdArgs, Removed, *_W, NotFound)
SSH_TARGET_LIST = CONTRACT.op("sshTarget.list", NoArgs, SshTargetList)
WORKTREE_META_GET = CONTRACT.op("worktreeMeta.get", WorktreeIdArgs, WorktreeMeta, NotFound)
WORKTREE_META_LIST = CONTRACT.op("worktreeMeta.list", NoArgs, MetaList)
WORKTREE_META_SET = CONTRACT.op("worktreeMeta.set", MetaSetArgs, WorktreeMeta, *_W)
WORKTREE_META_PATCH = CONTRACT.op("worktreeMeta.patch", MetaPatchArgs, WorktreeMeta, *_W)
WORKTREE_META_REMOVE = CONTRACT.op(
    "worktreeMeta.remove", WorktreeIdArgs, MetasRemoved, *_W, NotFound
)
WORKTREE_META_GC = CONTRACT.op("worktreeMeta.gc", NoArgs, MetasRemoved, Unavailable)
LINEAGE_SET = CONTRACT.op("lineage.set", LineageSetArgs, _optional(WorktreeLineage), *_W, Conflict)
LINEAGE_GET = CONTRACT.op("lineage.get", WorktreeIdArgs, LineageView, BadRequest)
WORKSPACE_LINEAGE_SET = CONTRACT.op(
    "workspaceLineage.set", WorkspaceLineageSetArgs, _optional(WorkspaceLineage), *_W
)
SETTINGS_GET = CONTRACT.op("settings.get", NoArgs, GlobalSettings)
SETTINGS_PATCH = CONTRACT.op("settings.patch", PatchArgs, GlobalSettings, *_W)
UI_GET = CONTRACT.op("ui.get", NoArgs, PersistedUIState)
UI_PATCH = CONTRACT.op("ui.patch", PatchArgs, PersistedUIState, *_W)
SESSION_GET = CONTRACT.op("session.get", SessionGetArgs, SessionView, BadRequest)
SESSION_SET = CONTRACT.op("session.set", SessionSetArgs, SessionWritten, *_W)
SESSION_PATCH = CONTRACT.op("session.patch", SessionPatchArgs, SessionWritten, *_W)
SESSION_FLUSH = CONTRACT.op("session.flush", SessionFlushArgs, SessionFlushed, *_W)
SESSION_RETIRE_PANE = CONTRACT.op("session.retire_pane", RetirePaneArgs, PaneRetiredResult, *_W)
SESSION_RETIRE_PTY = CONTRACT.op("session.retire_pty", RetirePtyArgs, PtyRetiredResult, *_W)
SESSION_RECONCILE_PTYS = CONTRACT.op(
    "session.reconcile_ptys", ReconcilePtysArgs, PtysReconciled, *_W
)
SESSION_RETIRED_SINCE = CONTRACT.op(
    "session.retired_since", RetiredSinceArgs, RetiredSince, BadRequest
)
WORKTREE_MIGRATE_IDENTITY = CONTRACT.op(
    "worktree.migrate_identity", MigrateIdentityArgs, IdentityMigrated, *_W
)
IDENTITY_RESOLVE = CONTRACT.op("identity.resolve", WorktreeIdArgs, IdentityResolved, BadRequest)
STATE_SNAPSHOT = CONTRACT.op("state.snapshot", NoArgs, StateSnapshot)
AUTOMATION_LIST = CONTRACT.op("automation.list", NoArgs, AutomationList)
AUTOMATION_PUT = CONTRACT.op("automation.put", AutomationPutArgs, Automation, *_W, Conflict)
AUTOMATION_REMOVE = CONTRACT.op("automation.remove", IdArgs, Removed, *_W, NotFound)
AUTOMATION_RUN_BEGIN = CONTRACT.op(
    "automationRun.begin", AutomationRunBeginArgs, AutomationRunBegun, *_W, NotFound
)
AUTOMATION_RUN_SETTLE = CONTRACT.op(
    "automationRun.settle", AutomationRunSettleArgs, AutomationRun, *_W, NotFound
)

REPO_ADDED = CONTRACT.event("repo.added", RepoAdded)
REPO_UPDATED = CONTRACT.event("repo.updated", RepoUpdated)
REPO_REMOVED = CONTRACT.event("repo.removed", RepoRemoved)
PROJECT_UPSERTED = CONTRACT.event("project.upserted", ProjectUpserted)
PROJECT_REMOVED = CONTRACT.event("project.removed", ProjectRemoved)
PROJECT_GROUP_UPSERTED = CONTRACT.event("projectGroup.upserted", ProjectGroupUpserted)
PROJECT_GROUP_REMOVED = CONTRACT.event("projectGroup.removed", ProjectGroupRemoved)
FOLDER_WORKSPACE_UPSERTED = CONTRACT.event("folderWorkspace.upserted", FolderWorkspaceUpserted)
FOLDER_WORKSPACE_REMOVED = CONTRACT.event("folderWorkspace.removed", FolderWorkspaceRemoved)
SSH_TARGET_UPSERTED = CONTRACT.event("sshTarget.upserted", SshTargetUpserted)
SSH_TARGET_REMOVED = CONTRACT.event("sshTarget.removed", SshTargetRemoved)
WORKTREE_META_CHANGED = CONTRACT.event("worktreeMeta.changed", WorktreeMetaChanged)
WORKTREE_META_REMOVED = CONTRACT.event("worktreeMeta.removed", WorktreeMetaRemoved)
LINEAGE_CHANGED = CONTRACT.event("lineage.changed", LineageChanged)
WORKSPACE_LINEAGE_CHANGED = CONTRACT.event("workspaceLineage.changed", WorkspaceLineageChanged)
SETTINGS_CHANGED = CONTRACT.event("settings.changed", SettingsChanged)
UI_CHANGED = CONTRACT.event("ui.changed", UiChanged)
SESSION_CHANGED = CONTRACT.event("session.changed", SessionChanged)
PANE_RETIRED = CONTRACT.event("session.paneRetired", PaneRetired)
WORKTREE_RENAMED = CONTRACT.event("worktree.renamed", WorktreeRenamed)
AUTOMATION_CHANGED = CONTRACT.event("automation.changed", AutomationChanged)
AUTOMATION_RUN_RECORDED = CONTRACT.event("automationRun.recorded", AutomationRunRecorded)
SAVE_FAILED = CONTRACT.event("store.saveFailed", SaveFailed)
SAVE_RECOVERED = CONTRACT.event("store.saveRecovered", SaveRecovered)
