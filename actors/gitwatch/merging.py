"""``worktree.mergePreview`` and ``worktree.merge``: the trio side of a merge.

The merge itself is computed in memory (``mergecalc``, in a worker thread); this module
finds the worktree and the branch to merge into, refuses what must be refused before
anything is made (``mergeplan``'s rules), then moves refs.

Why a merge is atomic: every commit the merge needs exists (as an unreferenced object)
before any ref moves, and each ref moves by one compare-and-swap, ``git update-ref REF
NEW OLD`` (git's lock file: the ref is old or new, never half). Order for a rebase: the
worktree's branch first, then ``into``; a crash between the two leaves a rebased branch
that ``into`` is an ancestor of, and a repeated merge fast-forwards ``into`` to it.

The checkout of ``into`` (the repo's main worktree, usually): a checkout whose branch
moved without its files would show the merge as uncommitted changes undoing it, so a
clean one is fast-forwarded with ``git merge --ff-only`` (git's own fast-forward of
files and ref; untracked files are kept unless git would overwrite one, and then it
refuses), and a dirty one is refused before anything is made. The worktree whose
branch a rebase rewrites is clean (a dirty one is refused); its index and files follow
the branch with ``git read-tree -m -u OLD NEW`` (a two-tree fast-forward).

Both ops hold the repo's lock (``RepoTracker.repo_lock``) from the checks to the last
ref, so two merges, or a merge and a rename, never interleave in one repo.
"""

from __future__ import annotations

import os

import trio

from actors.gitwatch import errors
from actors.gitwatch.aheadbehind import Bases
from actors.gitwatch.factstate import RepoFacts
from actors.gitwatch.gitcli import run_git
from actors.gitwatch.lifecycle import fresh_facts, kept_facts_then_fresh
from actors.gitwatch.mergecalc import (
    MergeComputation,
    compute_merge,
    identity,
    open_for_merge,
    origin_head_branch,
    pick_into,
)
from actors.gitwatch.mergeplan import (
    HEADS,
    branch_ref,
    checkout_refusal,
    conflict_refusal,
    dirty_refusal,
    into_candidates,
    listed,
    numstat_totals,
    short_name,
    untracked_paths,
)
from actors.gitwatch.records import WorktreeFacts
from actors.gitwatch.storeview import StorePort, bases_of
from actors.gitwatch.tracker import RepoTracker
from orca.contracts import gitwatch as contract
from orca.model.ids import parse_worktree_id
from orca.model.types_repo import Repo
from orca.review import uncommitted


async def _find_worktree(
    tracker: RepoTracker, store: StorePort, worktree: str, *, rescan: bool = True
) -> tuple[Repo, WorktreeFacts]:
    """The repo and facts of the worktree named by id (or by its path): read again now,
    or (``rescan=False``, a preview) as the watcher keeps them if they name a worktree
    that can be merged (``kept_facts_then_fresh``)."""
    repo_id, path = _split_worktree(tracker, store, worktree)
    repo = await store.lookup_repo(repo_id)
    if repo is None:
        raise errors.RepoNotFound(f"no repo with id {repo_id!r}")
    if repo.kind == "folder":
        raise errors.CallerError(f"{repo.display_name!r} is a folder, not a git repository")

    def mergeable(facts: RepoFacts) -> WorktreeFacts:
        row = facts.rows.get(path)
        if row is None:
            raise errors.WorktreeNotFound(f"no worktree {worktree!r}")
        return _mergeable(row, path)

    if rescan:
        return repo, mergeable(await fresh_facts(tracker, repo))
    return repo, await kept_facts_then_fresh(tracker, repo, mergeable)


def _mergeable(row: WorktreeFacts, path: str) -> WorktreeFacts:
    """``row``, if its branch can be merged; else why not."""
    if row.is_main:
        raise errors.CallerError(
            f"{path} is the repo's main worktree: merge a linked worktree's branch into it"
        )
    if row.is_prunable:
        raise errors.WorktreeNotFound(f"worktree {path} is gone ({row.prune_reason})")
    if row.branch is None or row.is_detached or not row.branch.startswith(HEADS):
        raise errors.CallerError(f"{path} has a detached HEAD: there is no branch to merge")
    return row


def _split_worktree(tracker: RepoTracker, store: StorePort, worktree: str) -> tuple[str, str]:
    if os.path.isabs(worktree):
        for repo_id, facts in tracker.repos.items():
            if os.path.normpath(worktree) in facts.rows:
                return repo_id, os.path.normpath(worktree)
        raise errors.WorktreeNotFound(f"no worktree at {worktree}")
    try:
        parts = parse_worktree_id(worktree)
    except ValueError as exc:
        raise errors.CallerError(f"not a worktree id or path: {worktree!r} ({exc})") from exc
    return parts.repo_id, parts.path


def _compute(
    repo: Repo,
    row: WorktreeFacts,
    into: str | None,
    bases: Bases,
    mode: contract.MergeMode,
    *,
    write: bool,
    message: str | None,
) -> MergeComputation:
    """Blocking: pick ``into`` and compute the merge (a worker thread runs this)."""
    git = open_for_merge(repo.path)
    candidates = into_candidates(
        bases.by_path.get(row.path), bases.repo_base, origin_head_branch(git)
    )
    assert row.branch is not None
    own = row.branch
    chosen = pick_into(git, into, [c for c in candidates if c != own])
    if chosen == own:
        raise errors.CallerError(f"{row.path} is on {short_name(own)}: it cannot merge into itself")
    return compute_merge(git, own, chosen, mode, write=write, message=message)


async def _status_lines(path: str, *, untracked: bool) -> list[str]:
    if untracked:
        lines = await uncommitted(path)
    else:
        result = await run_git(
            path, "--no-optional-locks", "status", "--porcelain=v1", "--untracked-files=no",
            check=False,
        )  # fmt: skip
        lines = (
            [ln for ln in result.stdout.splitlines() if ln.strip()]
            if result.returncode == 0
            else None
        )
    if lines is None:
        raise errors.RepoUnavailable(f"git could not read the status of {path}")
    return lines


# Untracked files are read to count their lines (what `git add -N` + diff would say):
# at most this many, each up to this size (a variant that dropped a data set in its
# worktree is not read whole).
UNTRACKED_COUNTED = 200
UNTRACKED_READ_BYTES = 1 << 20


async def uncommitted_diffstat(path: str, lines: list[str]) -> contract.Diffstat:
    """The worktree's uncommitted changes as a diffstat (issue 40 item 6: an agent that
    leaves its edits uncommitted, as Claude Code does by default, changed something):
    tracked changes against HEAD, staged or not, plus every untracked file (its lines
    as insertions)."""
    if not lines:
        return contract.Diffstat(files=0, insertions=0, deletions=0)
    result = await run_git(path, "--no-optional-locks", "diff", "--numstat", "HEAD", check=False)
    files, insertions, deletions = numstat_totals(result.stdout if result.returncode == 0 else "")
    untracked = [ln for ln in lines if ln.startswith("?? ")]
    readable = untracked_paths(untracked)[:UNTRACKED_COUNTED]

    def count_lines() -> int:
        total = 0
        for name in readable:
            try:
                with open(os.path.join(path, name), "rb") as f:
                    total += f.read(UNTRACKED_READ_BYTES).count(b"\n")
            except OSError:
                continue
        return total

    insertions += await trio.to_thread.run_sync(count_lines)
    return contract.Diffstat(
        files=files + len(untracked), insertions=insertions, deletions=deletions
    )


async def preview_merge(
    tracker: RepoTracker, store: StorePort, args: contract.MergePreviewArgs
) -> contract.MergePreview:
    # The facts the watcher keeps: a preview per variant of a run (`orca run show`) is
    # not a scan of every worktree each. What it reports is read live (the branch's
    # and the target's tips, the status); a merge reads everything again.
    repo, row = await _find_worktree(tracker, store, args.worktree, rescan=False)
    into = branch_ref(args.into) if args.into is not None else None
    found = await trio.to_thread.run_sync(
        lambda: _compute(
            repo, row, into, bases_of(store.view(), repo.id), args.mode, write=False, message=None
        )
    )
    lines = await _status_lines(row.path, untracked=True)
    checkout = _checkout_of(tracker, repo.id, found.into)
    checkout_dirty = checkout is not None and bool(
        await _status_lines(checkout.path, untracked=False)
    )
    assert row.branch is not None
    return contract.MergePreview(
        uncommitted_diffstat=await uncommitted_diffstat(row.path, lines),
        into=short_name(found.into),
        branch=short_name(row.branch),
        mode=args.mode,
        ahead=found.ahead,
        behind=found.behind,
        diffstat=contract.Diffstat(
            files=found.files, insertions=found.insertions, deletions=found.deletions
        ),
        conflicts=found.conflicts,
        dirty=bool(lines),
        uncommitted=listed(lines),
        checkout=checkout.path if checkout is not None else "",
        checkout_dirty=checkout_dirty,
    )


async def merge_worktree(
    tracker: RepoTracker, store: StorePort, args: contract.MergeArgs
) -> contract.MergeResult:
    repo, _row = await _find_worktree(tracker, store, args.worktree)
    into = branch_ref(args.into) if args.into is not None else None
    async with tracker.repo_lock(repo.id):
        row = tracker.repos[repo.id].rows.get(_row.path, _row)
        lines = await _status_lines(row.path, untracked=True)
        committed = ""
        if lines and args.commit_first:
            committed = await _commit_all(repo.path, row, args.commit_message)
        elif lines:
            raise dirty_refusal(row.path, lines)
        # The commits are made here, unreferenced until the refs move: a refusal below
        # leaves only objects nobody points at.
        made = await trio.to_thread.run_sync(
            lambda: _compute(
                repo, row, into, bases_of(store.view(), repo.id), args.mode,
                write=True, message=args.message,
            )
        )  # fmt: skip
        assert row.branch is not None
        if made.conflicts:
            raise conflict_refusal(row.branch, made.into, args.mode, made.conflicts)
        checkout = _checkout_of(tracker, repo.id, made.into)
        if checkout is not None and made.new_into is not None:
            dirty = await _status_lines(checkout.path, untracked=False)
            if dirty:
                raise checkout_refusal(checkout.path, made.into, dirty)
        if made.new_branch is not None:
            await _move_branch(repo.path, row, made)
        updated = False
        if made.new_into is not None:
            updated = await _move_into(repo.path, checkout, made, args.mode, row.branch)
        await tracker.rescan_repo_locked(repo.id)
    return contract.MergeResult(
        into=short_name(made.into),
        commit=made.new_into or made.into_tip,
        mode=args.mode,
        previous=made.into_tip,
        changed=made.new_into is not None,
        checkout_updated=updated,
        committed=committed,
    )


async def _commit_all(repo_path: str, row: WorktreeFacts, message: str | None) -> str:
    """Commit every uncommitted change of the worktree on its branch (hooks run); its id."""
    assert row.branch is not None
    text = message or f"{short_name(row.branch)}: uncommitted work, committed to merge it\n"
    who = await trio.to_thread.run_sync(lambda: identity(open_for_merge(repo_path)).committer)
    await run_git(row.path, "add", "-A")
    done = await run_git(
        row.path, "-c", f"user.name={who.name}", "-c", f"user.email={who.email}",
        "commit", "-q", "-m", text, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise errors.StateConflict(
            f"{row.path}: its changes could not be committed: {(done.stderr or done.stdout).strip()}"
        )
    return (await run_git(row.path, "rev-parse", "HEAD")).stdout.strip()


def _checkout_of(tracker: RepoTracker, repo_id: str, ref: str) -> WorktreeFacts | None:
    """The worktree that has ``ref`` checked out (git allows one), if any."""
    for facts in tracker.repos[repo_id].rows.values():
        if facts.branch == ref and not facts.is_prunable and not facts.is_bare:
            return facts
    return None


async def _update_ref(repo_path: str, ref: str, new: str, old: str, why: str) -> None:
    result = await run_git(repo_path, "update-ref", "-m", why, ref, new, old, check=False)
    if result.returncode != 0:
        raise errors.StateConflict(
            f"{short_name(ref)} moved while merging (nothing of it changed): "
            f"{result.stderr.strip()}"
        )


async def _move_branch(repo_path: str, row: WorktreeFacts, made: MergeComputation) -> None:
    """A rebase: the worktree's branch moves to its rebased tip, its files with it."""
    assert row.branch is not None and made.new_branch is not None
    why = f"orca: rebase {short_name(row.branch)} onto {short_name(made.into)}"
    await _update_ref(repo_path, row.branch, made.new_branch, made.branch_tip, why)
    # The worktree was clean at branch_tip: bring its index and files to the new tree.
    await run_git(row.path, "read-tree", "-m", "-u", made.branch_tip, made.new_branch)


async def _move_into(
    repo_path: str,
    checkout: WorktreeFacts | None,
    made: MergeComputation,
    mode: contract.MergeMode,
    branch: str,
) -> bool:
    """``into`` moves to the merge; True when a checkout of it was fast-forwarded."""
    assert made.new_into is not None
    why = f"orca: {mode} {short_name(branch)} into {short_name(made.into)}"
    if checkout is None:
        await _update_ref(repo_path, made.into, made.new_into, made.into_tip, why)
        return False
    result = await run_git(
        checkout.path, "merge", "--ff-only", "--no-edit", "-q", made.new_into, check=False
    )
    if result.returncode != 0:
        raise errors.StateConflict(
            f"{checkout.path} (where {short_name(made.into)} is checked out) could not be "
            f"fast-forwarded, so {short_name(made.into)} did not move: {result.stderr.strip()}"
        )
    return True
