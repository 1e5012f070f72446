"""What a restart brings back: transient tabs dropped, legacy tabs folded (seed 01 §6.2, §7.3)."""

from __future__ import annotations

import itertools

from orca.model.hydrate import hydrate_workspace_session
from orca.model.session import WorkspaceSessionState
from orca.model.session_restore import drop_transient_tabs, synthesize_unified_tabs
from orca.model.tabs import Tab, TabGroup, TerminalTab

WT = "r::/w"


def _tab(tab_id: str, content_type: str) -> Tab:
    return Tab(id=tab_id, entity_id=tab_id, group_id="g", worktree_id=WT, content_type=content_type)


def test_hydration_drops_diff_like_tabs_too() -> None:
    """hydrate_workspace_session applies the restart rule: a check-details tab goes."""
    session = WorkspaceSessionState(
        unified_tabs={WT: (_tab("e", "editor"), _tab("c", "check-details"))},
        tab_groups={
            WT: (TabGroup(id="g", worktree_id=WT, tab_order=("e", "c"), active_tab_id="c"),)
        },
    )
    out = hydrate_workspace_session(session, {WT})
    assert [t.id for t in (out.unified_tabs or {})[WT]] == ["e"]
    assert (out.tab_groups or {})[WT][0].active_tab_id == "e"


def test_session_without_transient_tabs_is_returned_as_is() -> None:
    """Nothing to drop: the same object comes back (callers detect change by identity)."""
    session = WorkspaceSessionState(unified_tabs={WT: (_tab("e", "editor"),)}, tab_groups={})
    assert drop_transient_tabs(session) is session


def test_unified_session_is_not_synthesized_again() -> None:
    """A session with unifiedTabs and tabGroups is left alone; an empty legacy one too."""
    counter = itertools.count()
    mint = lambda: f"g{next(counter)}"  # noqa: E731
    unified = WorkspaceSessionState(
        unified_tabs={},
        tab_groups={},
        tabs_by_worktree={WT: (TerminalTab(id="t", worktree_id=WT),)},
    )
    assert synthesize_unified_tabs(unified, mint) is unified
    empty = WorkspaceSessionState()
    assert synthesize_unified_tabs(empty, mint) is empty
