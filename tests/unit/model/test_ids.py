"""Worktree ids, folder-workspace ids and WorkspaceKeys (seed 01 §4.2, §4.5, §5.1)."""

from __future__ import annotations

import pytest
from hypothesis import given

from orca.model.ids import (
    FOLDER_WORKSPACE_INSTANCE_SEPARATOR,
    WORKTREE_ID_SEPARATOR,
    BadWorkspaceKey,
    BadWorktreeId,
    WorkspaceScope,
    WorktreeIdParts,
    folder_workspace_key,
    is_folder_workspace_instance_id,
    make_folder_workspace_instance_id,
    make_worktree_id,
    parse_workspace_key,
    parse_worktree_id,
    repo_id_of_worktree_id,
    split_worktree_id,
    split_worktree_id_for_filesystem,
    worktree_id_of_session_key,
    worktree_workspace_key,
)
from orca.model.session_keys import SessionKeyRef, parse_session_key, rekey_session_key

from .strategies import paths, repo_ids, tokens

REPO = "6f1c2a9e-0000-4000-8000-00000000abcd"


@given(repo_ids, paths)
def test_worktree_id_round_trips_through_make_and_split(repo_id: str, path: str) -> None:
    """Every worktree id built from a repo id and a path splits back into them (seed 01 §4.2)."""
    wid = make_worktree_id(repo_id, path)
    assert split_worktree_id(wid) == WorktreeIdParts(repo_id, path)
    assert parse_worktree_id(wid) == WorktreeIdParts(repo_id, path)


def test_worktree_id_is_repo_id_separator_path() -> None:
    """The id is literally ``${repoId}::${path}`` with the one shared separator (seed 01 §4.2)."""
    assert WORKTREE_ID_SEPARATOR == "::"
    assert make_worktree_id(REPO, "/w/a") == f"{REPO}::/w/a"


def test_path_containing_separator_stays_in_the_path() -> None:
    """A path may contain ``::``; only the first separator splits (repo ids never contain ':')."""
    assert split_worktree_id(f"{REPO}::/w/a::b") == WorktreeIdParts(REPO, "/w/a::b")


@pytest.mark.parametrize("bad", ["", "no-separator", "::/path", f"{REPO}::", "a:b::/p", "a|b::/p"])
def test_split_returns_none_and_parse_raises_for_malformed_ids(bad: str) -> None:
    """The non-throwing splitter answers None; the throwing parser names the input (seed 01 §4.2)."""
    assert split_worktree_id(bad) is None
    with pytest.raises(BadWorktreeId, match="not a worktree id"):
        parse_worktree_id(bad)


@pytest.mark.parametrize(("repo_id", "path"), [("", "/p"), ("a:b", "/p"), ("a|b", "/p"), (REPO, "")])
def test_make_worktree_id_refuses_parts_that_would_not_parse_back(repo_id: str, path: str) -> None:
    """Building an id that could not be split back unambiguously is refused."""
    with pytest.raises(BadWorktreeId):
        make_worktree_id(repo_id, path)


def test_repo_id_of_worktree_id() -> None:
    """The repo id is recoverable from the id alone (no registry lookup, seed 01 §4.2)."""
    assert repo_id_of_worktree_id(f"{REPO}::/w/a") == REPO
    assert repo_id_of_worktree_id("junk") is None


@given(repo_ids, paths, tokens)
def test_folder_instance_id_round_trips_through_both_splitters(
    repo_id: str, path: str, instance: str
) -> None:
    """The identity splitter keeps ``::workspace:<id>``; the filesystem splitter strips it (seed 01 §5.1)."""
    wid = make_folder_workspace_instance_id(repo_id, path, instance)
    identity = split_worktree_id(wid)
    assert identity == WorktreeIdParts(repo_id, f"{path}{FOLDER_WORKSPACE_INSTANCE_SEPARATOR}{instance}")
    assert split_worktree_id_for_filesystem(wid) == WorktreeIdParts(repo_id, path)
    assert is_folder_workspace_instance_id(wid)


def test_filesystem_splitter_leaves_plain_worktree_ids_alone() -> None:
    """A plain git worktree id has the same identity and filesystem path (seed 01 §5.1)."""
    wid = make_worktree_id(REPO, "/w/feature")
    assert split_worktree_id_for_filesystem(wid) == split_worktree_id(wid)
    assert not is_folder_workspace_instance_id(wid)


def test_folder_instance_cwd_is_the_real_folder_not_the_suffixed_path() -> None:
    """cwd for a folder-repo session is the shared folder, never ``.../foo::workspace:x`` (seed 01 §5.1 pitfall)."""
    wid = make_folder_workspace_instance_id(REPO, "/home/u/notes", "1b2c")
    assert split_worktree_id_for_filesystem(wid) == WorktreeIdParts(REPO, "/home/u/notes")


@given(repo_ids, paths)
def test_worktree_workspace_key_round_trips(repo_id: str, path: str) -> None:
    """``worktree:<id>`` parses back to the worktree scope (seed 01 §4.5)."""
    wid = make_worktree_id(repo_id, path)
    assert parse_workspace_key(worktree_workspace_key(wid)) == WorkspaceScope("worktree", wid)
    assert worktree_id_of_session_key(worktree_workspace_key(wid)) == wid
    assert worktree_id_of_session_key(wid) == wid


@given(tokens)
def test_folder_workspace_key_round_trips(folder_id: str) -> None:
    """``folder:<id>`` parses back to the folder scope (seed 01 §4.5)."""
    key = folder_workspace_key(folder_id)
    assert parse_workspace_key(key) == WorkspaceScope("folder", folder_id)
    assert worktree_id_of_session_key(key) is None


@pytest.mark.parametrize("bad", ["", "a:b", "a/b"])
def test_folder_workspace_key_refuses_ids_that_would_not_parse_back(bad: str) -> None:
    """Folder ids with ':' or '/' are refused so keys stay unambiguous."""
    with pytest.raises(BadWorkspaceKey):
        folder_workspace_key(bad)


@pytest.mark.parametrize("key", [f"{REPO}::/w/a", "worktree:junk", "folder:", "folder::/x", "other:x"])
def test_parse_workspace_key_rejects_non_keys(key: str) -> None:
    """Bare legacy ids and malformed keys are not WorkspaceKeys (seed 01 §4.5)."""
    assert parse_workspace_key(key) is None


@given(repo_ids, paths)
def test_session_keys_in_all_three_spellings_name_the_same_worktree(repo_id: str, path: str) -> None:
    """Bare, ``worktree:`` and host-qualified session keys resolve to one worktree id (seed 01 §4.5)."""
    wid = make_worktree_id(repo_id, path)
    assert parse_session_key(wid) == SessionKeyRef("worktree", wid)
    assert parse_session_key(f"worktree:{wid}") == SessionKeyRef("worktree", wid)
    assert parse_session_key(f"ssh:box|{wid}") == SessionKeyRef("worktree", wid, "ssh:box|")


def test_rekey_session_key_keeps_the_spelling() -> None:
    """Re-keying keeps whichever form the key had, and leaves other keys alone (seed 01 §4.3)."""
    old, new = f"{REPO}::/w/a", f"{REPO}::/w/b"
    assert rekey_session_key(old, old, new) == new
    assert rekey_session_key(f"worktree:{old}", old, new) == f"worktree:{new}"
    assert rekey_session_key(f"local|{old}", old, new) == f"local|{new}"
    assert rekey_session_key(f"{REPO}::/w/c", old, new) is None
    assert rekey_session_key("folder:x", old, new) is None
