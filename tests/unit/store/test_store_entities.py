"""Pure entity ops of the store: repos, projects, groups, folder workspaces, settings, UI."""

from __future__ import annotations

import pytest

from actors.store import entities
from actors.store.change import Change
from orca.contracts import store
from orca.model.codec import encode_json, from_builtins, to_builtins
from orca.model.state import PersistedState
from orca.model.types_repo import Project
from orca.model.worktree import WorktreeMeta
from orca.wire.errors import BadRequest, Conflict, NotFound


def add(state: PersistedState, path: str, new_id: str = "r1") -> Change:
    return entities.add_repo(state, path, new_id=new_id, now_ms=5)


def test_add_repo_by_path_gets_the_fresh_id_and_basename() -> None:
    """A repo added by path gets the minted UUID and its folder name (seed 01 §4.1)."""
    change = add(PersistedState(), "/src/app/")
    (repo,) = change.state.repos
    assert (repo.id, repo.path, repo.display_name, repo.added_at) == ("r1", "/src/app", "app", 5)
    assert change.events == (store.RepoAdded(repo=repo),)


def test_add_repo_refuses_relative_path_and_duplicate_path() -> None:
    """Relative paths are the caller's error; the same path on the same host conflicts."""
    with pytest.raises(BadRequest):
        add(PersistedState(), "src/app")
    state = add(PersistedState(), "/src/app").state
    with pytest.raises(Conflict):
        add(state, "/src/app/", new_id="r2")


def test_same_path_on_another_host_is_a_different_repo() -> None:
    """The host is part of identity: /src/app over SSH is not the local /src/app."""
    state = add(PersistedState(), "/src/app").state
    change = entities.add_repo(
        state, "/src/app", new_id="r2", now_ms=1, fields={"connectionId": "box"}
    )
    assert len(change.state.repos) == 2


def test_update_repo_keeps_unknown_fields_and_refuses_id_change() -> None:
    """A patch merges into the record; fields from newer builds survive; ids are fixed."""
    state = entities.add_repo(
        PersistedState(), "/a", new_id="r1", now_ms=1, fields={"futureField": [1, 2]}
    ).state
    change = entities.update_repo(state, "r1", {"displayName": "A!"})
    assert to_builtins(change.state.repos[0])["futureField"] == [1, 2]
    assert change.state.repos[0].display_name == "A!"
    with pytest.raises(BadRequest):
        entities.update_repo(state, "r1", {"id": "other"})
    with pytest.raises(NotFound):
        entities.update_repo(state, "nope", {})


def test_unchanged_update_publishes_nothing() -> None:
    """Patching a field to its current value is a no-op: same state, no event."""
    state = add(PersistedState(), "/a").state
    change = entities.update_repo(state, "r1", {"displayName": "a"})
    assert change.state is state and change.events == ()


def test_remove_repo_drops_its_worktree_meta_and_project_links() -> None:
    """Removing a repo drops its worktrees' notes and its id from projects."""
    import msgspec

    state = add(PersistedState(), "/a").state
    state = msgspec.structs.replace(
        state,
        worktree_meta={"r1::/a/w": WorktreeMeta(), "r9::/b": WorktreeMeta()},
        projects=(
            from_builtins(Project, {"id": "p", "displayName": "P", "sourceRepoIds": ["r1", "r9"]}),
        ),
    )
    change = entities.remove_repo(state, "r1")
    assert list(change.state.worktree_meta) == ["r9::/b"]
    assert change.state.projects[0].source_repo_ids == ("r9",)
    assert to_builtins(change.events[0]) == {"id": "r1", "worktreeIds": ["r1::/a/w"]}
    assert change.events[1] == store.WorktreeMetaRemoved(worktree_ids=["r1::/a/w"])
    assert change.result == store.RepoRemoveResult(id="r1", removed_worktree_meta=1)


def test_project_group_in_use_cannot_be_removed() -> None:
    """A group with child groups or folder workspaces refuses removal (conflict)."""
    state = entities.upsert_project_group(
        PersistedState(), {"id": "g", "name": "G"}, new_id="x", now_ms=1
    ).state
    state = entities.upsert_folder_workspace(
        state,
        {"projectGroupId": "g", "name": "docs", "folderPath": "/docs"},
        new_id="f1",
        now_ms=1,
    ).state
    assert state.folder_workspaces[0].id == "f1"
    with pytest.raises(Conflict):
        entities.remove_project_group(state, "g")
    state = entities.remove_folder_workspace(state, "f1").state
    assert entities.remove_project_group(state, "g").state.project_groups == ()


def test_folder_workspace_needs_an_existing_group() -> None:
    """Folder workspaces hang on a project group; an unknown group is a conflict."""
    with pytest.raises(Conflict):
        entities.upsert_folder_workspace(
            PersistedState(),
            {"projectGroupId": "g", "name": "d", "folderPath": "/d"},
            new_id="f",
            now_ms=1,
        )


def test_settings_patch_keeps_settings_this_build_does_not_know() -> None:
    """Unknown settings ride along through a patch and a JSON round trip."""
    state = from_builtins(PersistedState, {"settings": {"theme": "dark", "workspaceDir": "/w"}})
    change = entities.patch_settings(state, {"nestWorkspaces": False})
    assert b'"theme":"dark"' in encode_json(change.state)
    assert change.events == (store.SettingsChanged(settings=change.state.settings),)


def test_moving_a_repo_onto_another_repos_path_conflicts() -> None:
    """Paths stay unique per host through updates too."""
    state = add(PersistedState(), "/a").state
    state = add(state, "/b", new_id="r2").state
    with pytest.raises(Conflict):
        entities.update_repo(state, "r2", {"path": "/a"})
    assert entities.update_repo(state, "r2", {"path": "/c"}).state.repos[1].path == "/c"
