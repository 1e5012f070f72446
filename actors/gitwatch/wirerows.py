"""Project gitwatch's facts into the model's records and wire dicts (pure).

The merge itself (display-name fallback, ownership, visibility) belongs to
``orca.model``; this module only adapts :class:`WorktreeFacts` to
:class:`GitWorktreeInfo` and assembles the ``worktree.list`` rows:

* a git repo: one row per worktree = ``to_detected_worktree(merge_worktree(...))``;
* a folder repo: its folder row, plus one row per folder-workspace instance id found
  in ``worktreeMeta`` for that repo (route B, seed 01 §5.1).

Each row is the DetectedWorktree's camelCase dict plus ``gitStatus`` (dirty counts,
``null`` until the first status is computed): a new optional field, safe on the wire.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import msgspec

from actors.gitwatch.factstate import RepoFacts
from actors.gitwatch.gitfacts import DirtyCounts, WorktreeFacts
from orca.model.codec import EXTRA_WIRE_KEY, to_builtins
from orca.model.ids import (
    is_folder_workspace_instance_id,
    make_worktree_id,
    repo_id_of_worktree_id,
)
from orca.model.merge import merge_folder_workspace, merge_worktree
from orca.model.naming import WorkspaceRootUnset, compute_workspace_root
from orca.model.ownership import to_detected_worktree
from orca.model.state import GlobalSettings
from orca.model.types_repo import Repo
from orca.model.worktree import GitWorktreeInfo, WorktreeMeta


def facts_to_git_info(facts: WorktreeFacts) -> GitWorktreeInfo:
    return GitWorktreeInfo(
        path=facts.path,
        head=facts.head or "",
        branch=facts.branch or "",
        is_bare=facts.is_bare,
        locked=facts.is_locked,
        lock_reason=facts.lock_reason,
        prunable=facts.is_prunable,
        prunable_reason=facts.prune_reason,
        is_main_worktree=facts.is_main,
    )


def facts_to_wire(facts: WorktreeFacts) -> dict[str, Any]:
    wire = _complete(facts_to_git_info(facts))
    wire["isDetached"] = facts.is_detached
    return wire


def _complete(record: msgspec.Struct) -> dict[str, Any]:
    """The record's wire dict with defaults written out (listings are read by people and
    scripts, which should not need the model's defaults to see ``visible: true``)."""
    wire = to_builtins(record)
    for name, encode_name in _wire_names(type(record)):
        if encode_name not in wire:
            wire[encode_name] = msgspec.to_builtins(getattr(record, name))
    return wire


@functools.cache
def _wire_names(cls: type[msgspec.Struct]) -> tuple[tuple[str, str], ...]:
    # msgspec.structs.fields evaluates annotations (~7 ms a call): once per class.
    return tuple(
        (f.name, f.encode_name)
        for f in msgspec.structs.fields(cls)
        if f.encode_name != EXTRA_WIRE_KEY
    )


def dirty_to_wire(dirty: DirtyCounts | None) -> dict[str, int] | None:
    if dirty is None:
        return None
    return {
        "staged": dirty.staged,
        "unstaged": dirty.unstaged,
        "untracked": dirty.untracked,
        "conflicted": dirty.conflicted,
        "total": dirty.total,
    }


def workspace_roots(repos: Mapping[str, Repo], settings: GlobalSettings) -> list[str]:
    roots: set[str] = set()
    for repo in repos.values():
        try:
            roots.add(compute_workspace_root(repo, settings))
        except WorkspaceRootUnset:
            continue
    return sorted(roots)


def build_rows(
    facts: RepoFacts,
    repo: Repo,
    meta: Mapping[str, WorktreeMeta],
    roots: list[str],
) -> list[dict[str, Any]]:
    """The ``worktree.list`` rows of one repo (empty while it is unavailable)."""
    rows: list[dict[str, Any]] = []
    # Main worktree first, then by path: stable output whatever order rows arrived in.
    ordered = sorted(facts.rows.items(), key=lambda item: (not item[1].is_main, item[0]))
    for path, row in ordered:
        worktree_meta = meta.get(make_worktree_id(repo.id, path))
        merged = merge_worktree(repo.id, facts_to_git_info(row), worktree_meta, repo.display_name)
        detected = to_detected_worktree(merged, worktree_meta, repo, roots)
        wire = _complete(detected)
        wire["isDetached"] = row.is_detached
        wire["gitStatus"] = dirty_to_wire(facts.dirty.get(path))
        rows.append(wire)
    if facts.kind == "folder" and facts.rows:
        for worktree_id, instance_meta in meta.items():
            if repo_id_of_worktree_id(worktree_id) != repo.id:
                continue
            if not is_folder_workspace_instance_id(worktree_id):
                continue
            merged = merge_folder_workspace(repo, worktree_id, instance_meta)
            detected = to_detected_worktree(merged, instance_meta, repo, roots)
            instance_wire = _complete(detected)
            instance_wire["gitStatus"] = None
            rows.append(instance_wire)
    return rows
