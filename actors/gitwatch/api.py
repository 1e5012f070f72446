"""The ``gitwatch`` actor's wire contract: every op and event, with fields and errors.

gitwatch owns git facts (worktree list, HEAD, branch, dirty counts) and git mutations
(worktree add/remove/move). It never writes ``orca-data.json``: repos, settings and
worktreeMeta come from a mirror of ``store`` (a repo the mirror has not seen yet is
looked up with ``repo.list``); meta is changed through store ops (``worktreeMeta.set``
on create, ``worktreeMeta.remove`` on remove, ``worktree.migrate_identity`` on
rename). Field names are camelCase.

Errors: ``bad_request`` (invalid name or id, path outside the workspace root, folder
repo, unknown base ref, main worktree), ``not_found`` (no such repo or
worktree), ``conflict`` (branch checked out elsewhere, dirty or locked worktree,
destination exists, no workspace root configured), ``unavailable`` (repo directory
gone, store unreachable), ``internal`` (git failed for another reason; the message
carries git's stderr).

Ops (args → result)
-------------------
worktree.list     {repoId?} → {worktrees: [Row], unavailableRepos: [{repoId, path, reason}]}
                  Row = DetectedWorktree (id, repoId, displayName, path, head, branch,
                  isBare, isMainWorktree, locked, lockReason, prunable, prunableReason,
                  ownership, selectedCheckout, visible, meta fields...) + isDetached
                  + gitStatus {staged, unstaged, untracked, conflicted, total} | null.
                  not_found: unknown repoId. Retries unavailable repos first. Rows:
                  main worktree first, then by path. Served from memory.
worktree.create   {repoId, name, base?, setup?: "run"|"skip" (default run), requestId?,
                  source?} → {worktreeId, path, branch, setup: {ran, exitCode, error?}}
                  progress: worktree.create.progress events tagged with requestId.
                  The meta becomes the creation evidence (instanceId, createdAt,
                  orcaCreatedAt, orcaCreationSource, orcaCreationWorkspaceLayout,
                  baseRef when a branch was made). A failing setup script is reported
                  in setup.exitCode, one that cannot run in setup.error; the worktree
                  is kept either way.
worktree.remove   {worktreeId, force?: false, deleteBranch?: false}
                  → {worktreeId, removed, branchDeleted, branchError?}
                  conflict: dirty or locked (unless force). The branch stays unless
                  deleteBranch (an unmerged one only with force). Meta is dropped.
worktree.rename   {worktreeId, newName} → {oldWorktreeId, newWorktreeId, path}
                  git worktree move → store worktree.migrate_identity → worktree.renamed,
                  nothing in between. The folder stays in its parent directory.
                  unavailable: moved but store did not migrate (the event still goes
                  out, with identityMigrated false).
gitwatch.snapshot {} → {epoch, seq, repos: {repoId: {path, kind, unavailable,
                  worktrees: {path: {git, gitStatus}}}}, watches, degraded: [path]}
sys.stats         built in.

Events (type → data); every envelope carries epoch + seq
-------------------------------------------------------
worktree.added    {repoId, worktreeId, git}             git = GitWorktreeInfo + isDetached
worktree.changed  {repoId, worktreeId, git, gitStatus}  HEAD/branch/lock or dirty counts
worktree.removed  {repoId, worktreeId, path}         also when store drops the repo
worktree.renamed  {repoId, oldWorktreeId, newWorktreeId, oldPath, newPath, identityMigrated}
repo.unavailable  {repoId, path, reason}                once per outage
worktree.create.progress {requestId, repoId, stage: git|setup|done, text}
                  on topic "worktree.create.progress:<requestId>" (subscribe to one create)
"""

from __future__ import annotations

from typing import Literal

import msgspec


class _Args(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Base of every op's args: camelCase on the wire, unknown fields ignored."""


class NoArgs(_Args, frozen=True, kw_only=True):
    pass


class ListArgs(_Args, frozen=True, kw_only=True):
    repo_id: str | None = None


class CreateArgs(_Args, frozen=True, kw_only=True):
    repo_id: str
    name: str
    base: str | None = None
    setup: Literal["run", "skip"] = "run"
    request_id: str | None = None
    source: str = "rpc"


class RemoveArgs(_Args, frozen=True, kw_only=True):
    worktree_id: str
    force: bool = False
    delete_branch: bool = False


class RenameArgs(_Args, frozen=True, kw_only=True):
    worktree_id: str
    new_name: str


PROGRESS_TOPIC_PREFIX = "worktree.create.progress:"

OPS = (
    "worktree.list",
    "worktree.create",
    "worktree.remove",
    "worktree.rename",
    "gitwatch.snapshot",
)
EVENTS = (
    "worktree.added",
    "worktree.changed",
    "worktree.removed",
    "worktree.renamed",
    "repo.unavailable",
    "worktree.create.progress",
)
