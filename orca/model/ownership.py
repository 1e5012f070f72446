"""Who created a worktree, and whether the sidebar shows it (seed 01 §5.3, §8.2).

``git worktree list`` mixes worktrees Orca made, ones the user made by hand and
scratch trees agents make for themselves. Classification order:

1. **orca-managed** -- only when the meta carries *strong* evidence: a field only
   Orca writes (``orcaCreatedAt``, ``orcaCreationWorkspaceLayout``,
   ``createdWithAgent``, ``pushTarget``, ``sparsePresetId``). Never by path: a plain
   ``git worktree add`` can target Orca's nested workspace directory too, so only
   metadata proves Orca made it.
2. **agent-scratch** -- the path lies in an agent's scratch area (``.claude/worktrees/``).
3. **external** -- the path is outside every workspace root.
4. **unknown-legacy** -- inside a root but without evidence (e.g. older data).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Final

from orca.model.types_repo import Repo
from orca.model.worktree import DetectedWorktree, Worktree, WorktreeMeta, WorktreeOwnership

__all__ = [
    "AGENT_SCRATCH_PATH_MARKERS",
    "classify_worktree_ownership",
    "has_strong_orca_metadata",
    "is_agent_scratch_path",
    "to_detected_worktree",
]

# Path segments where coding agents create their own throw-away worktrees.
AGENT_SCRATCH_PATH_MARKERS: Final = ((".claude", "worktrees"),)


def has_strong_orca_metadata(meta: WorktreeMeta | None) -> bool:
    """True when ``meta`` holds a field only Orca writes when it creates a worktree."""
    if meta is None:
        return False
    return bool(
        meta.orca_created_at is not None
        or meta.orca_creation_workspace_layout
        or meta.created_with_agent
        or meta.push_target is not None
        or meta.sparse_preset_id
    )


def _segments(path: str) -> list[str]:
    return [p for p in path.replace("\\", "/").split("/") if p]


def is_agent_scratch_path(path: str) -> bool:
    """True when ``path`` contains an agent scratch marker followed by a worktree directory."""
    parts = _segments(path)
    for marker in AGENT_SCRATCH_PATH_MARKERS:
        n = len(marker)
        for i in range(len(parts) - n):  # the marker must have a child below it
            if tuple(parts[i : i + n]) == marker:
                return True
    return False


def _inside(root: str, path: str) -> bool:
    if not root or not os.path.isabs(root) or not os.path.isabs(path):
        return False
    rel = os.path.relpath(os.path.normpath(path), os.path.normpath(root))
    return rel != os.pardir and not rel.startswith(os.pardir + os.sep)


def classify_worktree_ownership(
    path: str, meta: WorktreeMeta | None, workspace_roots: Iterable[str]
) -> WorktreeOwnership:
    """Classify one worktree path (see the module docstring for the order)."""
    if has_strong_orca_metadata(meta):
        return "orca-managed"
    if is_agent_scratch_path(path):
        return "agent-scratch"
    if not any(_inside(root, path) for root in workspace_roots):
        return "external"
    return "unknown-legacy"


def _visible(worktree: Worktree, ownership: WorktreeOwnership, repo: Repo) -> bool:
    if worktree.is_main_worktree or ownership in ("orca-managed", "unknown-legacy"):
        return True
    if ownership == "agent-scratch":
        return repo.agent_worktree_visibility == "show"
    if worktree.path in repo.imported_external_worktree_paths:
        return True
    if repo.external_worktree_visibility is not None:
        return repo.external_worktree_visibility == "show"
    # Repos that predate hidden-by-default keep showing external worktrees.
    return bool(repo.external_worktree_visibility_legacy)


def to_detected_worktree(
    worktree: Worktree,
    meta: WorktreeMeta | None,
    repo: Repo,
    workspace_roots: Iterable[str],
) -> DetectedWorktree:
    """Attach ownership, ``selectedCheckout`` (the repo's main checkout) and visibility."""
    ownership = classify_worktree_ownership(worktree.path, meta, workspace_roots)
    fields = {f: getattr(worktree, f) for f in worktree.__struct_fields__}
    return DetectedWorktree(
        **fields,
        ownership=ownership,
        selected_checkout=worktree.is_main_worktree,
        visible=_visible(worktree, ownership, repo),
    )
