"""Project gitwatch's facts into the model's records and the contract's Structs (pure).

The merge itself (display-name fallback, ownership, visibility) belongs to
``orca.model``; this module only adapts :class:`WorktreeFacts` to
:class:`GitWorktreeInfo` and to the wire shapes of ``orca.contracts.gitwatch``:

* a git repo: one row per worktree = ``to_detected_worktree(merge_worktree(...))``
  plus ``isDetached``, ``gitStatus`` (dirty counts, ``None`` until the first status
  is computed) and ``aheadBehind`` (``aheadbehind``; ``None`` without a comparison ref);
* a folder repo: its folder row, plus one row per folder-workspace instance id found
  in ``worktreeMeta`` for that repo (route B, seed 01 §5.1);
* a folder workspace of a project group (route A, seed 01 §5.1): one row with id
  ``folder:<uuid>`` and repo id ``folder-workspace:<groupId>``, projected by
  ``orca.model.merge.folder_workspace_to_worktree`` (git fields are placeholders; the
  folder is the user's, so its ownership is ``external`` and it is always shown);
* a fact change (``factstate``'s events) → the event Struct published for it.

Every text field goes through ``wiretext.display_text`` here (branch, lock and prune
reasons, unavailable reasons); paths need no escaping because ``factstate`` keeps only
representable ones as rows. So no fact read from disk can make an event unencodable.
"""

from __future__ import annotations

from collections.abc import Mapping

from actors.gitwatch.factstate import (
    FactEvent,
    RepoFacts,
    RepoWentUnavailable,
    WorktreeAdded,
    WorktreeChanged,
    WorktreeRemoved,
)
from actors.gitwatch.records import AheadBehind, DirtyCounts, WorktreeFacts
from actors.gitwatch.wiretext import display_text
from orca.contracts import gitwatch as contract
from orca.model.ids import (
    is_folder_workspace_instance_id,
    make_worktree_id,
    repo_id_of_worktree_id,
)
from orca.model.merge import (
    folder_workspace_to_worktree,
    merge_folder_workspace,
    merge_worktree,
)
from orca.model.naming import WorkspaceRootUnset, compute_workspace_root
from orca.model.ownership import to_detected_worktree
from orca.model.state import GlobalSettings
from orca.model.types_repo import FolderWorkspace, Repo
from orca.model.worktree import DetectedWorktree, GitWorktreeInfo, WorktreeMeta

FactWire = (
    contract.WorktreeAdded
    | contract.WorktreeChanged
    | contract.WorktreeRemoved
    | contract.RepoUnavailable
)


def facts_to_git_info(facts: WorktreeFacts) -> GitWorktreeInfo:
    return GitWorktreeInfo(
        path=facts.path,
        head=display_text(facts.head or ""),
        branch=display_text(facts.branch or ""),
        is_bare=facts.is_bare,
        locked=facts.is_locked,
        lock_reason=_text(facts.lock_reason),
        prunable=facts.is_prunable,
        prunable_reason=_text(facts.prune_reason),
        is_main_worktree=facts.is_main,
    )


def facts_to_git(facts: WorktreeFacts) -> contract.WorktreeGit:
    """The ``git`` of events and snapshots: the git info plus ``isDetached``."""
    return contract.WorktreeGit(
        path=facts.path,
        head=display_text(facts.head or ""),
        branch=display_text(facts.branch or ""),
        is_bare=facts.is_bare,
        locked=facts.is_locked,
        lock_reason=_text(facts.lock_reason),
        prunable=facts.is_prunable,
        prunable_reason=_text(facts.prune_reason),
        is_main_worktree=facts.is_main,
        is_detached=facts.is_detached,
        ahead_behind=ahead_behind(facts.ahead_behind),
    )


def _text(text: str | None) -> str | None:
    return None if text is None else display_text(text)


def ahead_behind(counts: AheadBehind | None) -> contract.AheadBehind | None:
    if counts is None:
        return None
    return contract.AheadBehind(
        ahead=counts.ahead, behind=counts.behind, against=display_text(counts.against)
    )


def git_status(dirty: DirtyCounts | None) -> contract.GitStatus | None:
    if dirty is None:
        return None
    return contract.GitStatus(
        staged=dirty.staged,
        unstaged=dirty.unstaged,
        untracked=dirty.untracked,
        conflicted=dirty.conflicted,
        total=dirty.total,
    )


def fact_event_to_wire(event: FactEvent) -> FactWire:
    """The event Struct published for a fact change."""
    if isinstance(event, WorktreeAdded):
        return contract.WorktreeAdded(
            repo_id=event.repo_id,
            worktree_id=make_worktree_id(event.repo_id, event.facts.path),
            git=facts_to_git(event.facts),
        )
    if isinstance(event, WorktreeChanged):
        return contract.WorktreeChanged(
            repo_id=event.repo_id,
            worktree_id=make_worktree_id(event.repo_id, event.facts.path),
            git=facts_to_git(event.facts),
            git_status=git_status(event.dirty),
        )
    if isinstance(event, WorktreeRemoved):
        return contract.WorktreeRemoved(
            repo_id=event.repo_id,
            worktree_id=make_worktree_id(event.repo_id, event.path),
            path=event.path,
        )
    assert isinstance(event, RepoWentUnavailable)
    return contract.RepoUnavailable(
        repo_id=event.repo_id, path=display_text(event.path), reason=display_text(event.reason)
    )


def snapshot_repo(facts: RepoFacts) -> contract.RepoSnapshot:
    """One repo's part of ``gitwatch.snapshot``."""
    return contract.RepoSnapshot(
        path=display_text(facts.path),
        kind=facts.kind,
        unavailable=_text(facts.unavailable),
        unrepresentable=unrepresentable_rows(facts),
        worktrees={
            path: contract.WorktreeSnapshot(
                git=facts_to_git(row), git_status=git_status(facts.dirty.get(path))
            )
            for path, row in facts.rows.items()
        },
    )


def unrepresentable_rows(facts: RepoFacts) -> list[contract.UnrepresentableWorktree]:
    """The worktrees of one repo withheld because their path cannot be published."""
    return [
        contract.UnrepresentableWorktree(
            repo_id=facts.repo_id, path=display_text(path), reason=reason
        )
        for path, reason in sorted(facts.unrepresentable.items())
    ]


def workspace_roots(repos: Mapping[str, Repo], settings: GlobalSettings) -> list[str]:
    roots: set[str] = set()
    for repo in repos.values():
        try:
            roots.add(compute_workspace_root(repo, settings))
        except WorkspaceRootUnset:
            continue
    return sorted(roots)


def _row(
    detected: DetectedWorktree,
    *,
    is_detached: bool,
    status: contract.GitStatus | None,
    counts: contract.AheadBehind | None = None,
) -> contract.WorktreeRow:
    fields = {f: getattr(detected, f) for f in detected.__struct_fields__}
    return contract.WorktreeRow(
        **fields, is_detached=is_detached, git_status=status, ahead_behind=counts
    )


def build_rows(
    facts: RepoFacts,
    repo: Repo,
    meta: Mapping[str, WorktreeMeta],
    roots: list[str],
) -> list[contract.WorktreeRow]:
    """The ``worktree.list`` rows of one repo (empty while it is unavailable)."""
    rows: list[contract.WorktreeRow] = []
    # Main worktree first, then by path: stable output whatever order rows arrived in.
    ordered = sorted(facts.rows.items(), key=lambda item: (not item[1].is_main, item[0]))
    for path, row in ordered:
        worktree_meta = meta.get(make_worktree_id(repo.id, path))
        merged = merge_worktree(repo.id, facts_to_git_info(row), worktree_meta, repo.display_name)
        detected = to_detected_worktree(merged, worktree_meta, repo, roots)
        status = git_status(facts.dirty.get(path))
        counts = ahead_behind(row.ahead_behind)
        rows.append(_row(detected, is_detached=row.is_detached, status=status, counts=counts))
    if facts.kind == "folder" and facts.rows:
        for worktree_id, instance_meta in meta.items():
            if repo_id_of_worktree_id(worktree_id) != repo.id:
                continue
            if not is_folder_workspace_instance_id(worktree_id):
                continue
            merged = merge_folder_workspace(repo, worktree_id, instance_meta)
            detected = to_detected_worktree(merged, instance_meta, repo, roots)
            rows.append(_row(detected, is_detached=False, status=None))
    return rows


def folder_workspace_rows(folders: list[FolderWorkspace]) -> list[contract.WorktreeRow]:
    """The ``worktree.list`` rows of route-A folder workspaces, by group then order."""
    rows: list[contract.WorktreeRow] = []
    ordered = sorted(folders, key=lambda f: (f.project_group_id, f.sort_order, f.id))
    for folder in ordered:
        worktree = folder_workspace_to_worktree(folder)
        fields = {f: getattr(worktree, f) for f in worktree.__struct_fields__}
        fields["display_name"] = display_text(worktree.display_name)
        detected = DetectedWorktree(**fields, ownership="external", visible=True)
        rows.append(_row(detected, is_detached=False, status=None))
    return rows
