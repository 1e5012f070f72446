"""Tabs and split panes as seed 01 §6 stores them: tab → tab group → leaf (pure).

The layout lives in the store's workspace session for this host (``session.patch``),
never in the UI: a restarted or second ``orca ui`` shows what the first one saved. Per
worktree there is one tab group (a :class:`TabGroupLeaf` in ``tabGroupLayouts``), its
strip (``tabGroups``: ``tabOrder``, ``activeTabId``, the MRU ``recentTabIds``), the
flat ``unifiedTabs`` rows and, per terminal tab, its pane tree
(``terminalLayoutsByTabId``) whose leaves are UUIDs; a pane's identity is its pane
key ``<tabId>:<leafId>`` (``orca.model.panes``), which is also what ptyd's session of
that pane carries, so a restored layout finds its live terminals by pane key.

Functions take and return :class:`WorkspaceSessionState` (unknown fields kept by the
model codec); :func:`layout_patch` is the ``session.patch`` of the fields they touch.
Closing a pane is not here: it is the retirement protocol (the store drops the leaf).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import msgspec

from orca.model.codec import from_builtins, to_builtins
from orca.model.layout import iter_terminal_leaf_ids
from orca.model.panes import make_pane_key
from orca.model.session import WorkspaceSessionState
from orca.model.tabs import (
    SplitDirection,
    Tab,
    TabGroup,
    TabGroupLeaf,
    TerminalLayoutSnapshot,
    TerminalPaneLayoutNode,
    TerminalPaneLeaf,
    TerminalPaneSplit,
)

replace = msgspec.structs.replace

# The session fields this module writes (wire names, for the patch).
LAYOUT_FIELDS = (
    "unified_tabs",
    "tab_groups",
    "tab_group_layouts",
    "active_group_id_by_worktree",
    "terminal_layouts_by_tab_id",
    "active_tab_id_by_worktree",
    "active_tab_type_by_worktree",
    "active_worktree_id",
    "active_tab_id",
)


def new_id() -> str:
    return str(uuid.uuid4())


def decode_session(raw: Mapping[str, Any]) -> WorkspaceSessionState:
    """The mirror's session builtins as the model record (unknown fields kept)."""
    return from_builtins(WorkspaceSessionState, dict(raw))


def layout_patch(session: WorkspaceSessionState) -> dict[str, Any]:
    """The ``session.patch`` body for the fields this module edits (wire names; a field
    back at its default is sent as that default, since the codec omits defaults)."""
    wire = to_builtins(session)
    out: dict[str, Any] = {}
    for field in msgspec.structs.fields(WorkspaceSessionState):
        if field.name not in LAYOUT_FIELDS:
            continue
        if field.encode_name in wire:
            out[field.encode_name] = wire[field.encode_name]
        elif field.default_factory is not msgspec.NODEFAULT:
            out[field.encode_name] = msgspec.to_builtins(field.default_factory())
        else:
            out[field.encode_name] = field.default
    return out


def group_of(session: WorkspaceSessionState, worktree_id: str) -> TabGroup | None:
    groups = (session.tab_groups or {}).get(worktree_id, ())
    active = session.active_group_id_by_worktree.get(worktree_id)
    for group in groups:
        if group.id == active:
            return group
    return groups[0] if groups else None


def terminal_tabs(session: WorkspaceSessionState, worktree_id: str) -> list[Tab]:
    """The worktree's terminal tabs in strip order."""
    tabs = {t.id: t for t in (session.unified_tabs or {}).get(worktree_id, ())}
    group = group_of(session, worktree_id)
    order = list(group.tab_order) if group else []
    order += [t for t in tabs if t not in order]
    return [tabs[t] for t in order if t in tabs and tabs[t].content_type == "terminal"]


def active_tab(session: WorkspaceSessionState, worktree_id: str) -> Tab | None:
    tabs = terminal_tabs(session, worktree_id)
    group = group_of(session, worktree_id)
    wanted = group.active_tab_id if group else None
    return next((t for t in tabs if t.id == wanted), tabs[0] if tabs else None)


def pane_tree(session: WorkspaceSessionState, tab_id: str) -> TerminalLayoutSnapshot | None:
    return session.terminal_layouts_by_tab_id.get(tab_id)


def pane_keys(session: WorkspaceSessionState, tab_id: str) -> list[str]:
    snap = pane_tree(session, tab_id)
    root = snap.root if snap else None
    return [make_pane_key(tab_id, leaf) for leaf in iter_terminal_leaf_ids(root)]


def all_pane_keys(session: WorkspaceSessionState) -> Iterator[tuple[str, str]]:
    """(worktree id, pane key) of every terminal pane the session holds."""
    for worktree_id, tabs in (session.unified_tabs or {}).items():
        for tab in tabs:
            if tab.content_type == "terminal":
                for key in pane_keys(session, tab.id):
                    yield worktree_id, key


def select_worktree(session: WorkspaceSessionState, worktree_id: str) -> WorkspaceSessionState:
    tab = active_tab(session, worktree_id)
    return replace(session, active_worktree_id=worktree_id, active_tab_id=tab.id if tab else None)


def add_terminal_tab(
    session: WorkspaceSessionState, worktree_id: str, label: str, now_ms: int
) -> tuple[WorkspaceSessionState, str, str]:
    """A new terminal tab (one pane) in the worktree's group, made active: (session, tab, leaf)."""
    tab_id, leaf_id = new_id(), new_id()
    group = group_of(session, worktree_id)
    if group is None:
        group = TabGroup(id=new_id(), worktree_id=worktree_id)
    tabs = (session.unified_tabs or {}).get(worktree_id, ())
    tab = Tab(
        id=tab_id,
        entity_id=tab_id,
        group_id=group.id,
        worktree_id=worktree_id,
        content_type="terminal",
        label=label,
        sort_order=len(tabs),
        created_at=now_ms,
    )
    recent = (*(group.recent_tab_ids or ()), tab_id)
    group = replace(
        group, tab_order=(*group.tab_order, tab_id), active_tab_id=tab_id, recent_tab_ids=recent
    )
    others = tuple(g for g in (session.tab_groups or {}).get(worktree_id, ()) if g.id != group.id)
    snapshot = TerminalLayoutSnapshot(
        root=TerminalPaneLeaf(leaf_id=leaf_id), active_leaf_id=leaf_id
    )
    session = replace(
        session,
        unified_tabs={**(session.unified_tabs or {}), worktree_id: (*tabs, tab)},
        tab_groups={**(session.tab_groups or {}), worktree_id: (*others, group)},
        tab_group_layouts={
            **session.tab_group_layouts,
            worktree_id: session.tab_group_layouts.get(worktree_id)
            or TabGroupLeaf(group_id=group.id),
        },
        active_group_id_by_worktree={**session.active_group_id_by_worktree, worktree_id: group.id},
        terminal_layouts_by_tab_id={**session.terminal_layouts_by_tab_id, tab_id: snapshot},
        active_tab_id_by_worktree={**session.active_tab_id_by_worktree, worktree_id: tab_id},
        active_tab_type_by_worktree={
            **session.active_tab_type_by_worktree,
            worktree_id: "terminal",
        },
        active_worktree_id=worktree_id,
        active_tab_id=tab_id,
    )
    return session, tab_id, leaf_id


def select_tab(
    session: WorkspaceSessionState, worktree_id: str, tab_id: str
) -> WorkspaceSessionState:
    group = group_of(session, worktree_id)
    if group is None or tab_id not in group.tab_order:
        return session
    recent = (*(t for t in (group.recent_tab_ids or ()) if t != tab_id), tab_id)
    group = replace(group, active_tab_id=tab_id, recent_tab_ids=recent)
    groups = tuple(
        group if g.id == group.id else g for g in (session.tab_groups or {}).get(worktree_id, ())
    )
    return replace(
        session,
        tab_groups={**(session.tab_groups or {}), worktree_id: groups},
        active_tab_id_by_worktree={**session.active_tab_id_by_worktree, worktree_id: tab_id},
        active_worktree_id=worktree_id,
        active_tab_id=tab_id,
    )


def _split(
    node: TerminalPaneLayoutNode, leaf_id: str, new_leaf: str, direction: SplitDirection
) -> TerminalPaneLayoutNode:
    if isinstance(node, TerminalPaneLeaf):
        if node.leaf_id != leaf_id:
            return node
        return TerminalPaneSplit(
            direction=direction, first=node, second=TerminalPaneLeaf(leaf_id=new_leaf)
        )
    return replace(
        node,
        first=_split(node.first, leaf_id, new_leaf, direction),
        second=_split(node.second, leaf_id, new_leaf, direction),
    )


def split_pane(
    session: WorkspaceSessionState, tab_id: str, leaf_id: str, direction: SplitDirection
) -> tuple[WorkspaceSessionState, str]:
    """Split ``leaf_id`` of ``tab_id`` in two; the new (second) leaf becomes active."""
    snap = pane_tree(session, tab_id)
    if snap is None or snap.root is None or leaf_id not in iter_terminal_leaf_ids(snap.root):
        raise KeyError(f"no pane {leaf_id} in tab {tab_id}")
    new_leaf = new_id()
    snap = replace(
        snap, root=_split(snap.root, leaf_id, new_leaf, direction), active_leaf_id=new_leaf
    )
    layouts = {**session.terminal_layouts_by_tab_id, tab_id: snap}
    return replace(session, terminal_layouts_by_tab_id=layouts), new_leaf


def focus_pane(session: WorkspaceSessionState, tab_id: str, leaf_id: str) -> WorkspaceSessionState:
    snap = pane_tree(session, tab_id)
    if snap is None or snap.active_leaf_id == leaf_id:
        return session
    layouts = {**session.terminal_layouts_by_tab_id, tab_id: replace(snap, active_leaf_id=leaf_id)}
    return replace(session, terminal_layouts_by_tab_id=layouts)


def rename_tab(
    session: WorkspaceSessionState, worktree_id: str, tab_id: str, label: str
) -> WorkspaceSessionState:
    tabs = tuple(
        replace(t, custom_label=label or None) if t.id == tab_id else t
        for t in (session.unified_tabs or {}).get(worktree_id, ())
    )
    return replace(session, unified_tabs={**(session.unified_tabs or {}), worktree_id: tabs})
