"""The UI's layout rules (seed 01 §6), pure: tabs, groups, pane trees, the session patch."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.store.session_topology import retire_pane
from orca.model import tab_groups as layout
from orca.model.layout import iter_layout_group_ids, iter_terminal_leaf_ids
from orca.model.panes import make_pane_key, parse_pane_key
from orca.model.session import WorkspaceSessionState
from orca.model.session_restore import synthesize_unified_tabs
from orca.model.tabs import (
    SplitDirection,
    TabGroupLeaf,
    TabGroupSplit,
    TerminalPaneLeaf,
    TerminalPaneSplit,
    TerminalTab,
)

WT = "11111111-1111-4111-8111-111111111111::/tmp/wt"


def test_new_tab_is_active_and_one_pane_keyed_by_tab_and_leaf() -> None:
    """A new terminal tab is active in its group and has one UUID leaf: the pane key."""
    session, tab, leaf = layout.add_terminal_tab(WorkspaceSessionState(), WT, "shell", 5)
    assert layout.active_tab(session, WT).id == tab  # type: ignore[union-attr]
    assert layout.pane_keys(session, tab) == [make_pane_key(tab, leaf)]
    assert parse_pane_key(make_pane_key(tab, leaf)) is not None
    group = layout.group_of(session, WT)
    assert group is not None and group.tab_order == (tab,) and group.recent_tab_ids == (tab,)
    assert session.active_worktree_id == WT and session.active_tab_id == tab


def test_split_adds_a_leaf_beside_the_split_one() -> None:
    """Splitting keeps the old leaf first and makes the new one active."""
    session, tab, leaf = layout.add_terminal_tab(WorkspaceSessionState(), WT, "shell", 0)
    session, second = layout.split_pane(session, tab, leaf, "vertical")
    session, third = layout.split_pane(session, tab, second, "horizontal")
    snap = layout.pane_tree(session, tab)
    assert snap is not None and snap.active_leaf_id == third
    root = snap.root
    assert isinstance(root, TerminalPaneSplit) and root.direction == "vertical"
    assert root.first == TerminalPaneLeaf(leaf_id=leaf)
    assert layout.pane_keys(session, tab) == [make_pane_key(tab, x) for x in (leaf, second, third)]
    with pytest.raises(KeyError):
        layout.split_pane(session, tab, "not-a-leaf", "vertical")


def test_patch_round_trips_through_the_model_codec() -> None:
    """What the UI sends (wire names) decodes to the same tabs and trees."""
    session, tab, leaf = layout.add_terminal_tab(WorkspaceSessionState(), WT, "a", 0)
    session, _second, _ = layout.add_terminal_tab(session, WT, "b", 1)
    session, _new = layout.split_pane(session, tab, leaf, "horizontal")
    session = layout.select_tab(session, WT, tab)
    patch = layout.layout_patch(session)
    assert "tabGroupLayouts" in patch and None not in (patch["tabGroups"], patch["unifiedTabs"])
    again = layout.decode_session(patch)
    assert [t.id for t in layout.terminal_tabs(again, WT)] == [
        t.id for t in layout.terminal_tabs(session, WT)
    ]
    assert layout.active_tab(again, WT).id == tab  # type: ignore[union-attr]
    assert layout.pane_keys(again, tab) == layout.pane_keys(session, tab)


def test_select_tab_keeps_an_mru_stack_and_ignores_unknown_tabs() -> None:
    session, first, _ = layout.add_terminal_tab(WorkspaceSessionState(), WT, "a", 0)
    session, second, _ = layout.add_terminal_tab(session, WT, "b", 1)
    session = layout.select_tab(session, WT, first)
    group = layout.group_of(session, WT)
    assert group is not None and group.recent_tab_ids == (second, first)
    assert layout.select_tab(session, WT, "nope") is session


def test_a_pane_in_a_group_of_unknown_fields_keeps_them() -> None:
    """Fields this build does not know survive a UI edit (seed 01 §7.3)."""
    raw = {"futureField": {"x": 1}}
    session = layout.decode_session(raw)
    session, _tab, _leaf = layout.add_terminal_tab(session, WT, "a", 0)
    from orca.model.codec import to_builtins

    assert to_builtins(session)["futureField"] == {"x": 1}


# -- several tab groups per worktree (seed 01 §6.2) -------------------------------------------


def problems(session: WorkspaceSessionState, wt: str) -> list[str]:
    """What breaks the tree's rules for ``wt`` (empty: valid)."""
    out = []
    groups = list((session.tab_groups or {}).get(wt, ()))
    tabs = list((session.unified_tabs or {}).get(wt, ()))
    ids = [g.id for g in groups]
    leaves = list(iter_layout_group_ids(session.tab_group_layouts.get(wt)))
    if len(set(ids)) != len(ids):
        out.append(f"a group listed twice: {ids}")
    if sorted(leaves) != sorted(set(ids)):
        out.append(f"leaves {leaves} are not the groups {ids}")
    for group in groups:
        if not group.tab_order:
            out.append(f"group {group.id} has no tab")
        if group.active_tab_id not in group.tab_order:
            out.append(f"group {group.id}: active {group.active_tab_id} not in its strip")
        if not set(group.recent_tab_ids or ()) <= set(group.tab_order):
            out.append(f"group {group.id}: MRU names a tab it lacks")
    listed = [t for g in groups for t in g.tab_order]
    if sorted(listed) != sorted(t.id for t in tabs):
        out.append(f"strips {listed} are not the tabs {[t.id for t in tabs]}")
    for tab in tabs:
        home = [g.id for g in groups if tab.id in g.tab_order]
        if home != [tab.group_id]:
            out.append(f"tab {tab.id} names group {tab.group_id}, listed in {home}")
    if groups and session.active_group_id_by_worktree.get(wt) not in ids:
        out.append("the active group does not exist")
    if not groups and (
        wt in session.tab_group_layouts or wt in session.active_group_id_by_worktree
    ):
        out.append("a tree or active group without groups")
    return out


def two_groups() -> tuple[WorkspaceSessionState, str, str, str, str]:
    """Tab a in the first group, tab b in a second group to its right (active)."""
    session, a, _ = layout.add_terminal_tab(WorkspaceSessionState(), WT, "a", 0)
    first = layout.group_of(session, WT)
    assert first is not None
    session, second, b, _ = layout.split_group(session, WT, "vertical", "b", 1)
    return session, first.id, second, a, b


def test_split_group_puts_a_new_group_with_one_tab_beside_the_active_one() -> None:
    session, first, second, a, b = two_groups()
    assert session.tab_group_layouts[WT] == TabGroupSplit(
        direction="vertical",
        first=TabGroupLeaf(group_id=first),
        second=TabGroupLeaf(group_id=second),
    )
    assert session.active_group_id_by_worktree[WT] == second
    assert [t.id for t in layout.terminal_tabs(session, WT, first)] == [a]
    assert [t.id for t in layout.terminal_tabs(session, WT)] == [b]
    assert [t.id for t in layout.all_terminal_tabs(session, WT)] == [a, b]
    assert session.active_tab_id == b and session.active_tab_id_by_worktree[WT] == b
    # below the new group: a third one, stacked under it
    session, third, _c, _ = layout.split_group(session, WT, "horizontal", "c", 2)
    tree = session.tab_group_layouts[WT]
    assert isinstance(tree, TabGroupSplit) and isinstance(tree.second, TabGroupSplit)
    assert tree.second.direction == "horizontal" and tree.second.second == TabGroupLeaf(
        group_id=third
    )
    assert layout.group_ids(session, WT) == [first, second, third]
    assert problems(session, WT) == []


def test_each_group_has_its_own_active_tab_and_mru() -> None:
    """Selecting in one group leaves the other's strip alone; closing the active tab
    (the store's retirement) goes back to the group's previous MRU tab."""
    session, first, second, a, b = two_groups()
    session, a2, _ = layout.add_terminal_tab(session, WT, "a2", 2, group_id=first)
    session, a3, _ = layout.add_terminal_tab(session, WT, "a3", 3, group_id=first)
    session = layout.select_tab(session, WT, a)  # MRU of first: a2, a3, a
    session = layout.select_tab(session, WT, b)
    assert layout.group_of(session, WT, first).active_tab_id == a  # type: ignore[union-attr]
    assert session.active_group_id_by_worktree[WT] == second
    assert layout.select_tab(session, WT, b) is session, "nothing to change"
    session = layout.select_tab(session, WT, a)
    (leaf,) = iter_terminal_leaf_ids(session.terminal_layouts_by_tab_id[a].root)
    session = layout.normalize_groups(retire_pane(session, a, leaf), WT)
    group = layout.group_of(session, WT, first)
    assert group is not None and group.active_tab_id == a3, "the MRU one, not the neighbour a2"
    assert group.tab_order == (a2, a3)
    assert problems(session, WT) == []


def test_a_group_whose_last_tab_closes_is_gone_and_its_sibling_promoted() -> None:
    session, first, second, a, b = two_groups()
    session, _third, c, _ = layout.split_group(session, WT, "horizontal", "c", 2)
    (leaf,) = iter_terminal_leaf_ids(session.terminal_layouts_by_tab_id[b].root)
    retired = retire_pane(session, b, leaf)
    assert any(not g.tab_order for g in retired.tab_groups[WT]), "the store leaves it empty"  # type: ignore[index]
    session = layout.normalize_groups(retired, WT)
    assert second not in layout.group_ids(session, WT)
    tree = session.tab_group_layouts[WT]
    assert isinstance(tree, TabGroupSplit) and tree.first == TabGroupLeaf(group_id=first)
    assert tree.second == TabGroupLeaf(group_id=_third), "the sibling took its place"
    assert problems(session, WT) == []
    assert layout.normalize_groups(session, WT) is session, "idempotent"
    # the last tab of the last group: no group, no tree
    for tab in (a, c):
        (leaf,) = iter_terminal_leaf_ids(session.terminal_layouts_by_tab_id[tab].root)
        session = layout.normalize_groups(retire_pane(session, tab, leaf), WT)
    assert WT not in session.tab_group_layouts and not session.tab_groups[WT]  # type: ignore[index]
    assert problems(session, WT) == []


def test_move_tab_to_next_group_and_focus_next_group() -> None:
    session, first, second, a, b = two_groups()
    assert layout.focus_next_group(session, WT).active_group_id_by_worktree[WT] == first
    session = layout.select_tab(session, WT, a)
    session, a2, _ = layout.add_terminal_tab(session, WT, "a2", 2)
    moved = layout.move_tab_to_next_group(session, WT)
    assert [t.id for t in layout.terminal_tabs(moved, WT, second)] == [b, a2]
    assert moved.active_group_id_by_worktree[WT] == second and moved.active_tab_id == a2
    assert layout.group_of(moved, WT, first).active_tab_id == a  # type: ignore[union-attr]
    tab = next(t for t in moved.unified_tabs[WT] if t.id == a2)  # type: ignore[index]
    assert tab.group_id == second
    # moving the first group's last tab closes that group
    moved = layout.select_tab(moved, WT, a)
    gone = layout.move_tab_to_next_group(moved, WT)
    assert layout.group_ids(gone, WT) == [second]
    assert gone.tab_group_layouts[WT] == TabGroupLeaf(group_id=second)
    assert problems(gone, WT) == []
    assert layout.move_tab_to_next_group(gone, WT) is gone, "one group: nowhere to go"


def test_patch_of_several_groups_round_trips() -> None:
    session, first, second, a, b = two_groups()
    session = layout.select_tab(session, WT, a)
    again = layout.decode_session(layout.layout_patch(session))
    assert again.tab_group_layouts == session.tab_group_layouts
    assert again.active_group_id_by_worktree[WT] == first
    assert layout.group_of(again, WT, second).recent_tab_ids == (b,)  # type: ignore[union-attr]
    assert layout.normalize_groups(again, WT) is again


def test_old_sessions_with_one_group_keep_working() -> None:
    """A legacy session folded by the store, and a group with no tree or MRU, show as
    one group; the next tab joins it."""
    legacy = WorkspaceSessionState(
        tabs_by_worktree={
            WT: (TerminalTab(id="t1", worktree_id=WT), TerminalTab(id="t2", worktree_id=WT))
        },
        active_tab_id_by_worktree={WT: "t2"},
    )
    folded = synthesize_unified_tabs(legacy, layout.new_id)
    assert problems(folded, WT) == []
    assert [t.id for t in layout.terminal_tabs(folded, WT)] == ["t1", "t2"]
    assert layout.active_tab(folded, WT).id == "t2"  # type: ignore[union-attr]
    bare = msgspec.structs.replace(folded, tab_group_layouts={}, active_group_id_by_worktree={})
    groups = (bare.tab_groups or {})[WT]
    bare = msgspec.structs.replace(
        bare,
        tab_groups={WT: tuple(msgspec.structs.replace(g, recent_tab_ids=None) for g in groups)},
    )
    fixed = layout.normalize_groups(bare, WT)
    assert problems(fixed, WT) == []
    session, t3, _ = layout.add_terminal_tab(bare, WT, "t3", 0)
    assert [t.id for t in layout.terminal_tabs(session, WT)] == ["t1", "t2", t3]
    assert len(session.tab_groups[WT]) == 1 and problems(session, WT) == []  # type: ignore[index]


def test_tabs_without_a_group_get_one_named_after_them() -> None:
    """Repair mints nothing random: two UIs repairing the same session agree."""
    session, _tab, _ = layout.add_terminal_tab(WorkspaceSessionState(), WT, "a", 0)
    orphaned = msgspec.structs.replace(session, tab_groups={}, tab_group_layouts={})
    one, two = layout.normalize_groups(orphaned, WT), layout.normalize_groups(orphaned, WT)
    assert one == two and problems(one, WT) == []


Op = tuple[str, int]
OPS = st.lists(
    st.tuples(
        st.sampled_from(
            ["tab", "split_right", "split_down", "move", "next_group", "close", "select"]
        ),
        st.integers(0, 50),
    ),
    max_size=30,
)


def apply(session: WorkspaceSessionState, op: Op, clock: int) -> WorkspaceSessionState:
    kind, pick = op
    tabs = [t.id for t in (session.unified_tabs or {}).get(WT, ())]
    if kind == "tab":
        return layout.add_terminal_tab(session, WT, "t", clock)[0]
    if kind in ("split_right", "split_down"):
        direction: SplitDirection = "vertical" if kind == "split_right" else "horizontal"
        return layout.split_group(session, WT, direction, "t", clock)[0]
    if kind == "move":
        return layout.move_tab_to_next_group(session, WT)
    if kind == "next_group":
        return layout.focus_next_group(session, WT)
    if not tabs:
        return session
    tab = tabs[pick % len(tabs)]
    if kind == "select":
        return layout.select_tab(session, WT, tab)
    leaves = list(iter_terminal_leaf_ids(session.terminal_layouts_by_tab_id[tab].root))
    # close: the store retires the pane (its tab goes with its last pane), the UI repairs
    return layout.normalize_groups(retire_pane(session, tab, leaves[pick % len(leaves)]), WT)


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_any_sequence_of_split_close_move_keeps_the_tree_valid(ops: list[Op]) -> None:
    """Every leaf names an existing group, every tab's group exists and lists it, every
    group has a tab, the active group exists; and the saved patch decodes to the same."""
    session = WorkspaceSessionState()
    for clock, op in enumerate(ops):
        session = apply(session, op, clock)
        assert problems(session, WT) == [], op
        assert layout.normalize_groups(session, WT) is session, op
    again = layout.decode_session(layout.layout_patch(session))
    assert problems(again, WT) == []
    assert layout.group_ids(again, WT) == layout.group_ids(session, WT)


WT2 = "11111111-1111-4111-8111-111111111111::/tmp/wt2"
CLI_PANE = "term-184203d933fb:e2ac83ea-0a71-4cad-a26a-f656604a9e3d"  # as ptyd mints one


def test_a_terminal_without_a_leaf_is_adopted_into_a_tab_of_its_own_pane_key() -> None:
    """A terminal started with `orca term new` gets a tab whose pane key is the one ptyd
    gave it; the tab shown stays shown, and adopting again changes nothing."""
    session, shown, _leaf = layout.add_terminal_tab(WorkspaceSessionState(), WT, "shell", 0)
    adopted = layout.adopt_terminals(session, WT, [(CLI_PANE, "claude", 7)])
    assert layout.active_tab(adopted, WT).id == shown  # type: ignore[union-attr]
    tabs = layout.terminal_tabs(adopted, WT)
    assert [t.id for t in tabs] == [shown, "term-184203d933fb"]
    assert tabs[1].label == "claude" and tabs[1].created_at == 7
    assert layout.pane_keys(adopted, "term-184203d933fb") == [CLI_PANE]
    assert layout.normalize_groups(adopted, WT) is adopted
    assert layout.adopt_terminals(adopted, WT, [(CLI_PANE, "claude", 7)]) is adopted


def test_adopting_into_an_empty_worktree_shows_it_without_opening_the_worktree() -> None:
    """The adopted tab is the worktree's active one, but the session's open worktree
    stays the one the user had open."""
    session, _tab, _leaf = layout.add_terminal_tab(WorkspaceSessionState(), WT2, "shell", 0)
    adopted = layout.adopt_terminals(session, WT, [(CLI_PANE, "bash", 1)])
    assert layout.active_tab(adopted, WT).id == "term-184203d933fb"  # type: ignore[union-attr]
    assert adopted.active_worktree_id == WT2 and adopted.active_tab_id == session.active_tab_id
    assert layout.active_pane_key(adopted, "term-184203d933fb") == CLI_PANE


def test_a_terminal_of_an_existing_tab_becomes_a_pane_beside_its_panes() -> None:
    """A pane key naming a tab the worktree has (another client split it and saved no
    layout) is adopted as a leaf of that tab; an unparsable key is left alone."""
    session, tab, leaf = layout.add_terminal_tab(WorkspaceSessionState(), WT, "shell", 0)
    other = make_pane_key(tab, "0b3d6c1e-9d7a-4c1e-8f00-5b2f1f0c9a11")
    adopted = layout.adopt_terminals(session, WT, [(other, "sh", 1), ("junk", "sh", 2)])
    assert layout.pane_keys(adopted, tab) == [make_pane_key(tab, leaf), other]
    assert [t.id for t in layout.terminal_tabs(adopted, WT)] == [tab]
