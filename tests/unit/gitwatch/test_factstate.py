"""Fact state: which readings produce which events (pure)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from actors.gitwatch.factstate import (
    RepoFacts,
    RepoWentUnavailable,
    WorktreeAdded,
    WorktreeChanged,
    WorktreeRemoved,
    apply_dirty,
    apply_listing,
    apply_move,
    apply_row,
    apply_unavailable,
)
from actors.gitwatch.records import DirtyCounts, WorktreeFacts

MAIN = WorktreeFacts(
    path="/r", head="a" * 40, branch="refs/heads/main", is_main=True, admin_dir="/r/.git"
)
LINKED = WorktreeFacts(
    path="/w", head="a" * 40, branch="refs/heads/w", is_main=False, admin_dir="/r/.git/worktrees/w"
)


def _repo() -> RepoFacts:
    return RepoFacts(repo_id="r", path="/r")


def test_first_listing_adds_every_row_and_asks_for_status() -> None:
    """A new repo's rows are all added and all need a first status."""
    repo = _repo()
    update = apply_listing(repo, [MAIN, LINKED])
    assert update.events == [WorktreeAdded("r", MAIN), WorktreeAdded("r", LINKED)]
    assert update.status_needed == ["/r", "/w"]


def test_identical_rescan_is_silent() -> None:
    """Rescanning unchanged facts publishes nothing (no event storms)."""
    repo = _repo()
    apply_listing(repo, [MAIN, LINKED])
    update = apply_listing(repo, [MAIN, LINKED])
    assert update.events == [] and update.status_needed == []


def test_moved_head_changes_row_and_needs_status() -> None:
    """A new HEAD is published and the worktree's dirty counts are recomputed."""
    repo = _repo()
    apply_listing(repo, [MAIN, LINKED])
    apply_dirty(repo, "/w", DirtyCounts(unstaged=2))
    moved = replace(LINKED, head="b" * 40)
    update = apply_listing(repo, [MAIN, moved])
    assert update.events == [WorktreeChanged("r", moved, DirtyCounts(unstaged=2))]
    assert update.status_needed == ["/w"]


def test_lock_change_needs_no_status() -> None:
    """Locking changes the row but not the dirty counts."""
    repo = _repo()
    apply_listing(repo, [MAIN, LINKED])
    locked = replace(LINKED, is_locked=True, lock_reason="usb")
    update = apply_listing(repo, [MAIN, locked])
    assert [type(e) for e in update.events] == [WorktreeChanged]
    assert update.status_needed == []


def test_missing_row_is_removed() -> None:
    """A worktree absent from the listing is removed with its counts."""
    repo = _repo()
    apply_listing(repo, [MAIN, LINKED])
    apply_dirty(repo, "/w", DirtyCounts(untracked=1))
    update = apply_listing(repo, [MAIN])
    assert update.events == [WorktreeRemoved("r", "/w")] and update.removed == ["/w"]
    assert "/w" not in repo.dirty


def test_dirty_counts_publish_only_on_change() -> None:
    """The same counts twice publish once; counts for an unknown path publish nothing."""
    repo = _repo()
    apply_listing(repo, [MAIN])
    assert apply_dirty(repo, "/r", DirtyCounts(staged=1)) == [
        WorktreeChanged("r", MAIN, DirtyCounts(staged=1))
    ]
    assert apply_dirty(repo, "/r", DirtyCounts(staged=1)) == []
    assert apply_dirty(repo, "/nope", DirtyCounts(staged=1)) == []


def test_unavailable_is_reported_once_and_recovery_readds() -> None:
    """A vanished repo drops its rows and reports once; when it returns rows are added again."""
    repo = _repo()
    apply_listing(repo, [MAIN])
    assert apply_unavailable(repo, "gone") == [
        WorktreeRemoved("r", "/r"),
        RepoWentUnavailable("r", "/r", "gone"),
    ]
    assert apply_unavailable(repo, "gone") == []
    update = apply_listing(repo, [MAIN])
    assert update.events == [WorktreeAdded("r", MAIN)] and repo.unavailable is None


def test_move_rekeys_so_next_rescan_is_silent() -> None:
    """After apply_move, the listing at the new path produces no add/remove (seed 01 §4.3)."""
    repo = _repo()
    apply_listing(repo, [MAIN, LINKED])
    apply_dirty(repo, "/w", DirtyCounts(unstaged=1))
    moved = apply_move(repo, "/w", "/w2")
    assert moved == replace(LINKED, path="/w2") and repo.dirty["/w2"] == DirtyCounts(unstaged=1)
    assert apply_listing(repo, [MAIN, replace(LINKED, path="/w2")]).events == []
    assert apply_move(repo, "/missing", "/x") is None


_rows = st.builds(
    lambda path, **kw: WorktreeFacts(path=path, admin_dir=f"/r/.git/worktrees{path}", **kw),
    path=st.sampled_from(["/w1", "/w2", "/w3", "/w\udcff"]),  # the last not UTF-8
    head=st.sampled_from(["a" * 40, "b" * 40, None]),
    branch=st.sampled_from(["refs/heads/x", "refs/heads/y", None]),
    is_main=st.just(False),
    is_locked=st.booleans(),
)


@given(listing=st.lists(_rows, max_size=4), row=_rows, dirty=st.booleans())
def test_one_row_read_on_its_own_is_what_a_whole_listing_would_make(
    listing: list[WorktreeFacts], row: WorktreeFacts, dirty: bool
) -> None:
    """A create reads only the worktree it made (``apply_row``): the rows, the counts
    kept, the withheld paths and every event and status asked for are those of a whole
    listing in which only that worktree differs."""
    by_path = {r.path: r for r in [MAIN, *listing]}
    one, whole = _repo(), _repo()
    for repo in (one, whole):
        apply_listing(repo, list(by_path.values()))
        if dirty and row.path in repo.rows:
            apply_dirty(repo, row.path, DirtyCounts(untracked=1))
    got = apply_row(one, row)
    want = apply_listing(whole, list({**by_path, row.path: row}.values()))
    assert (one.rows, one.dirty, one.unrepresentable) == (
        whole.rows,
        whole.dirty,
        whole.unrepresentable,
    )
    assert got.events == want.events and got.status_needed == want.status_needed
    assert got.added == want.added and got.removed == want.removed == []
    assert got.newly_unrepresentable == want.newly_unrepresentable


def test_a_half_made_reading_of_the_same_admin_dir_goes() -> None:
    """A watcher scan that ran while git was still filling a new worktree's admin dir in
    listed it at the admin dir's own path (no gitdir yet: prunable); the create's own
    reading of that worktree replaces it, and the stray row is published as removed."""
    repo = _repo()
    half = WorktreeFacts(
        path=LINKED.admin_dir, head=None, branch=None, is_main=False,
        admin_dir=LINKED.admin_dir, is_prunable=True, prune_reason="gitdir file missing",
    )  # fmt: skip
    apply_listing(repo, [MAIN, half])
    update = apply_row(repo, LINKED)
    assert update.events == [WorktreeRemoved("r", half.path), WorktreeAdded("r", LINKED)]
    assert update.removed == [half.path] and update.added == [LINKED]
    assert sorted(repo.rows) == sorted([MAIN.path, LINKED.path])
