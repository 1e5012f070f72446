"""Tabs and split panes as seed 01 §6 stores them: tab → tab group → leaf (pure; the
rules ``orca ui`` and its tests read and edit the layout by, moved here from
``actors/ui/layout.py``, issue 35).

The layout lives in the store's workspace session for this host (``session.patch``),
never in the UI: a restarted or second ``orca ui`` shows what the first one saved. Per
worktree a split tree of tab groups (``tabGroupLayouts``: a :class:`TabGroupLeaf` names
a group, a :class:`TabGroupSplit` holds two subtrees), each group its own strip
(``tabGroups``: ``tabOrder``, ``activeTabId``, the MRU ``recentTabIds``, oldest first),
the active group (``activeGroupIdByWorktree``), the flat ``unifiedTabs`` rows (each
naming its ``groupId``) and, per terminal tab, its pane tree
(``terminalLayoutsByTabId``) whose leaves are UUIDs; a pane's identity is its pane
key ``<tabId>:<leafId>`` (``orca.model.panes``), which is also what ptyd's session of
that pane carries, so a restored layout finds its live terminals by pane key.

Directions, for both trees: ``"vertical"`` is a vertical divider (the two sides side
by side), ``"horizontal"`` a horizontal one (stacked).

:func:`normalize_groups` is the one repair rule (what every reader applies before it
shows a worktree, and what a UI saves when it changed something): a group without tabs
is dropped and its leaf pruned (the sibling promoted, ``orca.model.layout``), as is a
leaf naming a group that does not exist; a group the tree does not place is put to the
right; a tab is in exactly one group's strip and names that group; each group's active
tab is in its strip (else its MRU one). It mints nothing (a group for orphan tabs gets
an id derived from them), so several UIs repairing the same session write the same
thing. The store closes tabs (the retirement protocol drops a tab with its last pane and
falls back to the group's previous MRU tab, ``orca.model.session_restore``); the empty
group it may leave is this rule's to drop.

Functions take and return :class:`WorkspaceSessionState` (unknown fields kept by the
model codec); :func:`layout_patch` is the ``session.patch`` of the fields they touch.
Closing a pane is not here: it is the retirement protocol (the store drops the leaf).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, overload

import msgspec

from orca.model.codec import from_builtins, to_builtins
from orca.model.layout import (
    iter_layout_group_ids,
    iter_terminal_leaf_ids,
    prune_tab_group_layout,
)
from orca.model.panes import make_pane_key, parse_pane_key
from orca.model.session import WorkspaceSessionState
from orca.model.session_restore import group_without_tabs
from orca.model.tabs import (
    SplitDirection,
    Tab,
    TabGroup,
    TabGroupLayoutNode,
    TabGroupLeaf,
    TabGroupSplit,
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
# The namespace of group ids derived from tabs (normalize_groups mints nothing random).
_GROUP_NS = uuid.UUID("6f1c1f0e-2b7a-4f4e-9d0c-0a5e0f6b7c31")


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


# -- the group tree ------------------------------------------------------------------------
def _without(mapping: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in mapping.items() if k != key}


def normalize_groups(session: WorkspaceSessionState, worktree_id: str) -> WorkspaceSessionState:
    """The worktree's groups, strips, tabs and tree made consistent (module docstring);
    the very same object back when they already are."""
    raw_groups = tuple((session.tab_groups or {}).get(worktree_id, ()))
    tabs = tuple((session.unified_tabs or {}).get(worktree_id, ()))
    old_tree = session.tab_group_layouts.get(worktree_id)
    if not raw_groups and not tabs:
        if old_tree is None and worktree_id not in session.active_group_id_by_worktree:
            return session
        return replace(
            session,
            tab_group_layouts=_without(session.tab_group_layouts, worktree_id),
            active_group_id_by_worktree=_without(session.active_group_id_by_worktree, worktree_id),
        )
    groups: list[TabGroup] = []
    for group in raw_groups:  # a group id listed twice: the first one counts
        if all(g.id != group.id for g in groups):
            groups.append(group)
    ids = [g.id for g in groups]
    placed = [g for g in dict.fromkeys(iter_layout_group_ids(old_tree)) if g in ids]
    in_order = placed + [g for g in ids if g not in placed]
    tab_ids = {t.id for t in tabs}
    members: dict[str, list[str]] = {g: [] for g in ids}
    owner: dict[str, str] = {}
    for group in groups:
        for tab_id in group.tab_order:
            if tab_id in tab_ids and tab_id not in owner:
                owner[tab_id] = group.id
                members[group.id].append(tab_id)
    for tab in tabs:
        if tab.id in owner:
            continue
        home = tab.group_id if tab.group_id in members else (in_order[0] if in_order else None)
        if home is None:  # tabs and no group at all: one group, named after its first tab
            home = str(uuid.uuid5(_GROUP_NS, f"{worktree_id}\n{tab.id}"))
            groups.append(TabGroup(id=home, worktree_id=worktree_id))
            members[home], in_order = [], [home]
        owner[tab.id] = home
        members[home].append(tab.id)
    kept: list[TabGroup] = []
    for group in groups:
        order = tuple(members[group.id])
        if not order:
            continue  # a group without tabs is closed
        recent = None
        if group.recent_tab_ids is not None:
            recent = tuple(dict.fromkeys(t for t in group.recent_tab_ids if t in order))
        active = group.active_tab_id
        if active not in order:
            active = recent[-1] if recent else order[0]
        fixed = TabGroup(
            id=group.id,
            worktree_id=group.worktree_id or worktree_id,
            active_tab_id=active,
            tab_order=order,
            recent_tab_ids=recent,
            extra=group.extra,
        )
        kept.append(group if fixed == group else fixed)
    kept_ids = [g.id for g in kept]
    new_tabs = tuple(
        t if t.group_id == owner[t.id] else replace(t, group_id=owner[t.id]) for t in tabs
    )
    tree = None if old_tree is None else prune_tab_group_layout(old_tree, set(kept_ids), once=True)
    for group_id in (g for g in in_order if g in kept_ids):
        if group_id not in set(iter_layout_group_ids(tree)):
            leaf = TabGroupLeaf(group_id=group_id)
            tree = (
                leaf
                if tree is None
                else TabGroupSplit(direction="vertical", first=tree, second=leaf)
            )
    active_group = session.active_group_id_by_worktree.get(worktree_id)
    if active_group not in kept_ids:
        order_now = list(iter_layout_group_ids(tree))
        active_group = order_now[0] if order_now else None
    if (
        tuple(kept) == raw_groups
        and new_tabs == tabs
        and tree is old_tree
        and active_group == session.active_group_id_by_worktree.get(worktree_id)
    ):
        return session
    layouts = _without(session.tab_group_layouts, worktree_id)
    if tree is not None:
        layouts[worktree_id] = tree
    actives = _without(session.active_group_id_by_worktree, worktree_id)
    if active_group is not None:
        actives[worktree_id] = active_group
    return replace(
        session,
        tab_groups={**(session.tab_groups or {}), worktree_id: tuple(kept)},
        unified_tabs={**(session.unified_tabs or {}), worktree_id: new_tabs},
        tab_group_layouts=layouts,
        active_group_id_by_worktree=actives,
    )


def group_tree(session: WorkspaceSessionState, worktree_id: str) -> TabGroupLayoutNode | None:
    """The worktree's tab-group split tree (normalized), None when it has no group."""
    return normalize_groups(session, worktree_id).tab_group_layouts.get(worktree_id)


def group_ids(session: WorkspaceSessionState, worktree_id: str) -> list[str]:
    """The worktree's groups in tree order (left to right, top to bottom)."""
    return list(iter_layout_group_ids(group_tree(session, worktree_id)))


def groups_of(session: WorkspaceSessionState, worktree_id: str) -> list[TabGroup]:
    """The worktree's groups (normalized) in tree order."""
    s = normalize_groups(session, worktree_id)
    by_id = {g.id: g for g in (s.tab_groups or {}).get(worktree_id, ())}
    return [by_id[g] for g in iter_layout_group_ids(s.tab_group_layouts.get(worktree_id))]


def group_of(
    session: WorkspaceSessionState, worktree_id: str, group_id: str | None = None
) -> TabGroup | None:
    """Group ``group_id`` of the worktree, by default its active group (normalized)."""
    s = normalize_groups(session, worktree_id)
    groups = (s.tab_groups or {}).get(worktree_id, ())
    wanted = group_id or s.active_group_id_by_worktree.get(worktree_id)
    return next((g for g in groups if g.id == wanted), None)


def group_of_tab(session: WorkspaceSessionState, worktree_id: str, tab_id: str) -> TabGroup | None:
    s = normalize_groups(session, worktree_id)
    return next(
        (g for g in (s.tab_groups or {}).get(worktree_id, ()) if tab_id in g.tab_order), None
    )


def terminal_tabs(
    session: WorkspaceSessionState, worktree_id: str, group_id: str | None = None
) -> list[Tab]:
    """The terminal tabs of one group (by default the active one) in strip order."""
    s = normalize_groups(session, worktree_id)
    group = group_of(s, worktree_id, group_id)
    if group is None:
        return []
    tabs = {t.id: t for t in (s.unified_tabs or {}).get(worktree_id, ())}
    return [tabs[t] for t in group.tab_order if t in tabs and tabs[t].content_type == "terminal"]


def all_terminal_tabs(session: WorkspaceSessionState, worktree_id: str) -> list[Tab]:
    """Every terminal tab of the worktree, group by group in tree order."""
    s = normalize_groups(session, worktree_id)
    return [t for g in groups_of(s, worktree_id) for t in terminal_tabs(s, worktree_id, g.id)]


def active_tab(
    session: WorkspaceSessionState, worktree_id: str, group_id: str | None = None
) -> Tab | None:
    """The active terminal tab of one group (by default the active group)."""
    s = normalize_groups(session, worktree_id)
    tabs = terminal_tabs(s, worktree_id, group_id)
    group = group_of(s, worktree_id, group_id)
    wanted = group.active_tab_id if group else None
    return next((t for t in tabs if t.id == wanted), tabs[0] if tabs else None)


def pane_tree(session: WorkspaceSessionState, tab_id: str) -> TerminalLayoutSnapshot | None:
    return session.terminal_layouts_by_tab_id.get(tab_id)


def pane_keys(session: WorkspaceSessionState, tab_id: str) -> list[str]:
    snap = pane_tree(session, tab_id)
    root = snap.root if snap else None
    return [make_pane_key(tab_id, leaf) for leaf in iter_terminal_leaf_ids(root)]


def active_pane_key(session: WorkspaceSessionState, tab_id: str) -> str | None:
    """The tab's active pane (its saved one, else its first)."""
    snap = pane_tree(session, tab_id)
    active = snap.active_leaf_id if snap is not None else None
    if active and snap is not None and active in set(iter_terminal_leaf_ids(snap.root)):
        return make_pane_key(tab_id, active)
    keys = pane_keys(session, tab_id)
    return keys[0] if keys else None


def all_pane_keys(session: WorkspaceSessionState) -> Iterator[tuple[str, str]]:
    """(worktree id, pane key) of every terminal pane the session holds."""
    for worktree_id, tabs in (session.unified_tabs or {}).items():
        for tab in tabs:
            if tab.content_type == "terminal":
                for key in pane_keys(session, tab.id):
                    yield worktree_id, key


# -- edits ---------------------------------------------------------------------------------
def _with_groups(
    session: WorkspaceSessionState,
    worktree_id: str,
    groups: tuple[TabGroup, ...],
    active_group: str,
    **changes: Any,
) -> WorkspaceSessionState:
    """``session`` with the worktree's groups replaced and ``active_group`` (and its
    active tab) the active one; ``changes`` are further session fields."""
    active_tab_id = next((g.active_tab_id for g in groups if g.id == active_group), None)
    return replace(
        session,
        tab_groups={**(session.tab_groups or {}), worktree_id: groups},
        active_group_id_by_worktree={
            **session.active_group_id_by_worktree,
            worktree_id: active_group,
        },
        active_tab_id_by_worktree={**session.active_tab_id_by_worktree, worktree_id: active_tab_id},
        active_worktree_id=worktree_id,
        active_tab_id=active_tab_id,
        **changes,
    )


def _pushed(group: TabGroup, tab_id: str) -> TabGroup:
    """``group`` with ``tab_id`` its active tab, on top of its MRU stack."""
    recent = (*(t for t in (group.recent_tab_ids or ()) if t != tab_id), tab_id)
    return replace(group, active_tab_id=tab_id, recent_tab_ids=recent)


def select_worktree(session: WorkspaceSessionState, worktree_id: str) -> WorkspaceSessionState:
    tab = active_tab(session, worktree_id)
    return replace(session, active_worktree_id=worktree_id, active_tab_id=tab.id if tab else None)


def _new_terminal_tab(
    session: WorkspaceSessionState,
    worktree_id: str,
    group: TabGroup,
    tree: TabGroupLayoutNode,
    label: str,
    now_ms: int,
    pane: tuple[str, str] | None = None,
) -> tuple[WorkspaceSessionState, str, str]:
    """A terminal tab (one pane) added to ``group`` (new or not), which becomes active;
    ``pane``: its (tab id, leaf id), else new ones."""
    tab_id, leaf_id = pane or (new_id(), new_id())
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
    group = _pushed(replace(group, tab_order=(*group.tab_order, tab_id)), tab_id)
    others = tuple(g for g in (session.tab_groups or {}).get(worktree_id, ()) if g.id != group.id)
    snapshot = TerminalLayoutSnapshot(
        root=TerminalPaneLeaf(leaf_id=leaf_id), active_leaf_id=leaf_id
    )
    session = _with_groups(
        session,
        worktree_id,
        (*others, group),
        group.id,
        unified_tabs={**(session.unified_tabs or {}), worktree_id: (*tabs, tab)},
        tab_group_layouts={**session.tab_group_layouts, worktree_id: tree},
        terminal_layouts_by_tab_id={**session.terminal_layouts_by_tab_id, tab_id: snapshot},
        active_tab_type_by_worktree={
            **session.active_tab_type_by_worktree,
            worktree_id: "terminal",
        },
    )
    return session, tab_id, leaf_id


def add_terminal_tab(
    session: WorkspaceSessionState,
    worktree_id: str,
    label: str,
    now_ms: int,
    group_id: str | None = None,
) -> tuple[WorkspaceSessionState, str, str]:
    """A new terminal tab (one pane) in a group (by default the active one; the
    worktree's first group when it has none), made active: (session, tab, leaf)."""
    session = normalize_groups(session, worktree_id)
    group = group_of(session, worktree_id, group_id)
    tree = session.tab_group_layouts.get(worktree_id)
    if group is None or tree is None:
        group = TabGroup(id=new_id(), worktree_id=worktree_id)
        tree = TabGroupLeaf(group_id=group.id)
    return _new_terminal_tab(session, worktree_id, group, tree, label, now_ms)


def adopt_terminals(
    session: WorkspaceSessionState, worktree_id: str, terminals: Iterable[tuple[str, str, int]]
) -> WorkspaceSessionState:
    """A pane for every terminal of the worktree that no layout leaf shows (one started
    with ``orca term new``, or by another client that saved no layout), the same object
    when every one has its pane. ``terminals``: (pane key, tab label, created at ms).

    ptyd gives every terminal a pane key, and the pane made here is the one that key
    names (its tab id and leaf id), so the terminal is bound to it like any other: a
    key whose tab exists in the worktree gets its leaf beside that tab's panes, any
    other key a tab of its own at the end of the active group's strip. The tab shown
    stays the one shown (a worktree with no tab shows the first adopted one). Pure and
    idempotent: two UIs adopting the same terminal write the same panes."""
    shown = {key for _wt, key in all_pane_keys(session)}
    wanted = [t for t in terminals if t[0] not in shown]
    if not wanted:
        return session
    s = normalize_groups(session, worktree_id)
    own_tabs = {t.id for t in (s.unified_tabs or {}).get(worktree_id, ())}
    for pane_key, label, created_ms in sorted(wanted, key=lambda t: t[2]):
        parts = parse_pane_key(pane_key)
        if parts is None or pane_key in {key for _wt, key in all_pane_keys(s)}:
            continue
        tab_id, leaf_id = parts.tab_id, parts.leaf_id
        snap = pane_tree(s, tab_id)
        if tab_id in own_tabs and snap is not None and snap.root is not None:
            root = TerminalPaneSplit(
                direction="vertical", first=snap.root, second=TerminalPaneLeaf(leaf_id=leaf_id)
            )
            layouts = {**s.terminal_layouts_by_tab_id, tab_id: replace(snap, root=root)}
            s = replace(s, terminal_layouts_by_tab_id=layouts)
            continue
        if tab_id in s.terminal_layouts_by_tab_id or tab_id in own_tabs:
            continue  # a tab of another worktree, or a row without a layout: not ours
        shown_tab = active_tab(s, worktree_id)
        group = group_of(s, worktree_id)
        tree = s.tab_group_layouts.get(worktree_id)
        if group is None or tree is None:
            group = TabGroup(id=new_id(), worktree_id=worktree_id)
            tree = TabGroupLeaf(group_id=group.id)
        s, _tab, _leaf = _new_terminal_tab(
            s, worktree_id, group, tree, label, created_ms, (tab_id, leaf_id)
        )
        own_tabs.add(tab_id)
        if shown_tab is not None:
            s = select_tab(s, worktree_id, shown_tab.id)
    if session.active_worktree_id != worktree_id:  # adopting is not opening the worktree
        s = replace(
            s, active_worktree_id=session.active_worktree_id, active_tab_id=session.active_tab_id
        )
    return s


@overload
def _split_at(
    node: TabGroupLayoutNode, at: str, new: str, direction: SplitDirection
) -> TabGroupLayoutNode: ...
@overload
def _split_at(
    node: TerminalPaneLayoutNode, at: str, new: str, direction: SplitDirection
) -> TerminalPaneLayoutNode: ...
def _split_at(
    node: TabGroupLayoutNode | TerminalPaneLayoutNode, at: str, new: str, direction: SplitDirection
) -> TabGroupLayoutNode | TerminalPaneLayoutNode:
    """Either tree: its leaf ``at`` (a group id, a pane's leaf id) becomes a split of
    itself (first) and a new leaf ``new`` (second); other leaves stay as they are."""
    if isinstance(node, TabGroupLeaf):
        if node.group_id != at:
            return node
        return TabGroupSplit(direction=direction, first=node, second=TabGroupLeaf(group_id=new))
    if isinstance(node, TerminalPaneLeaf):
        if node.leaf_id != at:
            return node
        return TerminalPaneSplit(
            direction=direction, first=node, second=TerminalPaneLeaf(leaf_id=new)
        )
    return replace(
        node,
        first=_split_at(node.first, at, new, direction),
        second=_split_at(node.second, at, new, direction),
    )


def split_group(
    session: WorkspaceSessionState,
    worktree_id: str,
    direction: SplitDirection,
    label: str,
    now_ms: int,
) -> tuple[WorkspaceSessionState, str, str, str]:
    """Split the active group's place in two: a new group (second: right of it for
    ``"vertical"``, below for ``"horizontal"``) holding one new terminal tab, made the
    active group: (session, group, tab, leaf). With no group yet: the first one."""
    session = normalize_groups(session, worktree_id)
    current = group_of(session, worktree_id)
    tree = session.tab_group_layouts.get(worktree_id)
    group = TabGroup(id=new_id(), worktree_id=worktree_id)
    if current is None or tree is None:
        tree = TabGroupLeaf(group_id=group.id)
    else:
        tree = _split_at(tree, current.id, group.id, direction)
    session, tab_id, leaf_id = _new_terminal_tab(session, worktree_id, group, tree, label, now_ms)
    return session, group.id, tab_id, leaf_id


def select_group(
    session: WorkspaceSessionState, worktree_id: str, group_id: str
) -> WorkspaceSessionState:
    """Make ``group_id`` the worktree's active group (same object when it is, or when
    there is no such group)."""
    s = normalize_groups(session, worktree_id)
    groups = tuple((s.tab_groups or {}).get(worktree_id, ()))
    if all(g.id != group_id for g in groups):
        return session
    changed = _with_groups(s, worktree_id, groups, group_id)
    return session if changed == session else changed


def focus_next_group(
    session: WorkspaceSessionState, worktree_id: str, step: int = 1
) -> WorkspaceSessionState:
    """The next group in tree order (cycling) becomes the active one."""
    ids = group_ids(session, worktree_id)
    if not ids:
        return session
    current = group_of(session, worktree_id)
    index = ids.index(current.id) if current is not None and current.id in ids else -step
    return select_group(session, worktree_id, ids[(index + step) % len(ids)])


def select_tab(
    session: WorkspaceSessionState, worktree_id: str, tab_id: str
) -> WorkspaceSessionState:
    """Make ``tab_id`` its group's active tab (top of the group's MRU stack) and that
    group the active one; the same object when nothing changes or there is no such tab."""
    s = normalize_groups(session, worktree_id)
    group = group_of_tab(s, worktree_id, tab_id)
    if group is None:
        return session
    pushed = _pushed(group, tab_id)
    groups = tuple(
        pushed if g.id == group.id else g for g in (s.tab_groups or {}).get(worktree_id, ())
    )
    changed = _with_groups(s, worktree_id, groups, group.id)
    return session if changed == session else changed


def move_tab_to_next_group(
    session: WorkspaceSessionState, worktree_id: str, step: int = 1
) -> WorkspaceSessionState:
    """Move the active group's active tab to the end of the next group's strip (tree
    order, cycling), active there and that group active. The group it left falls back
    to its previous MRU tab, or is closed when it was its last. Same object with fewer
    than two groups."""
    s = normalize_groups(session, worktree_id)
    ids = group_ids(s, worktree_id)
    source = group_of(s, worktree_id)
    if len(ids) < 2 or source is None or source.active_tab_id is None:
        return session
    tab_id = source.active_tab_id
    target_id = ids[(ids.index(source.id) + step) % len(ids)]
    groups: list[TabGroup] = []
    for g in (s.tab_groups or {}).get(worktree_id, ()):
        if g.id == source.id:
            g = group_without_tabs(g, {tab_id})
        elif g.id == target_id:
            g = _pushed(replace(g, tab_order=(*g.tab_order, tab_id)), tab_id)
        groups.append(g)
    tabs = tuple(
        replace(t, group_id=target_id) if t.id == tab_id else t
        for t in (s.unified_tabs or {}).get(worktree_id, ())
    )
    moved = _with_groups(
        s,
        worktree_id,
        tuple(groups),
        target_id,
        unified_tabs={**(s.unified_tabs or {}), worktree_id: tabs},
    )
    return normalize_groups(moved, worktree_id)


def split_pane(
    session: WorkspaceSessionState, tab_id: str, leaf_id: str, direction: SplitDirection
) -> tuple[WorkspaceSessionState, str]:
    """Split ``leaf_id`` of ``tab_id`` in two; the new (second) leaf becomes active."""
    snap = pane_tree(session, tab_id)
    if snap is None or snap.root is None or leaf_id not in iter_terminal_leaf_ids(snap.root):
        raise KeyError(f"no pane {leaf_id} in tab {tab_id}")
    new_leaf = new_id()
    snap = replace(
        snap, root=_split_at(snap.root, leaf_id, new_leaf, direction), active_leaf_id=new_leaf
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
