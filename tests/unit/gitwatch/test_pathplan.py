"""New worktrees of repos whose folders share a name get folders of their own (issue 15)."""

from __future__ import annotations

import pytest

from actors.gitwatch.pathplan import compute_unique_worktree_path, workspace_folder
from orca.model.naming import InvalidWorktreeName
from orca.model.state import GlobalSettings
from orca.model.types_repo import Repo

ROOT = "/ws"
NESTED = GlobalSettings(workspace_dir=ROOT, nest_workspaces=True)
FIRST = Repo(id="aaaaaaaa-1111-4000-8000-000000000001", path="/work/api", display_name="api",
             added_at=1)  # fmt: skip
LATER = Repo(id="bbbbbbbb-2222-4000-8000-000000000002", path="/oss/api", display_name="api",
             added_at=2)  # fmt: skip
OTHER = Repo(id="cccccccc-3333-4000-8000-000000000003", path="/work/web", display_name="web")


def test_a_repo_alone_keeps_the_model_path() -> None:
    assert compute_unique_worktree_path(OTHER, "fix", [FIRST, OTHER], NESTED) == "/ws/web/fix"


def test_first_added_repo_keeps_the_shared_folder_name() -> None:
    assert compute_unique_worktree_path(FIRST, "fix", [FIRST, LATER], NESTED) == "/ws/api/fix"


def test_later_repo_with_same_folder_name_gets_its_short_id_suffix() -> None:
    path = compute_unique_worktree_path(LATER, "fix", [FIRST, LATER], NESTED)
    assert path == "/ws/api-bbbbbbbb/fix"


def test_folder_choice_does_not_depend_on_listing_order() -> None:
    assert workspace_folder(LATER, [LATER, FIRST], NESTED) == "api-bbbbbbbb"
    assert workspace_folder(FIRST, [LATER, FIRST], NESTED) is None


def test_same_added_at_is_broken_by_repo_id() -> None:
    twin = Repo(id="00000000-9999-4000-8000-000000000000", path="/x/api", display_name="api",
                added_at=1)  # fmt: skip
    assert workspace_folder(twin, [FIRST, twin], NESTED) is None
    assert workspace_folder(FIRST, [FIRST, twin], NESTED) == "api-aaaaaaaa"


def test_repos_with_their_own_workspace_root_do_not_collide() -> None:
    own = Repo(id=LATER.id, path="/oss/api", display_name="api", added_at=2,
               worktree_base_path="/elsewhere")  # fmt: skip
    assert compute_unique_worktree_path(own, "fix", [FIRST, own], NESTED) == "/elsewhere/api/fix"


def test_flat_layout_is_left_as_the_user_chose() -> None:
    flat = GlobalSettings(workspace_dir=ROOT, nest_workspaces=False)
    assert compute_unique_worktree_path(LATER, "fix", [FIRST, LATER], flat) == "/ws/fix"


def test_invalid_names_are_still_refused() -> None:
    with pytest.raises(InvalidWorktreeName):
        compute_unique_worktree_path(LATER, "///", [FIRST, LATER], NESTED)
