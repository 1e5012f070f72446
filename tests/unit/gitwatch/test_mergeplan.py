"""mergeplan's pure rules: branch names, where a merge goes by default, refusal texts."""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.gitwatch import errors
from actors.gitwatch.mergeplan import (
    base_as_local_branch,
    branch_ref,
    conflict_refusal,
    dirty_refusal,
    into_candidates,
)

_NAMEISH = st.text(
    alphabet=st.sampled_from(list("ab-_./@{}~^:?*[ \\\x01\x7fé")), min_size=0, max_size=12
)


def _git_accepts(name: str) -> bool:
    done = subprocess.run(
        ["git", "check-ref-format", f"refs/heads/{name}"], capture_output=True, check=False
    )
    return done.returncode == 0


@settings(max_examples=150, deadline=None)
@given(_NAMEISH)
def test_every_branch_name_accepted_is_one_git_accepts(name: str) -> None:
    """branch_ref never lets through a name git would refuse (or read as an option)."""
    try:
        ref = branch_ref(name)
    except errors.CallerError:
        return
    assert ref.startswith("refs/heads/") and not ref[len("refs/heads/") :].startswith("-")
    assert _git_accepts(ref[len("refs/heads/") :]), ref


@pytest.mark.parametrize("name", ["main", "refs/heads/main", "feature/x-1", "v1.2"])
def test_ordinary_branch_names_are_accepted(name: str) -> None:
    assert branch_ref(name) == "refs/heads/" + name.removeprefix("refs/heads/")


def test_into_defaults_to_the_base_then_origin_head_then_main_and_master() -> None:
    assert into_candidates("origin/dev", None, "refs/remotes/origin/trunk") == [
        "refs/heads/origin/dev", "refs/heads/dev", "refs/heads/trunk", "refs/heads/main",
        "refs/heads/master",
    ]  # fmt: skip
    assert into_candidates("HEAD", "release", None) == [
        "refs/heads/release", "refs/heads/main", "refs/heads/master",
    ]  # fmt: skip
    assert base_as_local_branch("refs/remotes/origin/main") == "refs/heads/main"
    assert base_as_local_branch("-x") is None


def test_refusals_list_what_they_refuse_for_bounded() -> None:
    dirty = str(dirty_refusal("/w/a", [f"?? f{i}" for i in range(25)]))
    assert "25 uncommitted changes" in dirty and "?? f19" in dirty and "... and 5 more" in dirty
    assert "?? f20" not in dirty
    conflict = conflict_refusal("refs/heads/a", "refs/heads/main", "rebase", ["x.py"])
    assert conflict.paths == ["x.py"] and "rebasing a into main conflicts in 1 path" in str(
        conflict
    )
