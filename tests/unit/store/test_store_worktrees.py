"""Worktree notes, GC, identity migration and resolution (seed 01 §4.3, §7.5 ②)."""

from __future__ import annotations

from typing import Any

import pytest

from actors.store import sessions, worktrees
from actors.store.worktrees import WORKTREE_META_GC_GRACE_MS
from orca.contracts import store
from orca.contracts.base import spec_of
from orca.model.codec import to_builtins
from orca.model.state import PersistedState
from orca.model.types_repo import Repo
from orca.model.worktree import WorktreeMeta
from orca.wire.errors import BadRequest, NotFound

NOW = 10 * WORKTREE_META_GC_GRACE_MS
OLD = NOW - WORKTREE_META_GC_GRACE_MS - 1


def with_repos(**metas: WorktreeMeta) -> PersistedState:
    repos = (
        Repo(id="loc", path="/src/loc", display_name="loc"),
        Repo(id="rem", path="/src/rem", display_name="rem", connection_id="box"),
    )
    return PersistedState(repos=repos, worktree_meta=dict(metas))


def candidates(state: PersistedState) -> set[str]:
    return {w for w, _ in worktrees.gc_candidates(state, NOW)}


def test_gc_takes_only_local_absolute_idle_unowned_checkouts() -> None:
    """Every narrowing rule of seed 01 §7.5 ② excludes its case."""
    idle = WorktreeMeta(last_activity_at=OLD)
    state = PersistedState(
        repos=with_repos().repos,
        worktree_meta={
            "loc::/w/dead": idle,
            "loc::/w/recent": WorktreeMeta(last_activity_at=NOW - 1000),
            "loc::/src/loc::workspace:abc": idle,
            "rem::/w/remote": idle,
            "loc::/w/ssh-meta": WorktreeMeta(last_activity_at=OLD, host_id="ssh:box"),
            "loc::/w/project": WorktreeMeta(last_activity_at=OLD, project_id="p"),
            "loc::relative/path": idle,
            "gone::/w/no-repo": idle,
        },
    )
    assert candidates(state) == {"loc::/w/dead"}


def test_gc_removes_only_candidates_whose_path_is_gone_now() -> None:
    """remove_stale_meta re-checks eligibility against the current state."""
    state = with_repos(**{"loc::/w/a": WorktreeMeta(last_activity_at=OLD)})
    touched = worktrees.patch_meta(state, "loc::/w/a", {"lastActivityAt": NOW}).state
    assert worktrees.remove_stale_meta(touched, ["loc::/w/a"], NOW).state is touched
    change = worktrees.remove_stale_meta(state, ["loc::/w/a"], NOW)
    assert change.state.worktree_meta == {}
    assert to_builtins(change.events[0]) == {"worktreeIds": ["loc::/w/a"]}


def test_meta_patch_creates_and_rejects_bad_ids() -> None:
    """Patching an unknown worktree creates its note; a malformed id is a bad request."""
    change = worktrees.patch_meta(PersistedState(), "r::/w", {"comment": "hi"})
    assert change.state.worktree_meta["r::/w"].comment == "hi"
    with pytest.raises(BadRequest):
        worktrees.patch_meta(PersistedState(), "no-separator", {})


def session_with_tab(worktree_id: str) -> dict[str, Any]:
    return {
        "unifiedTabs": {
            worktree_id: [
                {
                    "id": "t",
                    "entityId": "t",
                    "groupId": "g",
                    "worktreeId": worktree_id,
                    "contentType": "terminal",
                }
            ]
        }
    }


def test_rename_keeps_sessions_findable_under_the_old_id() -> None:
    """After a folder move the old id resolves as an alias of the new one (seed 01 §4.3)."""
    state = worktrees.patch_meta(PersistedState(), "r::/w/old", {"comment": "note"}).state
    state = sessions.set_session(
        state, "ssh:box", session_with_tab("r::/w/old"), None, lambda: "x"
    ).state
    change = worktrees.migrate_identity(state, "r::/w/old", "r::/w/new")
    assert change.durability == "flush"
    assert [spec_of(e) for e in change.events] == [
        store.WORKTREE_RENAMED,
        store.WORKTREE_META_REMOVED,
        store.WORKTREE_META_CHANGED,
        store.SESSION_CHANGED,
    ]
    assert change.events[0] == store.WorktreeRenamed(old_id="r::/w/old", new_id="r::/w/new")
    assert to_builtins(change.events[3])["hostId"] == "ssh:box"
    new = change.state
    assert new.worktree_meta["r::/w/new"].prior_worktree_ids == ("r::/w/old",)
    assert new.worktree_meta["r::/w/new"].comment == "note"
    assert to_builtins(worktrees.resolve_identity(new, "r::/w/old")) == {
        "status": "alias",
        "worktreeId": "r::/w/new",
    }
    assert worktrees.resolve_identity(new, "r::/w/new").status == "current"
    assert list(new.workspace_sessions_by_host_id["ssh:box"].unified_tabs or {}) == ["r::/w/new"]


def test_resolve_knows_repo_roots_and_session_rows_without_meta() -> None:
    """A main checkout or a worktree with tabs but no notes is current; others unknown."""
    state = PersistedState(repos=(Repo(id="r", path="/src/r", display_name="r"),))
    state = sessions.set_session(
        state, None, session_with_tab("worktree:r::/w/x"), None, lambda: "x"
    ).state
    assert worktrees.resolve_identity(state, "r::/src/r").status == "current"
    assert worktrees.resolve_identity(state, "r::/w/x").status == "current"
    assert to_builtins(worktrees.resolve_identity(state, "r::/w/y")) == {
        "status": "unknown",
        "worktreeId": None,
    }


def test_migrate_with_equal_ids_changes_nothing_and_bad_ids_are_refused() -> None:
    """Renaming to the same id is a no-op; malformed ids are the caller's error."""
    state = PersistedState()
    assert worktrees.migrate_identity(state, "r::/a", "r::/a").state is state
    with pytest.raises(BadRequest):
        worktrees.migrate_identity(state, "bad", "r::/a")


def test_lineage_must_be_stored_under_its_own_worktree_id() -> None:
    """lineage.worktreeId must equal the key; null clears it."""
    raw = {
        "worktreeId": "r::/c",
        "worktreeInstanceId": "i1",
        "parentWorktreeId": "r::/p",
        "parentWorktreeInstanceId": "i0",
    }
    state = worktrees.set_lineage(PersistedState(), "r::/c", raw).state
    assert state.worktree_lineage_by_id["r::/c"].parent_worktree_id == "r::/p"
    with pytest.raises(BadRequest):
        worktrees.set_lineage(PersistedState(), "r::/other", raw)
    cleared = worktrees.set_lineage(state, "r::/c", None)
    assert cleared.state.worktree_lineage_by_id == {}
    assert to_builtins(cleared.events[0]) == {"worktreeId": "r::/c", "lineage": None}
    assert cleared.result is None


def test_rename_fixes_lineage_back_references() -> None:
    """A child's parentWorktreeId follows its parent's rename."""
    raw = {
        "worktreeId": "r::/c",
        "worktreeInstanceId": "i1",
        "parentWorktreeId": "r::/p",
        "parentWorktreeInstanceId": "i0",
    }
    state = worktrees.set_lineage(PersistedState(), "r::/c", raw).state
    state = worktrees.migrate_identity(state, "r::/p", "r::/p2").state
    assert state.worktree_lineage_by_id["r::/c"].parent_worktree_id == "r::/p2"


def test_resolve_folder_workspace_ids_by_the_folder_table() -> None:
    """``folder:<id>`` is current while that folder workspace exists, else unknown."""
    from actors.store import entities

    state = entities.upsert_project_group(
        PersistedState(), {"id": "g", "name": "G"}, new_id="x", now_ms=1
    ).state
    state = entities.upsert_folder_workspace(
        state, {"projectGroupId": "g", "name": "d", "folderPath": "/d"}, new_id="f1", now_ms=1
    ).state
    assert worktrees.resolve_identity(state, "folder:f1").status == "current"
    assert worktrees.resolve_identity(state, "folder:f2").status == "unknown"


def test_every_earlier_name_of_a_twice_renamed_worktree_resolves_to_its_current_id() -> None:
    """A→B→C: sessions minted under A or B still belong to C (the GC must not reap them)."""
    state = worktrees.patch_meta(PersistedState(), "r::/a", {}).state
    state = worktrees.migrate_identity(state, "r::/a", "r::/b").state
    state = worktrees.migrate_identity(state, "r::/b", "r::/c").state
    for old in ("r::/a", "r::/b"):
        assert worktrees.resolve_identity(state, old) == store.IdentityResolved(
            status="alias", worktree_id="r::/c"
        )
    assert list(state.worktree_meta) == ["r::/c"]


DEAD, LIVE = "loc::/w/dead", "loc::/w/live"
LEAF = "3f1c2a9e-0000-4000-8000-000000000001"


def two_worktree_session() -> dict[str, Any]:
    """Tabs, groups and terminal panes in ``DEAD`` and ``LIVE``, plus a pane saved on its own."""

    def tab(tab_id: str, worktree_id: str) -> dict[str, Any]:
        return {
            "id": tab_id,
            "entityId": tab_id,
            "groupId": f"g-{tab_id}",
            "worktreeId": worktree_id,
            "contentType": "terminal",
        }

    pane = {"root": {"type": "leaf", "leafId": LEAF}}
    return {
        "activeWorktreeId": DEAD,
        "unifiedTabs": {DEAD: [tab("td", DEAD)], LIVE: [tab("tl", LIVE)]},
        "tabGroups": {
            DEAD: [{"id": "g-td", "worktreeId": DEAD}],
            LIVE: [{"id": "g-tl", "worktreeId": LIVE}],
        },
        "terminalLayoutsByTabId": {"td": pane, "tl": pane, "lone": pane},
        "lastVisitedAtByWorktreeId": {f"local|{DEAD}": 1, f"local|{LIVE}": 2},
    }


def test_removing_a_worktrees_meta_drops_its_session_rows_so_it_resolves_unknown() -> None:
    """worktree rm → worktreeMeta.remove hydrates every host's session without the dead
    worktree (seed 01 §3 step 3; review 01-15): identity.resolve stops saying current."""
    state = with_repos(**{DEAD: WorktreeMeta(), LIVE: WorktreeMeta()})
    state = sessions.set_session(state, None, two_worktree_session(), None, lambda: "x").state
    state = sessions.set_session(
        state, "ssh:box", session_with_tab(DEAD), None, lambda: "x"
    ).state
    change = worktrees.remove_meta(state, DEAD)
    assert [spec_of(e) for e in change.events] == [
        store.WORKTREE_META_REMOVED,
        store.SESSION_CHANGED,
        store.SESSION_CHANGED,
    ]
    assert [to_builtins(e)["hostId"] for e in change.events[1:]] == ["local", "ssh:box"]
    new = change.state
    assert worktrees.resolve_identity(new, DEAD).status == "unknown"
    assert worktrees.resolve_identity(new, LIVE).status == "current"
    local = new.workspace_session
    assert set(local.unified_tabs or {}) == {LIVE} and set(local.tab_groups or {}) == {LIVE}
    assert set(local.terminal_layouts_by_tab_id) == {"tl", "lone"}  # a lone pane is no row
    assert local.last_visited_at_by_worktree_id == {f"local|{LIVE}": 2}
    assert local.active_worktree_id is None
    assert new.workspace_sessions_by_host_id["ssh:box"].unified_tabs == {}


def test_removing_a_worktree_made_outside_orca_drops_its_rows_though_it_had_no_meta() -> None:
    """A worktree with tabs but no meta, removed with ``orca worktree rm``, loses its rows;
    an id nothing names is still ``not_found``."""
    state = sessions.set_session(
        with_repos(), None, session_with_tab(DEAD), None, lambda: "x"
    ).state
    assert worktrees.resolve_identity(state, DEAD).status == "current"
    change = worktrees.remove_meta(state, DEAD)
    assert to_builtins(change.result) == {"removed": []}
    assert [spec_of(e) for e in change.events] == [store.SESSION_CHANGED]
    assert worktrees.resolve_identity(change.state, DEAD).status == "unknown"
    with pytest.raises(NotFound):
        worktrees.remove_meta(change.state, DEAD)


def test_meta_gc_drops_the_session_rows_of_the_worktrees_it_collects() -> None:
    """A worktree deleted outside Orca loses its rows when the meta GC collects it."""
    state = with_repos(**{DEAD: WorktreeMeta(last_activity_at=OLD)})
    state = sessions.set_session(state, None, session_with_tab(DEAD), None, lambda: "x").state
    change = worktrees.remove_stale_meta(state, [DEAD], NOW)
    assert change.state.worktree_meta == {}
    assert change.state.workspace_session.unified_tabs == {}
    assert worktrees.resolve_identity(change.state, DEAD).status == "unknown"


def test_removing_a_worktree_no_session_names_leaves_every_session_as_it_was() -> None:
    """Partitions that do not name the removed worktree are not touched (no incidental repair)."""
    state = with_repos(**{DEAD: WorktreeMeta(), LIVE: WorktreeMeta()})
    state = sessions.set_session(state, None, session_with_tab(LIVE), None, lambda: "x").state
    change = worktrees.remove_meta(state, DEAD)
    assert change.state.workspace_session is state.workspace_session
    assert [spec_of(e) for e in change.events] == [store.WORKTREE_META_REMOVED]
