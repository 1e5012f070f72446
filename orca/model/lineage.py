"""Which lineage row still describes a worktree: instance ids fence reused paths (seed 01 §4.4).

A worktree id is derived from its path, so a path that is deleted and reused by a new
worktree gets the old id back. ``WorktreeMeta.instanceId`` does not drift: it is minted
per instance. A lineage row records both halves for the child and for the parent, and
:func:`current_parent` serves a row as the worktree's parent only while both still
agree with the metas:

* the child: the row's ``worktreeInstanceId`` must be the current meta's instanceId (a
  row written for an earlier worktree at this path is stale);
* the parent: when a meta exists at ``parentWorktreeId`` its instanceId must be the
  row's ``parentWorktreeInstanceId`` (otherwise a new worktree took the parent's path;
  the parent itself is gone). A parent without a meta is simply gone: the row stands.

A meta without an instanceId (written before instance ids) cannot prove anything either
way and does not fence.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from orca.model.worktree import WorktreeLineage, WorktreeMeta

__all__ = ["LineageVerdict", "current_parent", "lineage_mismatch"]

LineageVerdict = Literal["current", "stale_child", "stale_parent", "none"]


def _differs(meta: WorktreeMeta | None, instance_id: str) -> bool:
    return meta is not None and meta.instance_id is not None and meta.instance_id != instance_id


def lineage_mismatch(
    metas: Mapping[str, WorktreeMeta], lineage: WorktreeLineage
) -> LineageVerdict | None:
    """``stale_child``/``stale_parent`` when the metas contradict ``lineage``, else None."""
    if _differs(metas.get(lineage.worktree_id), lineage.worktree_instance_id):
        return "stale_child"
    if _differs(metas.get(lineage.parent_worktree_id), lineage.parent_worktree_instance_id):
        return "stale_parent"
    return None


def current_parent(
    metas: Mapping[str, WorktreeMeta],
    rows: Mapping[str, WorktreeLineage],
    worktree_id: str,
) -> tuple[WorktreeLineage | None, LineageVerdict]:
    """The lineage row to serve for ``worktree_id`` (None unless current) and why."""
    row = rows.get(worktree_id)
    if row is None:
        return None, "none"
    mismatch = lineage_mismatch(metas, row)
    if mismatch is not None:
        return None, mismatch
    return row, "current"
