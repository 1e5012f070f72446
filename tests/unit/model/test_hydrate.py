"""Hydration drops rows for unknown workspaces and repairs layouts (seed 01 §3, §7.3)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from orca.model.hydrate import hydrate_workspace_session
from orca.model.layout import iter_layout_group_ids
from orca.model.session import WorkspaceSessionState
from orca.model.tabs import (
    PersistedOpenFile,
    Tab,
    TabGroup,
    TabGroupLeaf,
    TabGroupSplit,
    TerminalLayoutSnapshot,
    TerminalTab,
)

from .strategies import sessions

LIVE = "r1::/w/live"
DEAD = "r1::/w/dead"


def _tab(tid: str, gid: str, wid: str) -> Tab:
    return Tab(id=tid, entity_id=tid, group_id=gid, worktree_id=wid, content_type="terminal")


def _session() -> WorkspaceSessionState:
    return WorkspaceSessionState(
        active_worktree_id=DEAD,
        active_workspace_key=f"worktree:{DEAD}",
        tabs_by_worktree={
            LIVE: (TerminalTab(id="lt", worktree_id=LIVE),),
            f"worktree:{DEAD}": (TerminalTab(id="dt", worktree_id=DEAD),),
        },
        terminal_layouts_by_tab_id={"lt": TerminalLayoutSnapshot(), "dt": TerminalLayoutSnapshot(), "t1": TerminalLayoutSnapshot()},
        open_files_by_worktree={DEAD: (PersistedOpenFile(file_path="/w/dead/a.py", worktree_id=DEAD),)},
        active_worktree_ids_on_shutdown=(LIVE, DEAD),
        unified_tabs={LIVE: (_tab("t1", "g1", LIVE), _tab("t2", "g-gone", LIVE)), DEAD: (_tab("t3", "g3", DEAD),)},
        tab_groups={LIVE: (TabGroup(id="g1", worktree_id=LIVE),), DEAD: (TabGroup(id="g3", worktree_id=DEAD),)},
        tab_group_layouts={
            LIVE: TabGroupSplit(direction="vertical", first=TabGroupLeaf(group_id="g1"), second=TabGroupLeaf(group_id="g-gone")),
            DEAD: TabGroupLeaf(group_id="g3"),
        },
        active_group_id_by_worktree={LIVE: "g-gone", DEAD: "g3"},
        last_visited_at_by_worktree_id={f"local|{LIVE}": 5, f"local|{DEAD}": 6, "folder:f1": 7},
    )


def test_rows_for_unknown_worktrees_are_dropped_in_every_key_spelling() -> None:
    """Bare, ``worktree:`` and host-qualified keys of a vanished worktree are all dropped (seed 01 §7.3)."""
    out = hydrate_workspace_session(_session(), {LIVE})
    assert list(out.tabs_by_worktree) == [LIVE]
    assert out.open_files_by_worktree == {}
    assert set(out.unified_tabs or {}) == {LIVE} and set(out.tab_groups or {}) == {LIVE}
    assert out.last_visited_at_by_worktree_id == {f"local|{LIVE}": 5, "folder:f1": 7}
    assert out.active_worktree_ids_on_shutdown == (LIVE,)


def test_active_pointers_to_dropped_workspaces_are_cleared() -> None:
    """activeWorktreeId / activeWorkspaceKey naming a vanished worktree become None."""
    out = hydrate_workspace_session(_session(), {LIVE})
    assert out.active_worktree_id is None and out.active_workspace_key is None
    kept = hydrate_workspace_session(_session(), {LIVE, DEAD})
    assert kept.active_worktree_id == DEAD and kept.active_workspace_key == f"worktree:{DEAD}"


def test_layouts_are_pruned_to_surviving_groups_and_tabs_follow_their_group() -> None:
    """Layout leaves for missing groups are pruned; tabs of missing groups and stale focus go (seed 01 §7.3)."""
    out = hydrate_workspace_session(_session(), {LIVE})
    assert out.tab_group_layouts == {LIVE: TabGroupLeaf(group_id="g1")}
    assert [t.id for t in (out.unified_tabs or {})[LIVE]] == ["t1"]
    assert out.active_group_id_by_worktree == {}


def test_terminal_layouts_survive_only_for_surviving_tabs() -> None:
    """A terminal layout whose tab was dropped is dropped too."""
    out = hydrate_workspace_session(_session(), {LIVE})
    assert set(out.terminal_layouts_by_tab_id) == {"lt", "t1"}


def test_folder_keys_are_kept_unless_folder_ids_are_given() -> None:
    """``folder:`` rows survive by default and are filtered when valid folder ids are passed (seed 01 §4.5)."""
    assert "folder:f1" in hydrate_workspace_session(_session(), {LIVE}).last_visited_at_by_worktree_id
    out = hydrate_workspace_session(_session(), {LIVE}, valid_folder_workspace_ids=set())
    assert "folder:f1" not in out.last_visited_at_by_worktree_id


def test_legacy_session_without_unified_tabs_stays_legacy() -> None:
    """A session from a build without the unified model keeps unifiedTabs absent (None) (seed 01 §7.3)."""
    legacy = WorkspaceSessionState(tabs_by_worktree={LIVE: (TerminalTab(id="lt", worktree_id=LIVE),)})
    out = hydrate_workspace_session(legacy, {LIVE})
    assert out.unified_tabs is None and out.tab_groups is None and out == legacy


@given(sessions(), st.data())
def test_hydrated_sessions_only_reference_valid_worktrees_and_live_groups(
    session: WorkspaceSessionState, data: st.DataObject
) -> None:
    """For any session and any set of valid ids, no row names an unknown worktree and no leaf a missing group."""
    keys = sorted(session.tab_groups or {})
    valid = set(data.draw(st.lists(st.sampled_from(keys), unique=True))) if keys else set()
    out = hydrate_workspace_session(session, valid)
    assert set(out.tab_groups or {}) <= valid and set(out.tab_group_layouts) <= valid
    for key, tree in out.tab_group_layouts.items():
        live = {g.id for g in (out.tab_groups or {})[key]}
        assert set(iter_layout_group_ids(tree)) <= live
