"""Issue 15 item 5: a session's cwd follows its worktree folder on a rename."""

from __future__ import annotations

import pytest

from actors.ptyd.sessions import moved_path

OLD, NEW = "repo1::/ws/proj/draft", "repo1::/ws/proj/renamed"


@pytest.mark.parametrize(
    ("cwd", "expected"),
    [
        ("/ws/proj/draft", "/ws/proj/renamed"),
        ("/ws/proj/draft/", "/ws/proj/renamed"),
        ("/ws/proj/draft/src/app", "/ws/proj/renamed/src/app"),
        ("/ws/proj/drafts", "/ws/proj/drafts"),  # a sibling sharing the prefix stays
        ("/elsewhere", "/elsewhere"),
    ],
)
def test_cwd_under_the_old_folder_moves_to_the_new_one(cwd: str, expected: str) -> None:
    assert moved_path(cwd, OLD, NEW) == expected


def test_workspace_suffix_is_not_part_of_the_folder() -> None:
    old, new = OLD + "::workspace:abc", NEW + "::workspace:abc"
    assert moved_path("/ws/proj/draft/x", old, new) == "/ws/proj/renamed/x"


def test_malformed_ids_leave_the_cwd_alone() -> None:
    assert moved_path("/ws/proj/draft", "nonsense", NEW) == "/ws/proj/draft"
