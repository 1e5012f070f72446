"""The UI's layout rules (seed 01 §6), pure: tabs, groups, pane trees, the session patch."""

from __future__ import annotations

import pytest

from actors.ui import layout
from orca.model.panes import make_pane_key, parse_pane_key
from orca.model.session import WorkspaceSessionState
from orca.model.tabs import TerminalPaneLeaf, TerminalPaneSplit

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
