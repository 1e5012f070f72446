"""A merge computed in memory with libgit2 (blocking: the shell runs it in a thread).

Nothing here touches a working tree, an index file or a ref. libgit2 merges two commits
(or, for a rebase, replays each commit onto the last) into an in-memory index; a clean
index is written as a tree object, and only when asked (``write``) are commit objects
made. Objects nobody points at are harmless (git's gc drops them), which is what makes
``worktree.merge`` atomic: every new object exists before any ref moves, and the refs
then move by compare-and-swap in the shell (``merging``).

A rebase replays the branch's own commits (those ``into`` lacks, oldest first, merge
commits dropped as ``git rebase`` drops them), each as a three-way merge of its
parent's tree, the tree built so far and its own tree; a commit whose change is
already there (its replay changes nothing) is skipped, so repeating a rebase that
half-happened converges instead of duplicating commits.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace

import pygit2
from pygit2.enums import SortMode

from actors.gitwatch import errors
from actors.gitwatch.gitfacts import open_repository
from actors.gitwatch.mergeplan import default_message, short_name
from orca.contracts.gitwatch import MergeMode

# Fallback identity for merge commits when neither the environment nor git config
# names one (git itself would refuse; a background service should still merge).
FALLBACK_NAME = "Orca"
FALLBACK_EMAIL = "orca@localhost"
_ORIGIN_HEAD = "refs/remotes/origin/HEAD"
_HEADS = "refs/heads/"


@dataclass(frozen=True, slots=True)
class MergeComputation:
    """What merging ``branch`` into ``into`` gives (hex ids; None: that ref stays)."""

    into: str  # full ref
    into_tip: str
    branch_tip: str
    ahead: int
    behind: int
    files: int
    insertions: int
    deletions: int
    conflicts: list[str]
    new_into: str | None  # the commit ``into`` moves to
    new_branch: str | None  # rebase only: the commit the worktree's branch moves to
    new_branch_tree: str | None = None  # its tree (the worktree's files follow it)
    branch_tree: str | None = None


def open_for_merge(repo_path: str) -> pygit2.Repository:
    repo = open_repository(repo_path)
    if repo is None:
        raise errors.StateConflict(
            f"{repo_path}: libgit2 cannot read this repository (SHA-256 or a newer "
            "format), so Orca cannot merge in it; merge with git itself"
        )
    return repo


def pick_into(repo: pygit2.Repository, named: str | None, candidates: Sequence[str]) -> str:
    """The full ref of the branch to merge into: ``named`` if given (it must exist; a
    remote-tracking name, ``origin/main`` as a run's base may be, means its local
    branch), else the first candidate that exists."""
    if named is not None:
        if repo.references.get(named) is not None:
            return named
        short = short_name(named)
        rest = short.partition("/")[2]
        tracking = repo.references.get(f"refs/remotes/{short}") if rest else None
        if tracking is not None and repo.references.get(_HEADS + rest) is not None:
            return _HEADS + rest
        raise errors.MissingTarget(f"no branch {short!r} in {repo.workdir}")
    for ref in candidates:
        if repo.references.get(ref) is not None:
            return ref
    raise errors.MissingTarget(
        "no branch to merge into: no base is recorded and the repo has no main or master "
        "branch; name one (into)"
    )


def origin_head_branch(repo: pygit2.Repository) -> str | None:
    """``origin/HEAD``'s target as a remote ref name (``refs/remotes/origin/main``)."""
    try:
        ref = repo.references.get(_ORIGIN_HEAD)
        target = ref.target if ref is not None else None
    except (pygit2.GitError, ValueError):
        return None
    return target if isinstance(target, str) else None


def compute_merge(
    repo: pygit2.Repository,
    branch: str,
    into: str,
    mode: MergeMode,
    *,
    write: bool,
    message: str | None = None,
) -> MergeComputation:
    """Merge ``branch`` into ``into`` (full refs) in memory; commits only when ``write``."""
    branch_tip = _tip(repo, branch)
    into_tip = _tip(repo, into)
    base = repo.merge_base(branch_tip.id, into_tip.id)
    if base is None:
        raise errors.StateConflict(
            f"{short_name(branch)} and {short_name(into)} share no history; nothing to merge"
        )
    ahead, behind = repo.ahead_behind(branch_tip.id, into_tip.id)
    stats = repo[base].peel(pygit2.Tree).diff_to_tree(branch_tip.tree).stats
    found = MergeComputation(
        into=into,
        into_tip=str(into_tip.id),
        branch_tip=str(branch_tip.id),
        ahead=ahead,
        behind=behind,
        files=stats.files_changed,
        insertions=stats.insertions,
        deletions=stats.deletions,
        conflicts=[],
        new_into=None,
        new_branch=None,
        branch_tree=str(branch_tip.tree.id),
    )
    if ahead == 0:
        return found  # every commit of the branch is in ``into`` already
    if mode == "rebase":
        return _rebase(repo, found, branch_tip, into_tip, write=write)
    index = repo.merge_commits(into_tip.id, branch_tip.id)
    conflicts = _conflict_paths(index)
    if conflicts:
        return replace(found, conflicts=conflicts)
    if mode == "merge" and not write:
        return replace(found, new_into="")  # would move (the tree is not needed to say so)
    tree = index.write_tree(repo)
    if mode == "squash" and tree == into_tip.tree.id:
        return found  # the branch's change is in ``into`` already
    if not write:
        return replace(found, new_into="")  # would move; no commit made for a preview
    text = message or default_message(mode, branch, into, _subjects(repo, branch_tip, into_tip))
    parents = [into_tip.id, branch_tip.id] if mode == "merge" else [into_tip.id]
    who = identity(repo)
    made = repo.create_commit(None, who.author, who.committer, text, tree, parents)
    return replace(found, new_into=str(made))


def _rebase(
    repo: pygit2.Repository,
    found: MergeComputation,
    branch_tip: pygit2.Commit,
    into_tip: pygit2.Commit,
    *,
    write: bool,
) -> MergeComputation:
    if found.behind == 0:
        # ``into`` is an ancestor: the branch is rebased already; fast-forward to it.
        return replace(found, new_into=found.branch_tip)
    committer = identity(repo).committer if write else None
    current_tree = into_tip.tree
    current_id = into_tip.id
    for commit in _own_commits(repo, branch_tip, into_tip):
        index = repo.merge_trees(commit.parents[0].tree, current_tree, commit.tree)
        conflicts = _conflict_paths(index)
        if conflicts:
            return replace(found, conflicts=conflicts)
        tree_id = index.write_tree(repo)
        if tree_id == current_tree.id:
            continue  # already in ``into``: git rebase drops such a commit too
        current_tree = repo[tree_id].peel(pygit2.Tree)
        if committer is not None:
            current_id = repo.create_commit(
                None, commit.author, committer, commit.message, tree_id, [current_id]
            )
    if current_tree.id == into_tip.tree.id and current_id == into_tip.id:
        # Every commit was already in ``into``: the branch simply moves there.
        return replace(found, new_branch=found.into_tip, new_branch_tree=str(into_tip.tree.id))
    tip = str(current_id) if write else ""
    return replace(found, new_into=tip, new_branch=tip, new_branch_tree=str(current_tree.id))


def _own_commits(
    repo: pygit2.Repository, branch_tip: pygit2.Commit, into_tip: pygit2.Commit
) -> list[pygit2.Commit]:
    """The branch's commits ``into`` lacks, oldest first, without merge commits."""
    walker = repo.walk(branch_tip.id, SortMode.TOPOLOGICAL | SortMode.REVERSE)
    walker.hide(into_tip.id)
    return [c for c in walker if len(c.parents) == 1]


def _subjects(
    repo: pygit2.Repository, branch_tip: pygit2.Commit, into_tip: pygit2.Commit
) -> list[str]:
    return [c.message.split("\n", 1)[0] for c in _own_commits(repo, branch_tip, into_tip)]


def _tip(repo: pygit2.Repository, ref_name: str) -> pygit2.Commit:
    try:
        ref = repo.references.get(ref_name)
        if ref is None:
            raise errors.MissingTarget(f"no branch {short_name(ref_name)!r}")
        commit = repo[ref.resolve().target].peel(pygit2.Commit)
    except (pygit2.GitError, KeyError, ValueError) as exc:
        raise errors.GitFailure(f"cannot read {ref_name}: {exc}") from exc
    assert isinstance(commit, pygit2.Commit)
    return commit


def _conflict_paths(index: pygit2.Index) -> list[str]:
    conflicts = index.conflicts
    if conflicts is None:
        return []
    paths = set()
    for ancestor, ours, theirs in conflicts:
        entry = ours or theirs or ancestor
        if entry is not None:
            paths.add(entry.path)
    return sorted(paths)


@dataclass(frozen=True, slots=True)
class Identity:
    author: pygit2.Signature
    committer: pygit2.Signature


def identity(repo: pygit2.Repository) -> Identity:
    """Who makes the commits, as git decides: ``GIT_AUTHOR_*``/``GIT_COMMITTER_*``, then
    ``user.name``/``user.email``, then :data:`FALLBACK_NAME`."""
    try:
        configured = repo.default_signature
        name, email = configured.name, configured.email
    except (pygit2.GitError, KeyError, ValueError):
        name, email = FALLBACK_NAME, FALLBACK_EMAIL

    def who(role: str) -> pygit2.Signature:
        return pygit2.Signature(
            os.environ.get(f"GIT_{role}_NAME") or name,
            os.environ.get(f"GIT_{role}_EMAIL") or email,
        )

    return Identity(author=who("AUTHOR"), committer=who("COMMITTER"))
