"""gitwatch's mirror of store: folding store events into the view (pure)."""

from __future__ import annotations

from typing import Any

from actors.gitwatch.storeview import StoreView, apply_store_event, load_store_view
from orca.wire.envelope import Event


def _event(kind: str, data: dict[str, Any]) -> Event:
    return Event(v=1, src="store", epoch="e", seq=1, type=kind, data=data)


SNAPSHOT = {
    "epoch": "e",
    "seq": 0,
    "state": {
        "repos": [{"id": "r1", "path": "/src/a", "displayName": "a"}],
        "settings": {"workspaceDir": "/ws", "nestWorkspaces": False},
        "worktreeMeta": {"r1::/ws/x": {"displayName": "X"}},
    },
}


def test_snapshot_loads_repos_settings_and_meta() -> None:
    """The view holds the repos by id, the settings and the meta table."""
    view = load_store_view(SNAPSHOT)
    assert view.repos["r1"].path == "/src/a"
    assert (view.settings.workspace_dir, view.settings.nest_workspaces) == ("/ws", False)
    assert view.meta["r1::/ws/x"].display_name == "X"


def test_repo_events_add_update_and_remove() -> None:
    """repo.added/updated replace by id; repo.removed drops it."""
    view = load_store_view(SNAPSHOT)
    view = apply_store_event(
        view, _event("repo.added", {"repo": {"id": "r2", "path": "/b", "displayName": "b"}})
    )
    view = apply_store_event(
        view, _event("repo.updated", {"repo": {"id": "r1", "path": "/moved", "displayName": "a"}})
    )
    assert {k: r.path for k, r in view.repos.items()} == {"r1": "/moved", "r2": "/b"}
    view = apply_store_event(view, _event("repo.removed", {"id": "r1", "worktreeIds": []}))
    assert list(view.repos) == ["r2"]


def test_renamed_event_moves_meta_and_records_the_old_id() -> None:
    """worktree.renamed re-keys the meta and adds the old id to priorWorktreeIds (§4.3)."""
    view = load_store_view(SNAPSHOT)
    view = apply_store_event(
        view, _event("worktree.renamed", {"oldId": "r1::/ws/x", "newId": "r1::/ws/y"})
    )
    assert "r1::/ws/x" not in view.meta
    assert view.meta["r1::/ws/y"].display_name == "X"
    assert view.meta["r1::/ws/y"].prior_worktree_ids == ("r1::/ws/x",)


def test_meta_events_set_and_remove() -> None:
    """worktreeMeta.changed sets one entry; worktreeMeta.removed drops the listed ids."""
    view = StoreView()
    view = apply_store_event(
        view, _event("worktreeMeta.changed", {"worktreeId": "r::/p", "meta": {"comment": "c"}})
    )
    assert view.meta["r::/p"].comment == "c"
    view = apply_store_event(view, _event("worktreeMeta.removed", {"worktreeIds": ["r::/p"]}))
    assert view.meta == {}


def test_unrelated_or_malformed_events_leave_the_view_alone() -> None:
    """Events gitwatch does not need, or with unexpected data, change nothing."""
    view = load_store_view(SNAPSHOT)
    assert apply_store_event(view, _event("session.changed", {"hostId": "local"})) is view
    assert apply_store_event(view, Event(1, "store", "e", 2, "repo.added", None)) is view
