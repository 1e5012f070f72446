"""Hydration: keep only session rows that point at workspaces that still exist (seed 01 §3 step 3, §7.3).

A session written before a worktree was deleted outside Orca still names it.
:func:`hydrate_workspace_session` drops every row keyed by an unknown worktree
id (keys may be bare ids, ``worktree:`` keys or host-qualified, see
``orca.model.session_keys``), then repairs what hangs off those rows:

* tab groups survive only for surviving workspaces; unified tabs only when
  their group survives; each split tree is pruned to its surviving groups
  (``prune_tab_group_layout``) and dropped when nothing is left;
* a terminal layout (and its tab's unsupported-PTY mark) survives only when a
  surviving tab still refers to it;
* active pointers that name a dropped workspace or group become None;
* diff-like tabs are dropped (``session_restore.drop_transient_tabs``).

``folder:`` keys are kept unless ``valid_folder_workspace_ids`` is given. Rows
the store cannot judge (malformed keys) are dropped: they can never be shown.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, TypeVar

import msgspec

from orca.model.layout import prune_tab_group_layout
from orca.model.session import WORKTREE_ID_KEYED_SESSION_FIELDS, WorkspaceSessionState
from orca.model.session_keys import parse_session_key
from orca.model.session_restore import drop_transient_tabs
from orca.model.tabs import Tab, TabGroup, TabGroupLayoutNode

__all__ = ["hydrate_workspace_session"]

V = TypeVar("V")


def _keep_rows(
    rows: Mapping[str, V], valid_ids: Collection[str], valid_folder_ids: Collection[str] | None
) -> dict[str, V]:
    kept: dict[str, V] = {}
    for key, value in rows.items():
        ref = parse_session_key(key)
        if ref is None:
            continue
        if ref.kind == "worktree" and ref.id not in valid_ids:
            continue
        if ref.kind == "folder" and valid_folder_ids is not None and ref.id not in valid_folder_ids:
            continue
        kept[key] = value
    return kept


def _key_ok(
    key: str | None, valid_ids: Collection[str], valid_folder_ids: Collection[str] | None
) -> bool:
    return key is not None and bool(_keep_rows({key: None}, valid_ids, valid_folder_ids))


def _repair_tabs(
    groups: dict[str, tuple[TabGroup, ...]] | None,
    tabs: dict[str, tuple[Tab, ...]] | None,
    layouts: dict[str, TabGroupLayoutNode],
) -> tuple[dict[str, tuple[Tab, ...]] | None, dict[str, TabGroupLayoutNode]]:
    if groups is None:
        return tabs, layouts
    group_ids = {key: {g.id for g in gs} for key, gs in groups.items()}
    if tabs is not None:
        tabs = {
            key: tuple(t for t in ts if t.group_id in group_ids.get(key, ()))
            for key, ts in tabs.items()
        }
    pruned: dict[str, TabGroupLayoutNode] = {}
    for key, node in layouts.items():
        kept = prune_tab_group_layout(node, group_ids.get(key, set()))
        if kept is not None:
            pruned[key] = kept
    return tabs, pruned


def hydrate_workspace_session(
    session: WorkspaceSessionState,
    valid_worktree_ids: Collection[str],
    valid_folder_workspace_ids: Collection[str] | None = None,
) -> WorkspaceSessionState:
    """A copy of ``session`` without rows for unknown workspaces (see module docstring)."""
    valid, folders = valid_worktree_ids, valid_folder_workspace_ids
    changes: dict[str, Any] = {}
    for field in WORKTREE_ID_KEYED_SESSION_FIELDS:
        rows = getattr(session, field)
        changes[field] = None if rows is None else _keep_rows(rows, valid, folders)

    tabs, layouts = _repair_tabs(
        changes["tab_groups"], changes["unified_tabs"], changes["tab_group_layouts"]
    )
    changes["unified_tabs"], changes["tab_group_layouts"] = tabs, layouts
    if changes["tab_groups"] is not None:
        live_groups = {g.id for gs in changes["tab_groups"].values() for g in gs}
        changes["active_group_id_by_worktree"] = {
            k: g for k, g in changes["active_group_id_by_worktree"].items() if g in live_groups
        }

    live_tab_ids = {t.id for ts in changes["tabs_by_worktree"].values() for t in ts}
    for ts in (tabs or {}).values():
        live_tab_ids.update(t.id for t in ts if t.content_type == "terminal")
        live_tab_ids.update(t.entity_id for t in ts if t.content_type == "terminal")
    changes["terminal_layouts_by_tab_id"] = {
        k: v for k, v in session.terminal_layouts_by_tab_id.items() if k in live_tab_ids
    }
    changes["unsupported_pty_ids_by_tab_id"] = {
        k: v for k, v in session.unsupported_pty_ids_by_tab_id.items() if k in live_tab_ids
    }

    if not _key_ok(session.active_worktree_id, valid, folders):
        changes["active_worktree_id"] = None
    if not _key_ok(session.active_workspace_key, valid, folders):
        changes["active_workspace_key"] = None
    changes["active_worktree_ids_on_shutdown"] = tuple(
        w for w in session.active_worktree_ids_on_shutdown if w in valid
    )
    return drop_transient_tabs(msgspec.structs.replace(session, **changes))
