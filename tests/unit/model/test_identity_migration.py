"""Worktree identity migration after a folder move (seed 01 §4.3; ARCHITECTURE §3.1)."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orca.model.codec import to_builtins
from orca.model.identity_migration import (
    WORKTREE_ID_KEYED_SESSION_FIELDS,
    migrate_session_identity,
    migrate_worktree_identity,
)
from orca.model.ids import BadWorktreeId
from orca.model.session import WorkspaceSessionState
from orca.model.state import PersistedState
from orca.model.tabs import PersistedOpenFile, Tab, TabGroup, TabGroupLeaf, TerminalTab
from orca.model.worktree import WorkspaceLineage, WorktreeLineage, WorktreeMeta

from .strategies import persisted_states

OLD = "r1::/w/old-name"
NEW = "r1::/w/new-name"
CHILD = "r1::/w/child"


def _session() -> WorkspaceSessionState:
    return WorkspaceSessionState(
        active_worktree_id=OLD,
        active_workspace_key=f"worktree:{OLD}",
        active_worktree_ids_on_shutdown=(OLD, CHILD),
        tabs_by_worktree={OLD: (TerminalTab(id="t", worktree_id=OLD, startup_cwd="/w/old-name/src"),)},
        open_files_by_worktree={
            f"worktree:{OLD}": (PersistedOpenFile(file_path="/w/old-name/a.py", worktree_id=OLD),)
        },
        unified_tabs={OLD: (Tab(id="t", entity_id="t", group_id="g", worktree_id=OLD, content_type="terminal"),)},
        tab_groups={OLD: (TabGroup(id="g", worktree_id=OLD),)},
        tab_group_layouts={OLD: TabGroupLeaf(group_id="g")},
        last_visited_at_by_worktree_id={f"local|{OLD}": 1, CHILD: 2},
    )


def _state() -> PersistedState:
    return PersistedState(
        worktree_meta={OLD: WorktreeMeta(display_name="A", instance_id="i-old", prior_worktree_ids=("r1::/w/older",))},
        worktree_lineage_by_id={
            OLD: WorktreeLineage(worktree_id=OLD, worktree_instance_id="i-old", parent_worktree_id="r1::/w/p", parent_worktree_instance_id="ip"),
            CHILD: WorktreeLineage(worktree_id=CHILD, worktree_instance_id="ic", parent_worktree_id=OLD, parent_worktree_instance_id="i-old"),
        },
        workspace_lineage_by_child_key={
            f"worktree:{CHILD}": WorkspaceLineage(child_workspace_key=f"worktree:{CHILD}", parent_workspace_key=f"worktree:{OLD}"),
            f"worktree:{OLD}": WorkspaceLineage(child_workspace_key=f"worktree:{OLD}", parent_workspace_key="folder:f"),
        },
        workspace_session=_session(),
        workspace_sessions_by_host_id={"ssh:box": _session()},
    )


def test_meta_moves_to_new_id_and_records_old_id_in_prior_ids() -> None:
    """worktreeMeta is re-keyed and the old id is appended to priorWorktreeIds (seed 01 §4.3 steps 1-2)."""
    out = migrate_worktree_identity(_state(), OLD, NEW)
    assert OLD not in out.worktree_meta
    meta = out.worktree_meta[NEW]
    assert (meta.display_name, meta.instance_id) == ("A", "i-old")
    assert meta.prior_worktree_ids == ("r1::/w/older", OLD)


def test_migration_without_meta_still_records_the_old_id() -> None:
    """Even with no notes, the new meta lists the old id so the session GC keeps old-id PTYs alive (seed 01 §4.3)."""
    out = migrate_worktree_identity(PersistedState(), OLD, NEW)
    assert out.worktree_meta[NEW].prior_worktree_ids == (OLD,)


def test_renaming_back_does_not_list_the_current_id_as_prior() -> None:
    """A → B → A leaves A's meta listing B, not itself."""
    out = migrate_worktree_identity(migrate_worktree_identity(_state(), OLD, NEW), NEW, OLD)
    assert out.worktree_meta[OLD].prior_worktree_ids == ("r1::/w/older", NEW)


def test_lineage_is_rekeyed_and_back_references_fixed() -> None:
    """Lineage rows move, and children whose parent was the old id now point at the new id (seed 01 §4.3 step 3)."""
    out = migrate_worktree_identity(_state(), OLD, NEW)
    assert set(out.worktree_lineage_by_id) == {NEW, CHILD}
    assert out.worktree_lineage_by_id[NEW].worktree_id == NEW
    assert out.worktree_lineage_by_id[CHILD].parent_worktree_id == NEW
    assert out.worktree_lineage_by_id[CHILD].parent_worktree_instance_id == "i-old"
    wl = out.workspace_lineage_by_child_key
    assert set(wl) == {f"worktree:{CHILD}", f"worktree:{NEW}"}
    assert wl[f"worktree:{CHILD}"].parent_workspace_key == f"worktree:{NEW}"
    assert wl[f"worktree:{NEW}"].child_workspace_key == f"worktree:{NEW}"


@pytest.mark.parametrize("host", ["local", "ssh:box"])
def test_sessions_of_every_host_are_rekeyed(host: str) -> None:
    """Each worktree-keyed session map, in every host partition, moves to the new id (seed 01 §4.3 step 1)."""
    out = migrate_worktree_identity(_state(), OLD, NEW)
    s = out.workspace_session if host == "local" else out.workspace_sessions_by_host_id[host]
    assert list(s.tabs_by_worktree) == [NEW]
    assert list(s.open_files_by_worktree) == [f"worktree:{NEW}"]
    assert list(s.unified_tabs or {}) == [NEW] and list(s.tab_groups or {}) == [NEW]
    assert list(s.tab_group_layouts) == [NEW]
    assert s.last_visited_at_by_worktree_id == {f"local|{NEW}": 1, CHILD: 2}
    assert (s.active_worktree_id, s.active_workspace_key) == (NEW, f"worktree:{NEW}")
    assert s.active_worktree_ids_on_shutdown == (NEW, CHILD)


def test_worktree_ids_and_absolute_paths_inside_rows_are_rewritten() -> None:
    """Tab/group/file worktreeIds follow, and startupCwd / file paths move to the new folder (seed 01 §4.3)."""
    s = migrate_worktree_identity(_state(), OLD, NEW).workspace_session
    term = s.tabs_by_worktree[NEW][0]
    assert (term.worktree_id, term.startup_cwd) == (NEW, "/w/new-name/src")
    f = s.open_files_by_worktree[f"worktree:{NEW}"][0]
    assert (f.worktree_id, f.file_path) == (NEW, "/w/new-name/a.py")
    assert (s.unified_tabs or {})[NEW][0].worktree_id == NEW
    assert (s.tab_groups or {})[NEW][0].worktree_id == NEW


def test_paths_that_only_share_a_prefix_are_not_rewritten() -> None:
    """``/w/old-name-2`` is not inside ``/w/old-name`` and stays put."""
    session = WorkspaceSessionState(tabs_by_worktree={OLD: (TerminalTab(id="t", worktree_id=OLD, startup_cwd="/w/old-name-2"),)})
    out = migrate_session_identity(session, OLD, NEW)
    assert out.tabs_by_worktree[NEW][0].startup_cwd == "/w/old-name-2"


def test_same_id_returns_the_same_state_and_bad_ids_raise() -> None:
    """A no-op rename is the identity; malformed ids are the caller's fault (BadWorktreeId)."""
    state = _state()
    assert migrate_worktree_identity(state, OLD, OLD) is state
    with pytest.raises(BadWorktreeId):
        migrate_worktree_identity(state, "junk", NEW)
    with pytest.raises(BadWorktreeId):
        migrate_worktree_identity(state, OLD, "")


@settings(max_examples=30, deadline=None)
@given(persisted_states(), st.data())
def test_after_migration_no_session_map_key_names_the_old_id(state: PersistedState, data: st.DataObject) -> None:
    """For any state, the old id disappears from every keyed record and meta lists it as prior (seed 01 §4.3)."""
    ids = sorted(state.worktree_meta) + sorted(state.workspace_session.tab_groups or {})
    if not ids:
        return
    old = data.draw(st.sampled_from(ids))
    new = old + "-moved"
    out = migrate_worktree_identity(state, old, new)
    assert old not in out.worktree_meta and old in out.worktree_meta[new].prior_worktree_ids
    for session in (out.workspace_session, *out.workspace_sessions_by_host_id.values()):
        for field in WORKTREE_ID_KEYED_SESSION_FIELDS:
            keys = getattr(session, field) or {}
            assert old not in keys and f"worktree:{old}" not in keys
    assert f'"{old}"' not in msgspec.json.encode(to_builtins(out.workspace_session)).decode()


def test_every_worktree_keyed_session_map_is_registered_for_migration() -> None:
    """Every ``*_by_worktree``/``*_by_worktree_id`` map of the session is in the migration list (seed 01 §8.3)."""
    fields = WorkspaceSessionState.__struct_fields__
    by_name = {f for f in fields if f.endswith(("_by_worktree", "_by_worktree_id"))}
    assert by_name <= set(WORKTREE_ID_KEYED_SESSION_FIELDS)
    assert set(WORKTREE_ID_KEYED_SESSION_FIELDS) <= set(fields)
