"""Projections into Worktree and the display-name fallback chain (seed 01 §5.2)."""

from __future__ import annotations

from orca.model.ids import make_folder_workspace_instance_id
from orca.model.merge import (
    branch_short_name,
    folder_workspace_to_worktree,
    merge_folder_workspace,
    merge_worktree,
    resolve_display_name,
)
from orca.model.types_repo import FolderWorkspace, Repo, WorkspaceLinkedItem
from orca.model.worktree import GitWorktreeInfo, WorktreeMeta

REPO = "6f1c2a9e-0000-4000-8000-00000000abcd"


def test_display_name_prefers_the_users_name() -> None:
    """meta.displayName wins over everything git knows (seed 01 §5.2)."""
    assert resolve_display_name("Mine", "refs/heads/feat", "Repo", "/w/dir") == "Mine"


def test_display_name_falls_back_to_branch_then_repo_then_basename() -> None:
    """Empty meta name -> branch short name -> repo default name -> path basename (seed 01 §5.2)."""
    assert resolve_display_name("", "refs/heads/feat/x", "Repo", "/w/dir") == "feat/x"
    assert resolve_display_name(None, "", "Repo", "/w/dir") == "Repo"
    assert resolve_display_name(None, "", None, "/w/dir/") == "dir"


def test_branch_short_name_strips_refs_heads_only() -> None:
    """``refs/heads/`` is dropped; other refs and detached heads are left as they are."""
    assert branch_short_name("refs/heads/main") == "main"
    assert branch_short_name("refs/remotes/o/x") == "refs/remotes/o/x"
    assert branch_short_name("") == ""


def test_merge_worktree_combines_git_facts_and_notes() -> None:
    """merge_worktree = git facts + meta; id = ``<repoId>::<path>`` (seed 01 §5.2)."""
    git = GitWorktreeInfo(path="/w/a", head="abc123", branch="refs/heads/a", is_main_worktree=False, locked=True)
    meta = WorktreeMeta(
        instance_id="i1", display_name="Alpha", linked_pr=12, is_pinned=True, prior_worktree_ids=("r::/w/old",)
    )
    wt = merge_worktree(REPO, git, meta)
    assert wt.id == f"{REPO}::/w/a" and wt.repo_id == REPO
    assert (wt.path, wt.head, wt.branch, wt.locked) == ("/w/a", "abc123", "refs/heads/a", True)
    assert (wt.display_name, wt.instance_id, wt.linked_pr, wt.is_pinned) == ("Alpha", "i1", 12, True)
    assert wt.prior_worktree_ids == ("r::/w/old",)


def test_merge_worktree_without_meta_uses_defaults_and_branch_name() -> None:
    """A worktree Orca has no notes for (made outside Orca) still gets a sensible row (seed 01 §4.2)."""
    wt = merge_worktree(REPO, GitWorktreeInfo(path="/w/b", branch="refs/heads/b"), None, "Repo")
    assert (wt.display_name, wt.is_pinned, wt.comment) == ("b", False, "")


def test_folder_repo_session_projection_uses_the_real_folder() -> None:
    """Route B: the id keeps ``::workspace:``, the path is the shared folder, git fields are blank (seed 01 §5.1-5.2)."""
    repo = Repo(id=REPO, path="/notes", display_name="Notes", kind="folder")
    wid = make_folder_workspace_instance_id(REPO, "/notes", "s1")
    wt = merge_folder_workspace(repo, wid, WorktreeMeta(comment="c"))
    assert (wt.id, wt.path, wt.repo_id, wt.comment) == (wid, "/notes", REPO, "c")
    assert (wt.head, wt.branch, wt.is_bare, wt.display_name) == ("", "", False, "Notes")


def test_folder_workspace_projection_is_a_placeholder_worktree() -> None:
    """Route A: id ``folder:<id>``, synthetic repo id, empty git fields, linked GitHub issue carried (seed 01 §5.1, §9)."""
    fw = FolderWorkspace(
        id="fw1", project_group_id="g1", name="Docs", folder_path="/docs", is_pinned=True,
        linked_task=WorkspaceLinkedItem(provider="github", type="issue", number=42),
        last_activity_at=9, created_at=3,
    )
    wt = folder_workspace_to_worktree(fw)
    assert (wt.id, wt.repo_id, wt.path, wt.display_name) == ("folder:fw1", "folder-workspace:g1", "/docs", "Docs")
    assert (wt.head, wt.branch, wt.is_bare, wt.is_main_worktree) == ("", "", False, False)
    assert (wt.linked_issue, wt.is_pinned, wt.last_activity_at, wt.created_at) == (42, True, 9, 3)
