"""Worktree mutations: create, remove, rename (seed 01 §4.3, §5.3, §5.4).

Safety rules, each enforced here before git runs:

* create — the name is sanitized and the path computed by ``orca.model.naming``
  (never taken from the caller; ``pathplan`` keeps repos whose folders share a name
  apart), then checked again after resolving symlinks so a
  symlinked parent cannot lead outside the workspace root; a branch checked out in
  another worktree is a :class:`BranchCheckedOutElsewhere` conflict, not a git error
  string. Creation evidence (``orcaCreatedAt``, ``orcaCreationWorkspaceLayout``...)
  becomes the worktree's meta through ``store`` so ownership reads "orca-managed".
* remove — a locked or dirty worktree is refused unless forced; the branch is kept
  unless deletion is asked for (and an unmerged branch is then only deleted when forced);
  the meta is dropped so a later worktree at the same path starts clean.
* rename — the branch (``git branch -m``) and the display name first (seed 01 §4.3:
  "branch + display name, then the folder"), each undone if a later step before the
  move fails; ``git worktree move`` is the point of no return; then ``store`` migrates
  the identity; then ``worktree.renamed`` is published. The repo lock is held across
  all of it so no watcher event (a "removed" for the old path, an "added" for the new)
  can be published in between.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pygit2
import trio

from actors.gitwatch import errors, lifecycleplan
from actors.gitwatch.factstate import RepoFacts, apply_move
from actors.gitwatch.gitcli import git_version, run_git
from actors.gitwatch.gitfacts import open_repository, read_dirty_counts
from actors.gitwatch.lifecycleplan import BranchNameTaken, RenamePlan
from actors.gitwatch.pathplan import compute_unique_worktree_path
from actors.gitwatch.records import WorktreeFacts
from actors.gitwatch.setupscript import UnsupportedSetup, run_setup_script
from actors.gitwatch.storeview import StorePort
from actors.gitwatch.tracker import Emit, RepoTracker
from orca.contracts import gitwatch as contract
from orca.model import naming
from orca.model.ids import make_worktree_id, parse_worktree_id
from orca.model.types_repo import Repo
from orca.wire.errors import OrcaError

log = logging.getLogger(__name__)
Progress = Callable[[contract.Stage, str], None]  # (stage, text)
_HEADS = "refs/heads/"
T = TypeVar("T")
# ``git hook run`` (2.36): the post-checkout hook run the way ``git worktree add`` runs it.
HOOK_RUN_GIT = (2, 36)


@dataclass(frozen=True, slots=True)
class CreateRequest:
    repo_id: str
    name: str
    base: str | None = None
    run_setup: bool = True
    source: str = "rpc"  # recorded as orcaCreationSource
    pending_first_agent_message_rename: bool = False  # the name is a placeholder
    # A worktree of the same repo whose commit is the base and whose uncommitted work
    # (changes, new files, deletions; not ignored files) the new worktree starts with.
    carry_from: str | None = None


def _now_ms() -> int:
    return int(time.time() * 1000)


async def _git_repo(store: StorePort, repo_id: str) -> Repo:
    repo = await store.lookup_repo(repo_id)
    if repo is None:
        raise errors.RepoNotFound(f"no repo with id {repo_id!r}")
    if repo.kind == "folder":
        raise errors.CallerError(f"repo {repo.display_name!r} is a folder, not a git repository")
    return repo


def plan_worktree_path(store: StorePort, repo: Repo, name: str) -> tuple[str, str, str]:
    """(path, branch, layout) for a new worktree, or a CallerError/StateConflict."""
    settings = store.view().settings
    try:
        branch = naming.sanitize_worktree_name(name)
        root = naming.compute_workspace_root(repo, settings)
        path = compute_unique_worktree_path(repo, name, store.view().repos.values(), settings)
        # The string check above cannot see symlinks; resolve what exists and re-check.
        naming.ensure_path_within_workspace(os.path.realpath(root), os.path.realpath(path))
    except naming.InvalidWorktreeName as exc:
        raise errors.InvalidWorktreeName(str(exc)) from exc
    except naming.PathOutsideWorkspace as exc:
        raise errors.PathOutsideWorkspace(str(exc)) from exc
    except naming.WorkspaceRootUnset as exc:
        raise errors.StateConflict(f"no workspace root configured: {exc}") from exc
    layout = "nested" if settings.nest_workspaces else "flat"
    return path, branch, layout


async def create_worktree(
    tracker: RepoTracker, store: StorePort, request: CreateRequest, progress: Progress
) -> contract.Created:
    repo = await _git_repo(store, request.repo_id)
    path, branch, layout = await trio.to_thread.run_sync(
        plan_worktree_path, store, repo, request.name
    )
    async with tracker.name_lock(repo.id, branch):
        worktree_id = await _make_worktree(
            tracker, store, request, progress, repo, path, branch, layout
        )
    setup = contract.SetupOutcome(ran=False, exit_code=None)
    if request.run_setup:
        # The worktree exists from here on: a setup problem is reported, not raised.
        try:
            exit_code = await run_setup_script(
                path, repo.path, lambda line: progress("setup", line), worktree_id=worktree_id
            )
            setup = contract.SetupOutcome(ran=exit_code is not None, exit_code=exit_code)
        except (UnsupportedSetup, OSError) as exc:
            progress("setup", f"setup not run: {exc}")
            setup = contract.SetupOutcome(ran=False, exit_code=None, error=str(exc))
    progress("done", path)
    return contract.Created(worktree_id=worktree_id, path=path, branch=_HEADS + branch, setup=setup)


async def _make_worktree(
    tracker: RepoTracker,
    store: StorePort,
    request: CreateRequest,
    progress: Progress,
    repo: Repo,
    path: str,
    branch: str,
    layout: str,
) -> str:
    """The checks, ``git worktree add``, the creation evidence, the rescan: the id."""
    if await trio.to_thread.run_sync(os.path.lexists, path):
        raise errors.DestinationExists(f"{path} already exists")
    await _refuse_checked_out(tracker, repo, branch)
    base = request.base or repo.worktree_base_ref or "HEAD"
    branch_exists, base_is_commit = await _branch_and_base(repo.path, branch, base)
    carried = None
    if request.carry_from is not None:
        if branch_exists:
            raise errors.CallerError(f"branch {branch!r} exists: a fork needs a new one")
        base, carried = await _work_of(repo, request.carry_from, tracker)  # a commit id
    elif not branch_exists and not base_is_commit:
        raise errors.CallerError(f"base {base!r} is not a branch, tag or commit of {repo.path}")
    progress("git", f"creating {path} on branch {branch}")
    await trio.to_thread.run_sync(lambda: os.makedirs(os.path.dirname(path), exist_ok=True))
    # The worktree is registered under the repo's admin lock, and its files checked out
    # after it, outside: checkouts of a big repo (0.4 s for 3000 files) run side by side.
    apart = await git_version() >= HOOK_RUN_GIT
    args = lifecycleplan.add_args(
        path, branch, base, branch_exists=branch_exists, checkout=not apart
    )
    async with tracker.admin_lock(repo.id):
        result = await run_git(repo.path, *args, check=False)
    if result.returncode != 0:
        raise lifecycleplan.add_failure(result.stderr, branch)
    if apart:
        await _check_out(tracker, repo, path)
    if carried is not None:
        progress("git", f"carrying the uncommitted work of {request.carry_from}")
        # The work's tree checked out over the base, then unstaged: uncommitted, as it was.
        await run_git(path, "read-tree", "-m", "-u", "HEAD", carried)
        await run_git(path, "reset", "-q")
    worktree_id = make_worktree_id(repo.id, path)
    evidence = lifecycleplan.creation_evidence(
        instance_id=str(uuid.uuid4()),
        now_ms=_now_ms(),
        source=request.source,
        layout=layout,
        base=base,
        branch_made=not branch_exists,
        pending_first_agent_message_rename=request.pending_first_agent_message_rename,
    )
    # Replace, not patch: notes left at this path by an earlier worktree are not ours.
    await store.replace_meta(worktree_id, evidence)
    await tracker.rescan_worktree(repo.id, path)
    return worktree_id


async def _check_out(tracker: RepoTracker, repo: Repo, path: str) -> None:
    """What ``git worktree add`` does once the worktree is registered, when asked not
    to: fill the index and the files (``git reset --hard``), then run the repo's
    post-checkout hook with the arguments git gives it (a null previous HEAD, the new
    one, 1). A checkout that fails takes the worktree away again, as git's own does; a
    hook that fails fails the create, as it fails ``git worktree add``, the worktree
    kept."""
    done = await run_git(path, "reset", "--hard", "--no-recurse-submodules", "-q", check=False)
    if done.returncode != 0:
        async with tracker.admin_lock(repo.id):
            await run_git(repo.path, "worktree", "remove", "--force", path, check=False)
        raise errors.GitFailure(f"git worktree add: checking out files: {done.stderr.strip()}")
    head = await trio.to_thread.run_sync(_head_of, path)
    if head is None:
        head = (await run_git(path, "rev-parse", "--verify", "HEAD")).stdout.strip()
    hook = await run_git(
        path, "hook", "run", "--ignore-missing", "post-checkout", "--", "0" * len(head), head, "1",
        check=False,
    )  # fmt: skip
    if hook.returncode != 0:
        raise errors.GitFailure(f"git worktree add: post-checkout hook: {hook.stderr.strip()}")


def _libgit2_refs(repo_path: str, branch_ref: str, rev: str) -> tuple[bool, bool] | None:
    """(``branch_ref`` exists, ``rev`` names a commit), one repo open in a worker thread;
    None when libgit2 cannot open the repo (SHA-256) or read its refs."""
    try:
        repo = open_repository(repo_path)
        if repo is None:
            return None
        exists = repo.references.get(branch_ref) is not None
    except (errors.RepoUnavailable, pygit2.GitError, ValueError):
        return None
    try:
        repo.revparse_single(rev).peel(pygit2.Commit)
    except (pygit2.GitError, KeyError, ValueError, TypeError):
        return exists, False
    return exists, True


async def _branch_and_base(repo_path: str, branch: str, base: str) -> tuple[bool, bool]:
    """(the branch exists, the base names a commit). libgit2 first (a git process each
    is most of a create's cost in a burst of them); git where libgit2 cannot tell, or
    would refuse a base: what git accepts is the rule (``rev-parse`` takes syntax
    libgit2 lacks)."""
    known = await trio.to_thread.run_sync(_libgit2_refs, repo_path, _HEADS + branch, base)
    if known is None:
        shown = await run_git(
            repo_path, "show-ref", "--verify", "--quiet", _HEADS + branch, check=False
        )
        known = (shown.returncode == 0, False)
    exists, is_commit = known
    if not exists and not is_commit:
        found = await run_git(
            repo_path, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}", check=False
        )
        is_commit = found.returncode == 0
    return exists, is_commit


def _head_of(worktree_path: str) -> str | None:
    """The worktree's HEAD commit, None when libgit2 cannot tell."""
    try:
        return str(pygit2.Repository(worktree_path).head.target)
    except (pygit2.GitError, KeyError, ValueError):
        return None


async def _refuse_checked_out(tracker: RepoTracker, repo: Repo, branch: str) -> None:
    """A branch checked out in another worktree is refused before git runs. (One checked
    out a moment ago that the watcher has not seen yet is refused by git itself:
    ``add_failure``.)"""
    await kept_facts_then_fresh(
        tracker, repo, lambda facts: lifecycleplan.refuse_checked_out(facts.rows.values(), branch)
    )


async def _work_of(repo: Repo, source: str, tracker: RepoTracker) -> tuple[str, str]:
    """(commit, tree) of a worktree of ``repo``: its HEAD, and a tree of its working
    files as ``git add -A`` would stage them, written through a temporary index so the
    worktree itself (its index included) is left untouched."""
    rows = (await fresh_facts(tracker, repo)).rows
    if source not in rows:
        raise errors.CallerError(f"{source} is not a worktree of {repo.path}")
    head = (await run_git(source, "rev-parse", "--verify", "HEAD")).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="orca-fork-") as scratch:
        index = {"GIT_INDEX_FILE": os.path.join(scratch, "index")}
        await run_git(source, "read-tree", "HEAD", extra_env=index)
        await run_git(source, "add", "-A", extra_env=index)
        tree = (await run_git(source, "write-tree", extra_env=index)).stdout.strip()
    return head, tree


async def fresh_facts(tracker: RepoTracker, repo: Repo) -> RepoFacts:
    """The repo's facts re-read now (tracking it first if the mirror has not yet)."""
    if repo.id not in tracker.repos:
        await tracker.track_repo(repo.id, repo.path)
    else:
        await tracker.rescan_repo(repo.id)  # waits for a first scan in progress, too
    facts = tracker.repos[repo.id]
    if facts.unavailable:
        raise errors.RepoUnavailable(f"repo {repo.path} is unavailable: {facts.unavailable}")
    return facts


async def kept_facts_then_fresh(
    tracker: RepoTracker, repo: Repo, check: Callable[[RepoFacts], T]
) -> T:
    """``check`` asked of the facts the watcher keeps, and of a fresh scan only when it
    refuses there (or the repo is not tracked, or unavailable): a repo of N worktrees is
    not scanned again for every create or preview, and nothing is refused on old news."""
    known = tracker.repos.get(repo.id)
    if known is not None and known.unavailable is None:
        try:
            return check(known)
        except errors.GitwatchError:
            pass  # confirmed below, on what is on disk now
    return check(await fresh_facts(tracker, repo))


async def _linked_row(
    tracker: RepoTracker, store: StorePort, worktree_id: str
) -> tuple[Repo, WorktreeFacts]:
    """The repo and current facts of a linked worktree named by id (after a rescan)."""
    try:
        parts = parse_worktree_id(worktree_id)
    except ValueError as exc:
        raise errors.CallerError(str(exc)) from exc
    repo = await _git_repo(store, parts.repo_id)
    row = (await fresh_facts(tracker, repo)).rows.get(parts.path)
    if row is None:
        raise errors.WorktreeNotFound(f"no worktree {worktree_id!r}")
    if row.is_main:
        raise errors.CallerError("the main worktree cannot be removed or moved")
    return repo, row


async def remove_worktree(
    tracker: RepoTracker,
    store: StorePort,
    worktree_id: str,
    *,
    force: bool = False,
    delete_branch: bool = False,
) -> contract.Removed:
    repo, row = await _linked_row(tracker, store, worktree_id)
    repo_id, path = repo.id, row.path
    changed = 0
    if lifecycleplan.counts_changes(row, force=force):
        changed = (await trio.to_thread.run_sync(read_dirty_counts, path)).total
    refusal = lifecycleplan.remove_refusal(row, force=force, changed=changed)
    if refusal is not None:
        raise refusal
    async with tracker.admin_lock(repo_id):
        await run_git(repo.path, *lifecycleplan.remove_args(row, force=force))
    await store.forget_meta(worktree_id)
    result = contract.Removed(worktree_id=worktree_id, removed=True, branch_deleted=False)
    branch = lifecycleplan.branch_to_delete(row, delete_branch=delete_branch)
    if branch is not None:
        async with tracker.admin_lock(repo_id):
            deleted = await run_git(
                repo.path, "branch", "-D" if force else "-d", branch, check=False
            )
        result = contract.Removed(
            worktree_id=worktree_id,
            removed=True,
            branch_deleted=deleted.returncode == 0,
            branch_error=None if deleted.returncode == 0 else deleted.stderr.strip(),
        )
    await tracker.rescan_repo(repo_id)
    return result


async def rename_worktree(
    tracker: RepoTracker,
    store: StorePort,
    emit: Emit,
    worktree_id: str,
    new_name: str,
    *,
    display_name: str | None = None,
    rename_branch: bool = True,
    meta_patch: dict[str, Any] | None = None,
) -> contract.Renamed:
    """Rename a worktree as seed 01 §4.3 does: its branch and display name, then its folder
    (``<same parent>/<sanitized new_name>``), then store migrates the identity, then
    ``worktree.renamed`` goes out. ``meta_patch`` is written with the display name.

    Everything that can refuse is checked first; a step that fails before the move undoes
    the steps before it, so a refused rename changes nothing. The move is the point of no
    return: after it, the identity migration and the announcement always follow.
    """
    repo, current = await _linked_row(tracker, store, worktree_id)
    repo_id = repo.id
    plan = lifecycleplan.plan_rename(current, new_name, display_name, rename_branch)
    moves = plan.new_path != plan.old_path
    if moves and await trio.to_thread.run_sync(os.path.lexists, plan.new_path):
        raise errors.DestinationExists(f"{plan.new_path} already exists")
    new_id = make_worktree_id(repo_id, plan.new_path) if moves else worktree_id
    async with tracker.repo_lock(repo_id), tracker.admin_lock(repo_id):
        facts = tracker.repos[repo_id]
        row = facts.rows.get(plan.old_path)
        if row is None:
            raise errors.WorktreeNotFound(f"no worktree {worktree_id!r}")
        refusal = lifecycleplan.rename_refusal(row, plan)
        if refusal is not None:
            raise refusal
        if plan.new_branch is not None:
            taken = await run_git(
                repo.path, "show-ref", "--verify", "--quiet", _HEADS + plan.new_branch, check=False
            )
            if taken.returncode == 0:
                raise BranchNameTaken(f"branch {plan.new_branch!r} already exists")
        await _rename_before_move(repo.path, store, worktree_id, plan, moves, meta_patch or {})
        if not moves:
            await tracker.rescan_repo_locked(repo_id)
            return contract.Renamed(
                old_worktree_id=worktree_id, new_worktree_id=worktree_id, path=plan.old_path,
                branch=_HEADS + (plan.new_branch or plan.old_branch or "") if row.branch else "",
                display_name=plan.display_name,
            )  # fmt: skip
        # Point of no return passed. Nothing may run between these three steps.
        failure: OrcaError | None = None
        try:
            await store.migrate_identity(worktree_id, new_id)
        except OrcaError as exc:
            failure = exc  # the folder moved regardless: still re-key and announce it
        apply_move(facts, plan.old_path, plan.new_path)
        emit(contract.WorktreeRenamed(
            repo_id=repo_id, old_worktree_id=worktree_id, new_worktree_id=new_id,
            old_path=plan.old_path, new_path=plan.new_path, identity_migrated=failure is None,
        ))  # fmt: skip
        tracker.watcher.unwatch_worktree(repo_id, plan.old_path)
        await tracker.watcher.watch_worktree(repo_id, plan.new_path, row.admin_dir)
        # The branch changed under the moved row: publish it now, not on the next event.
        await tracker.rescan_repo_locked(repo_id)
    if failure is not None:
        raise errors.PeerUnavailable(
            f"moved {plan.old_path} to {plan.new_path} but store did not migrate its identity: "
            f"{failure}"
        ) from failure
    new_row = tracker.repos[repo_id].rows.get(plan.new_path)
    return contract.Renamed(
        old_worktree_id=worktree_id,
        new_worktree_id=new_id,
        path=plan.new_path,
        branch=(new_row.branch or "") if new_row is not None else "",
        display_name=plan.display_name,
    )


async def _rename_before_move(
    repo_path: str,
    store: StorePort,
    worktree_id: str,
    plan: RenamePlan,
    moves: bool,
    meta_patch: dict[str, Any],
) -> None:
    """Branch, display name, then the folder; each failure undoes what came before it."""
    if plan.new_branch is not None and plan.old_branch is not None:
        await run_git(repo_path, "branch", "-m", plan.old_branch, plan.new_branch)
    old_meta = store.view().meta.get(worktree_id)
    try:
        await store.patch_meta(worktree_id, {**meta_patch, "displayName": plan.display_name})
    except OrcaError as exc:
        await _undo_branch(repo_path, plan)
        raise errors.PeerUnavailable(f"store did not record the new name: {exc}") from exc
    if not moves:
        return
    try:
        await run_git(repo_path, "worktree", "move", plan.old_path, plan.new_path)
    except errors.GitFailure:
        await _undo_branch(repo_path, plan)
        with trio.CancelScope(shield=True):
            try:
                await store.patch_meta(
                    worktree_id, lifecycleplan.restore_patch(old_meta, meta_patch)
                )
            except OrcaError:
                log.warning("could not restore the meta of %s after a failed move", worktree_id)
        raise


async def _undo_branch(repo_path: str, plan: RenamePlan) -> None:
    if plan.new_branch is not None and plan.old_branch is not None:
        with trio.CancelScope(shield=True):
            await run_git(repo_path, "branch", "-m", plan.new_branch, plan.old_branch, check=False)
