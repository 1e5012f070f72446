"""Route-A folder workspaces (``folder:<uuid>``) as worktree.list rows (seed 01 §5.1)."""

from __future__ import annotations

from actors.gitwatch.wirerows import folder_workspace_rows
from orca.contracts import gitwatch as gw
from orca.model.codec import from_builtins, to_builtins
from orca.model.types_repo import FolderWorkspace


def _folder(folder_id: str, group: str, order: int, name: str = "") -> FolderWorkspace:
    return FolderWorkspace(
        id=folder_id,
        project_group_id=group,
        folder_path=f"/data/{folder_id}",
        name=name,
        sort_order=order,
    )


def test_folder_workspaces_are_listed_as_worktree_rows() -> None:
    """Each folder workspace is a visible row with its folder: id, group repo id and path."""
    rows = folder_workspace_rows([_folder("b", "g", 2, "Notes"), _folder("a", "g", 1)])
    assert [(r.id, r.repo_id, r.path) for r in rows] == [
        ("folder:a", "folder-workspace:g", "/data/a"),
        ("folder:b", "folder-workspace:g", "/data/b"),
    ]
    assert [r.display_name for r in rows] == ["a", "Notes"]
    assert all(r.visible and r.ownership == "external" and not r.is_main_worktree for r in rows)
    assert all(r.head == "" and r.branch == "" and r.git_status is None for r in rows)


def test_folder_rows_survive_the_wire() -> None:
    """A folder row encodes and decodes as the contract's WorktreeRow."""
    (row,) = folder_workspace_rows([_folder("a", "g", 0, "caf\udce9")])
    wire = to_builtins(row)
    assert wire["id"] == "folder:a"
    assert from_builtins(gw.WorktreeRow, wire) == row
    assert "\udce9" not in row.display_name  # display text is cleaned like git's fields
