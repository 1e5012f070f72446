"""What a session brings back after a restart (seed 01 §6.2, §7.3, §8.5).

Two pure rules applied when a stored session is loaded (and by hydration):

* :func:`drop_transient_tabs`: of the seven tab content types only the four
  ``WORKSPACE_VISIBLE_TAB_TYPES`` (terminal, editor, browser, simulator) come back;
  diff-like views (diff, conflict-review, check-details) are rebuilt from git on demand,
  so their rows are dropped from ``unifiedTabs`` and from every tab group's order, MRU
  stack and active pointer. Everything else of the session is kept as it is.
* :func:`synthesize_unified_tabs`: a session written by a build without the unified tab
  model (``unifiedTabs``/``tabGroups`` absent) gets one tab group per workspace key,
  folded from the legacy ``tabsByWorktree`` (terminals, by ``sortOrder``) and
  ``openFilesByWorktree`` (editors, in file order). The legacy fields stay as they are
  (the bare-field rule, seed 01 §8.5: a downgraded build still reads its own tabs).

Invariant: both return the very same object when there is nothing to change, so a
caller can tell "changed" by identity.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from orca.model.session import WorkspaceSessionState
from orca.model.tabs import WORKSPACE_VISIBLE_TAB_TYPES, Tab, TabGroup, TabGroupLeaf

__all__ = [
    "drop_transient_tabs",
    "has_legacy_tabs_to_fold",
    "legacy_only",
    "restore_session_on_load",
    "synthesize_unified_tabs",
]

replace = msgspec.structs.replace


def group_without_tabs(group: TabGroup, slots: set[str]) -> TabGroup:
    """``group`` without the tab slots ``slots`` (order, recent list, and an active tab
    that was removed falls back to the most recent, else the first)."""
    touched = slots.intersection(group.tab_order) or group.active_tab_id in slots
    if not touched and not (group.recent_tab_ids and slots.intersection(group.recent_tab_ids)):
        return group
    order = tuple(t for t in group.tab_order if t not in slots)
    recent = (
        None
        if group.recent_tab_ids is None
        else tuple(t for t in group.recent_tab_ids if t not in slots)
    )
    active = group.active_tab_id
    if active in slots:
        active = recent[-1] if recent else (order[0] if order else None)
    return replace(group, tab_order=order, recent_tab_ids=recent, active_tab_id=active)


def drop_transient_tabs(session: WorkspaceSessionState) -> WorkspaceSessionState:
    """``session`` without its diff-like tabs (see the module docstring)."""
    if session.unified_tabs is None:
        return session
    transient = {
        t.id
        for tabs in session.unified_tabs.values()
        for t in tabs
        if t.content_type not in WORKSPACE_VISIBLE_TAB_TYPES
    }
    if not transient:
        return session
    tabs = {
        key: tuple(t for t in rows if t.id not in transient)
        for key, rows in session.unified_tabs.items()
    }
    changes: dict[str, Any] = {"unified_tabs": tabs}
    if session.tab_groups is not None:
        changes["tab_groups"] = {
            key: tuple(group_without_tabs(g, transient) for g in groups)
            for key, groups in session.tab_groups.items()
        }
    return replace(session, **changes)


def _legacy_tabs(session: WorkspaceSessionState, key: str, group_id: str) -> list[Tab]:
    host = session.active_workspace_execution_host_id
    tabs: list[Tab] = []
    terminals = sorted(session.tabs_by_worktree.get(key, ()), key=lambda t: t.sort_order)
    for terminal in terminals:
        tabs.append(
            Tab(
                id=terminal.id,
                entity_id=terminal.id,
                group_id=group_id,
                worktree_id=terminal.worktree_id,
                execution_host_id=host,
                content_type="terminal",
                label=terminal.custom_title or terminal.title or terminal.default_title or "",
                custom_label=terminal.custom_title,
                color=terminal.color,
                sort_order=len(tabs),
                created_at=terminal.created_at,
                is_pinned=terminal.is_pinned,
            )
        )
    for file in session.open_files_by_worktree.get(key, ()):
        tabs.append(
            Tab(
                id=file.file_path,  # an editor's slot is its file path (orca.model.tabs)
                entity_id=file.file_path,
                group_id=group_id,
                worktree_id=file.worktree_id,
                execution_host_id=host,
                content_type="editor",
                label=file.relative_path or file.file_path,
                sort_order=len(tabs),
                is_preview=file.is_preview,
            )
        )
    return tabs


def _active_slot(session: WorkspaceSessionState, key: str, order: tuple[str, ...]) -> str | None:
    wanted: list[str | None] = [session.active_tab_id_by_worktree.get(key)]
    if session.active_tab_type_by_worktree.get(key) == "editor":
        wanted.insert(0, session.active_file_id_by_worktree.get(key))
    for slot in wanted:
        if slot is not None and slot in order:
            return slot
    return order[0] if order else None


def synthesize_unified_tabs(
    session: WorkspaceSessionState, mint: Callable[[], str]
) -> WorkspaceSessionState:
    """Fold a legacy-only session into unified tabs + one group per workspace key.

    A session that has both ``unifiedTabs`` and ``tabGroups`` is returned as it is
    (the read path of seed 01 §7.3 prefers them), so running this twice is a no-op.
    """
    if not legacy_only(session):
        return session
    keys = list(dict.fromkeys([*session.tabs_by_worktree, *session.open_files_by_worktree]))
    if not keys:
        return session  # nothing to fold: an empty session stays as it was written
    unified: dict[str, tuple[Tab, ...]] = {}
    groups: dict[str, tuple[TabGroup, ...]] = {}
    layouts = dict(session.tab_group_layouts)
    active_groups: dict[str, str] = dict(session.active_group_id_by_worktree)
    for key in keys:
        group_id = mint()
        tabs = _legacy_tabs(session, key, group_id)
        if not tabs:
            continue
        order = tuple(t.id for t in tabs)
        active = _active_slot(session, key, order)
        group = TabGroup(
            id=group_id,
            worktree_id=tabs[0].worktree_id,
            active_tab_id=active,
            tab_order=order,
            recent_tab_ids=None if active is None else (active,),
        )
        unified[key], groups[key] = tuple(tabs), (group,)
        layouts[key] = TabGroupLeaf(group_id=group_id)
        active_groups[key] = group_id
    return replace(
        session,
        unified_tabs=unified,
        tab_groups=groups,
        tab_group_layouts=layouts,
        active_group_id_by_worktree=active_groups,
    )


def restore_session_on_load(
    session: WorkspaceSessionState, mint: Callable[[], str], *, convert_legacy: bool
) -> WorkspaceSessionState:
    """The load-time rules in order: legacy conversion (once, when asked), then transients."""
    if convert_legacy:
        session = synthesize_unified_tabs(session, mint)
    return drop_transient_tabs(session)


def legacy_only(session: WorkspaceSessionState) -> bool:
    """True when ``session`` lacks the unified model (the read path falls back to legacy)."""
    return session.unified_tabs is None or session.tab_groups is None


def has_legacy_tabs_to_fold(session: WorkspaceSessionState) -> bool:
    """True when :func:`synthesize_unified_tabs` would change ``session``."""
    return legacy_only(session) and bool(session.tabs_by_worktree or session.open_files_by_worktree)
