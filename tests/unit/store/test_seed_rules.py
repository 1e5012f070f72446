"""Seed rules closed by issue 15 (audit rows 01-31, 01-54, 01-70, 01-81/02-20, 02-05, 02-22)
and the project-group cycle rule: each test is named after the behaviour."""

from __future__ import annotations

import itertools
import json
import uuid
from typing import Any

import pytest

from actors.store import entities, sessions, worktrees
from actors.store.load import LEGACY_TABS_MARKER, LoadedState, decode_state
from actors.store.session_normalize import normalize_session_for_write
from orca.contracts import store
from orca.model.codec import encode_json, from_builtins, to_builtins
from orca.model.layout import iter_terminal_leaf_ids
from orca.model.session import WorkspaceSessionState
from orca.model.state import SCHEMA_VERSION, PersistedState
from orca.model.tabs import TabGroupLeaf
from orca.model.types_repo import ProjectGroup
from orca.model.worktree import WorktreeLineage, WorktreeMeta
from orca.wire.errors import Conflict

WT = "r::/w/a"
PARENT = "r::/w/p"
U1, U2 = (str(uuid.UUID(int=i)) for i in (1, 2))


def minter() -> Any:
    counter = itertools.count(100)
    return lambda: str(uuid.UUID(int=next(counter)))


def load(doc: dict[str, Any]) -> LoadedState:
    return decode_state(json.dumps(doc).encode(), home_dir="/home/u", mint=minter())


def reload(state: PersistedState) -> LoadedState:
    return decode_state(encode_json(state), home_dir="/home/u", mint=minter())


def tab(tab_id: str, content_type: str, key: str = WT) -> dict[str, Any]:
    return {
        "id": tab_id,
        "entityId": tab_id,
        "groupId": "g",
        "worktreeId": key,
        "contentType": content_type,
    }


# -- 02-05: schemaVersion gate ---------------------------------------------------------
def test_file_from_a_newer_schema_version_loads_read_only_without_migrations() -> None:
    """A newer build's file is decoded as it is, flagged, reported and not migrated."""
    doc = {
        "schemaVersion": SCHEMA_VERSION + 1,
        "repos": [{"id": "r", "path": "/src/r", "displayName": "r", "futureField": 1}],
        "workspaceSession": {"tabsByWorktree": {WT: [{"id": "t", "worktreeId": WT}]}},
    }
    loaded = load(doc)
    assert loaded.newer_schema == SCHEMA_VERSION + 1
    assert loaded.migrations == ()
    assert any("newer Orca" in p and str(SCHEMA_VERSION + 1) in p for p in loaded.problems)
    assert loaded.state.repos[0].extra == {"futureField": 1}
    assert loaded.state.workspace_session.unified_tabs is None  # no legacy conversion
    assert LEGACY_TABS_MARKER not in loaded.state.extra


def test_newer_schema_file_that_does_not_decode_is_not_treated_as_corrupt() -> None:
    """A newer shape this build cannot read stands in as defaults, not a corrupt file."""
    loaded = load({"schemaVersion": SCHEMA_VERSION + 5, "repos": "a map in v6"})
    assert loaded.newer_schema == SCHEMA_VERSION + 5
    assert loaded.state.repos == ()
    assert any("does not decode" in p for p in loaded.problems)


def test_file_of_this_or_an_older_schema_version_loads_normally() -> None:
    """Only a version above ours gates; the migrations run for older files."""
    for version in (0, SCHEMA_VERSION):
        loaded = load({"schemaVersion": version, "repos": []})
        assert loaded.newer_schema is None and loaded.problems == ()
        assert loaded.migrations


# -- 01-31: instanceId fences lineage --------------------------------------------------
def lineage(child_instance: str, parent_instance: str = "p1") -> dict[str, Any]:
    return {
        "worktreeId": WT,
        "worktreeInstanceId": child_instance,
        "parentWorktreeId": PARENT,
        "parentWorktreeInstanceId": parent_instance,
    }


def with_metas(**instances: str) -> PersistedState:
    ids = {"child": WT, "parent": PARENT}
    metas = {ids[k]: WorktreeMeta(instance_id=v) for k, v in instances.items()}
    return PersistedState(worktree_meta=metas)


def test_removing_a_worktree_meta_drops_its_lineage() -> None:
    """A new worktree at the same path must not inherit the removed one's parent."""
    state = worktrees.set_lineage(with_metas(child="i1", parent="p1"), WT, lineage("i1")).state
    change = worktrees.remove_meta(state, WT)
    assert WT not in change.state.worktree_lineage_by_id
    assert store.LineageChanged(worktree_id=WT, lineage=None) in change.events


def test_lineage_set_refuses_an_instance_id_that_is_not_the_metas() -> None:
    """lineage.set with a stale worktreeInstanceId (or parent instance) is a conflict."""
    state = with_metas(child="i2", parent="p1")
    with pytest.raises(Conflict, match="path was reused"):
        worktrees.set_lineage(state, WT, lineage("i1"))
    with pytest.raises(Conflict, match="parentWorktreeInstanceId"):
        worktrees.set_lineage(state, WT, lineage("i2", parent_instance="p0"))
    assert worktrees.set_lineage(state, WT, lineage("i2")).result is not None


def test_lineage_of_an_earlier_instance_is_not_served_as_the_parent() -> None:
    """A row whose instance ids disagree with the metas is reported stale, not served."""
    row = from_builtins(WorktreeLineage, lineage("i1"))
    reused = PersistedState(
        worktree_meta={WT: WorktreeMeta(instance_id="i2")}, worktree_lineage_by_id={WT: row}
    )
    view = worktrees.lineage_view(reused, WT)
    assert view.lineage is None and view.verdict == "stale_child"
    parent_reused = PersistedState(
        worktree_meta={WT: WorktreeMeta(instance_id="i1"), PARENT: WorktreeMeta(instance_id="p9")},
        worktree_lineage_by_id={WT: row},
    )
    assert worktrees.lineage_view(parent_reused, WT).verdict == "stale_parent"
    current = PersistedState(
        worktree_meta={WT: WorktreeMeta(instance_id="i1")}, worktree_lineage_by_id={WT: row}
    )
    assert worktrees.lineage_view(current, WT).lineage == row


# -- 01-54: diff-like tabs are transient -----------------------------------------------
def test_only_workspace_visible_tabs_come_back_after_a_restart() -> None:
    """diff, conflict-review and check-details tabs are dropped at load; the rest stays."""
    kinds = [
        "terminal",
        "editor",
        "diff",
        "conflict-review",
        "check-details",
        "browser",
        "simulator",
    ]
    session = {
        "unifiedTabs": {WT: [tab(k, k) for k in kinds]},
        "tabGroups": {
            WT: [
                {
                    "id": "g",
                    "worktreeId": WT,
                    "tabOrder": kinds,
                    "activeTabId": "diff",
                    "recentTabIds": ["editor", "diff"],
                }
            ]
        },
        "activeRepoId": "r",
    }
    loaded = load({"workspaceSession": session})
    restored = loaded.state.workspace_session
    assert [t.id for t in (restored.unified_tabs or {})[WT]] == [
        "terminal",
        "editor",
        "browser",
        "simulator",
    ]
    group = (restored.tab_groups or {})[WT][0]
    assert group.tab_order == ("terminal", "editor", "browser", "simulator")
    assert group.active_tab_id == "editor" and group.recent_tab_ids == ("editor",)
    assert restored.active_repo_id == "r"


# -- 01-70: legacy sessions are folded into the unified model ---------------------------
LEGACY = {
    "tabsByWorktree": {
        WT: [
            {"id": "t2", "worktreeId": WT, "title": "second", "sortOrder": 2},
            {"id": "t1", "worktreeId": WT, "title": "first", "sortOrder": 1},
        ]
    },
    "openFilesByWorktree": {
        WT: [{"filePath": "/w/a/x.py", "relativePath": "x.py", "worktreeId": WT}]
    },
    "activeTabTypeByWorktree": {WT: "editor"},
    "activeFileIdByWorktree": {WT: "/w/a/x.py"},
}


def test_legacy_session_without_unified_tabs_is_converted_to_one_group_per_worktree() -> None:
    """Terminals by sortOrder, then files, in one group; legacy fields are kept too."""
    loaded = load({"workspaceSession": LEGACY})
    session = loaded.state.workspace_session
    tabs = (session.unified_tabs or {})[WT]
    assert [(t.id, t.content_type) for t in tabs] == [
        ("t1", "terminal"),
        ("t2", "terminal"),
        ("/w/a/x.py", "editor"),
    ]
    (group,) = (session.tab_groups or {})[WT]
    assert group.tab_order == ("t1", "t2", "/w/a/x.py") and group.active_tab_id == "/w/a/x.py"
    assert all(t.group_id == group.id for t in tabs)
    assert session.tab_group_layouts[WT] == TabGroupLeaf(group_id=group.id)
    assert session.active_group_id_by_worktree[WT] == group.id
    assert set(session.tabs_by_worktree) == {WT}  # the bare legacy form stays for downgrades
    assert LEGACY_TABS_MARKER in loaded.migrations and loaded.state.extra[LEGACY_TABS_MARKER]


def test_legacy_conversion_runs_once() -> None:
    """A second load changes nothing; a marked file is not converted again."""
    first = load({"workspaceSession": LEGACY}).state
    second = reload(first)
    assert second.state == first and LEGACY_TABS_MARKER not in second.migrations
    marked = load({"workspaceSession": LEGACY, LEGACY_TABS_MARKER: True})
    assert marked.state.workspace_session.unified_tabs is None


# -- 01-81 / 02-20: pane-keyed maps follow a leaf re-mint -------------------------------
def test_acknowledged_agents_follow_a_reminted_leaf() -> None:
    """acknowledgedAgentsByPaneKey moves from ``t:0`` to ``t:<uuid>`` with the leaf."""
    session = {
        "terminalLayoutsByTabId": {"t": {"root": {"type": "leaf", "leafId": "0"}}},
        "acknowledgedAgentsByPaneKey": {"t:0": 1234, "other:x": 5},
        "sleepingAgentSessionsByPaneKey": {"t:0": {"agent": "claude"}},
    }
    change = sessions.set_session(PersistedState(), None, session, None, minter())
    stored = change.state.workspace_session
    (new_leaf,) = iter_terminal_leaf_ids(stored.terminal_layouts_by_tab_id["t"].root)
    assert new_leaf != "0"
    assert stored.acknowledged_agents_by_pane_key == {f"t:{new_leaf}": 1234, "other:x": 5}
    assert "acknowledgedAgentsByPaneKey" not in stored.extra
    assert set(stored.sleeping_agent_sessions_by_pane_key) == {f"t:{new_leaf}"}


# -- 02-22: live PTYs that cannot be migrated are marked unsupported --------------------
def layout_session(layouts: dict[str, Any]) -> WorkspaceSessionState:
    return from_builtins(WorkspaceSessionState, {"terminalLayoutsByTabId": layouts})


def split(a: str, b: str) -> dict[str, Any]:
    return {
        "type": "split",
        "direction": "vertical",
        "first": {"type": "leaf", "leafId": a},
        "second": {"type": "leaf", "leafId": b},
    }


def test_pty_of_a_leaf_duplicated_in_its_tab_is_marked_unsupported_not_rebound() -> None:
    """Two panes named ``1`` in one tab: neither gets the PTY; it is marked instead."""
    incoming = layout_session(
        {"t": {"root": split("1", "1"), "ptyIdsByLeafId": {"1": "wt@@aaaa0001"}}}
    )
    out = normalize_session_for_write(incoming, WorkspaceSessionState(), minter())
    snapshot = out.session.terminal_layouts_by_tab_id["t"]
    assert snapshot.pty_ids_by_leaf_id == {}
    assert out.session.unsupported_pty_ids_by_tab_id == {"t": ("wt@@aaaa0001",)}
    assert out.unsupported_pty_ids == {"t": ("wt@@aaaa0001",)}


def test_unique_numeric_leaf_keeps_its_pty_and_marks_nothing() -> None:
    """A safe re-mint (one leaf ``0`` per tab) moves the binding and marks nothing."""
    incoming = layout_session(
        {
            "a": {"root": {"type": "leaf", "leafId": "0"}, "ptyIdsByLeafId": {"0": "p-a"}},
            "b": {"root": {"type": "leaf", "leafId": "0"}, "ptyIdsByLeafId": {"0": "p-b"}},
        }
    )
    out = normalize_session_for_write(incoming, WorkspaceSessionState(), minter())
    layouts = out.session.terminal_layouts_by_tab_id
    assert sorted(v for s in layouts.values() for v in s.pty_ids_by_leaf_id.values()) == [
        "p-a",
        "p-b",
    ]
    assert out.session.unsupported_pty_ids_by_tab_id == {}


def test_pty_bound_to_a_copied_layout_twice_is_marked_unsupported_in_both_tabs() -> None:
    """The same UUID leaf and PTY in two tabs (a copied layout): no pane keeps it."""
    copied = {"root": {"type": "leaf", "leafId": U1}, "ptyIdsByLeafId": {U1: "p-shared"}}
    incoming = layout_session({"a": copied, "b": copied})
    out = normalize_session_for_write(incoming, WorkspaceSessionState(), minter())
    layouts = out.session.terminal_layouts_by_tab_id
    assert all(s.pty_ids_by_leaf_id == {} for s in layouts.values())
    assert out.session.unsupported_pty_ids_by_tab_id == {"a": ("p-shared",), "b": ("p-shared",)}


def test_load_marks_unmigratable_ptys_of_an_old_file() -> None:
    """The load-time pane migration applies the same marking."""
    session = {
        "terminalLayoutsByTabId": {"t": {"root": split("0", "0"), "ptyIdsByLeafId": {"0": "p"}}}
    }
    loaded = load({"workspaceSession": session})
    assert loaded.state.workspace_session.unsupported_pty_ids_by_tab_id == {"t": ("p",)}
    again = reload(loaded.state)
    assert again.state.workspace_session.unsupported_pty_ids_by_tab_id == {"t": ("p",)}


# -- project groups: no cycles ----------------------------------------------------------
def groups(*pairs: tuple[str, str | None]) -> PersistedState:
    return PersistedState(
        project_groups=tuple(ProjectGroup(id=g, name=g, parent_group_id=p) for g, p in pairs)
    )


def test_project_group_upsert_refuses_to_make_a_group_its_own_ancestor() -> None:
    """a <- b <- c; re-parenting a under c would close the loop: conflict."""
    state = groups(("a", None), ("b", "a"), ("c", "b"))
    with pytest.raises(Conflict, match="own ancestor: a -> c -> b -> a"):
        entities.upsert_project_group(
            state, {"id": "a", "name": "a", "parentGroupId": "c"}, new_id="x", now_ms=1
        )
    moved = entities.upsert_project_group(
        state, {"id": "c", "name": "c", "parentGroupId": "a"}, new_id="x", now_ms=1
    )
    assert to_builtins(moved.result)["parentGroupId"] == "a"


def test_unsupported_mark_goes_with_its_retired_tab() -> None:
    """Retiring the last pane of a tab also drops that tab's unsupported PTY ids."""
    session = {
        "terminalLayoutsByTabId": {"t": {"root": split("0", "0"), "ptyIdsByLeafId": {"0": "p"}}}
    }
    state = load({"workspaceSession": session}).state
    layout = state.workspace_session.terminal_layouts_by_tab_id["t"]
    for leaf_id in list(iter_terminal_leaf_ids(layout.root)):
        state = sessions.retire_session_pane(state, None, "t", leaf_id).state
    assert state.workspace_session.unsupported_pty_ids_by_tab_id == {}
