"""Handles for worktrees, terminals and repos: short, unique, and resolvable (issue 15 §2)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orca.views.handles import (
    MIN_HEX,
    AmbiguousReference,
    repo_handles,
    repo_target,
    resolve,
    session_handles,
    session_target,
    worktree_handles,
    worktree_target,
)

WT_A = "r1::/ws/proj/fix-login"
WT_B = "r2::/ws/other/fix-login"
WT_C = "r1::/ws/proj/docs"


def test_worktree_handle_is_the_folder_name_when_unique() -> None:
    """One worktree per folder name: the handle is just the folder name."""
    assert worktree_handles([(WT_A, ""), (WT_C, "")]) == {WT_A: "fix-login", WT_C: "docs"}


def test_colliding_folder_names_take_as_many_path_parts_as_make_them_unique() -> None:
    """Two repos' `fix-login` become `proj/fix-login` and `other/fix-login`; `docs` stays."""
    handles = worktree_handles([(WT_A, ""), (WT_B, ""), (WT_C, "")])
    assert handles == {WT_A: "proj/fix-login", WT_B: "other/fix-login", WT_C: "docs"}


def test_same_folder_twice_falls_back_to_the_full_id() -> None:
    """Two folder-repo workspaces of one directory have nothing shorter than their ids."""
    one, two = "r1::/src/notes::workspace:a", "r1::/src/notes::workspace:b"
    assert worktree_handles([(one, ""), (two, "")]) == {one: one, two: two}


paths = st.lists(
    st.lists(st.sampled_from(["a", "b", "c", "ws"]), min_size=1, max_size=4).map(
        lambda parts: "/" + "/".join(parts)
    ),
    min_size=1,
    max_size=8,
    unique=True,
)


@given(paths)
def test_worktree_handles_are_unique_and_each_resolves_to_its_worktree(folders: list[str]) -> None:
    """Whatever the folders, no two worktrees share a handle and each handle names its own."""
    ids = [f"r::{p}" for p in folders]
    handles = worktree_handles((i, "") for i in ids)
    assert len(set(handles.values())) == len(ids)
    targets = [worktree_target(i, handles[i]) for i in ids]
    for target in targets:
        assert resolve(targets, target.handle, "worktree") is target


@given(paths)
def test_worktree_handles_are_the_shortest_unique_trailing_part(folders: list[str]) -> None:
    """The definition, counted the slow way: each handle is the shortest trailing part
    of its path that no other path ends with at that depth, else the full id."""
    ids = [f"r::{p}" for p in folders]
    parts = {i: [p for p in i.split("::", 1)[1].split("/") if p] for i in ids}

    def unique_at(i: str, k: int) -> bool:
        label = parts[i][-k:]
        return sum(1 for o in ids if len(parts[o]) >= k and parts[o][-k:] == label) == 1

    expected = {
        i: next(
            ("/".join(parts[i][-k:]) for k in range(1, len(parts[i]) + 1) if unique_at(i, k)), i
        )
        for i in ids
    }
    assert worktree_handles((i, "") for i in ids) == expected


def sid(worktree_id: str, hexes: str) -> str:
    return f"{worktree_id}@@{hexes}"


def test_terminal_handle_is_worktree_handle_and_the_shortest_distinct_hex() -> None:
    """`fix-login:3f2a`; two terminals sharing 4 hex digits get one more each."""
    one, two, other = sid(WT_A, "3f2a0001"), sid(WT_A, "3f2a9002"), sid(WT_C, "3f2a0001")
    handles = session_handles([(one, WT_A), (two, WT_A), (other, WT_C)])
    assert handles == {one: "fix-login:3f2a0", two: "fix-login:3f2a9", other: "docs:3f2a"}
    assert all(len(h.rpartition(":")[2]) >= MIN_HEX for h in handles.values())


def test_terminal_handles_agree_with_the_worktree_listing() -> None:
    """A worktree without terminals still forces the qualified form on both listings."""
    one = sid(WT_A, "0badcafe")
    assert session_handles([(one, WT_A)]) == {one: "fix-login:0bad"}
    assert session_handles([(one, WT_A)], [(WT_B, "/ws/other/fix-login")]) == {
        one: "proj/fix-login:0bad"
    }


def test_terminal_handle_follows_a_worktree_rename() -> None:
    """ptyd keeps the hex when a worktree moves: the handle changes only its worktree part."""
    before = session_handles([(sid(WT_A, "0badcafe"), WT_A)])
    moved = "r1::/ws/proj/login-fix"
    after = session_handles([(sid(moved, "0badcafe"), moved)])
    assert list(before.values()) == ["fix-login:0bad"] and list(after.values()) == [
        "login-fix:0bad"
    ]


def terminals(*pairs: tuple[str, str]) -> list:  # type: ignore[type-arg]
    handles = session_handles(pairs)
    return [session_target(s, handles[s], worktree_id=w) for s, w in pairs]


@pytest.mark.parametrize(
    "ref",
    [
        "fix-login:0bad",  # the handle
        "fix-login:0",  # a shorter unique hex prefix
        "fix-login:0badcafe",  # the whole hex
        "proj/fix-login:0bad",  # a longer worktree part
        "0badcafe",  # the bare hex
        "0bad",
        "fix-login",  # the worktree alone: it has one terminal
        "fix-lo",  # a unique prefix of the handle
        sid(WT_A, "0badcafe"),  # the id
    ],
)
def test_a_terminal_is_named_by_handle_hex_worktree_or_prefix(ref: str) -> None:
    """Every documented way of naming a terminal resolves to it."""
    targets = terminals(
        (sid(WT_A, "0badcafe"), WT_A), (sid(WT_C, "11112222"), WT_C), (sid(WT_C, "99998888"), WT_C)
    )
    assert resolve(targets, ref, "terminal").id == sid(WT_A, "0badcafe")


def test_ambiguous_terminal_reference_names_every_candidate() -> None:
    """`docs` has two terminals: the error lists both handles (the caller picks)."""
    targets = terminals((sid(WT_C, "11112222"), WT_C), (sid(WT_C, "99998888"), WT_C))
    with pytest.raises(AmbiguousReference) as err:
        resolve(targets, "docs", "terminal")
    assert "2 terminals" in err.value.message
    assert "docs:1111" in err.value.message and "docs:9999" in err.value.message


def test_unknown_reference_is_refused_not_guessed() -> None:
    targets = terminals((sid(WT_C, "11112222"), WT_C))
    with pytest.raises(AmbiguousReference, match="no terminal matches 'nope'"):
        resolve(targets, "nope", "terminal")
    with pytest.raises(AmbiguousReference):
        resolve(targets, "", "terminal")


def test_repo_handles_are_names_and_colliding_names_get_an_id_prefix() -> None:
    """Two repos named `app` become `app#1234` and `app#5678`; a unique name stays bare."""
    handles = repo_handles([("1234abcd", "app"), ("5678abcd", "app"), ("9999", "web")])
    assert handles == {"1234abcd": "app#1234", "5678abcd": "app#5678", "9999": "web"}


def test_repo_is_named_by_handle_name_folder_path_or_id_prefix() -> None:
    targets = [
        repo_target("1234abcd", "app", "/src/my-app", "app"),
        repo_target("5678abcd", "web", "/src/web", "web"),
    ]
    for ref in ("app", "my-app", "/src/my-app", "1234abcd", "1234"):
        assert resolve(targets, ref, "repo").id == "1234abcd"
