"""Merging a worktree's branch (worktree.mergePreview / worktree.merge) on real repositories.

``store`` is a fixed view (the seam in ``storeview``); git, the file system, the tracker
and the watcher are real. The actor's wire face is tested in tests/actors/gitwatch.
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from actors.gitwatch import errors
from actors.gitwatch import lifecycle as lifecycle_module
from actors.gitwatch.mergecalc import compute_merge, open_for_merge
from actors.gitwatch.merging import merge_worktree, preview_merge
from actors.gitwatch.storeview import StoreView
from actors.gitwatch.tracker import RepoTracker
from actors.gitwatch.watcher import GitWatcher
from orca.actor.inotify import Inotify
from orca.contracts import gitwatch as gw
from orca.model.types_repo import Repo
from orca.model.worktree import WorktreeMeta

TIMEOUT_S = 20


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@dataclass
class FixedStore:
    """A StorePort that only reads: merges never write store."""

    current: StoreView

    def view(self) -> StoreView:
        return self.current

    async def whole_view(self) -> StoreView:
        return self.current

    async def lookup_repo(self, repo_id: str) -> Repo | None:
        return self.current.repos.get(repo_id)

    async def replace_meta(self, worktree_id: str, meta: WorktreeMeta) -> None:
        raise AssertionError("a merge wrote meta")

    async def forget_meta(self, worktree_id: str) -> None:
        raise AssertionError("a merge wrote meta")

    async def patch_meta(self, worktree_id: str, patch: dict[str, Any]) -> None:
        raise AssertionError("a merge wrote meta")

    async def migrate_identity(self, old_id: str, new_id: str) -> None:
        raise AssertionError("a merge wrote meta")


@dataclass
class World:
    tracker: RepoTracker
    store: FixedStore
    repo: Path
    wt: Path  # a linked worktree on branch "feat", one commit ahead of main

    @property
    def wt_id(self) -> str:
        return f"r1::{self.wt}"

    def commit(self, where: Path, name: str, text: str, message: str) -> str:
        (where / name).write_text(text)
        _git(where, "add", name)
        _git(where, "commit", "-q", "-m", message)
        return _git(where, "rev-parse", "HEAD")

    def tip(self, branch: str) -> str:
        return _git(self.repo, "rev-parse", f"refs/heads/{branch}")

    def status(self, where: Path) -> str:
        return _git(where, "status", "--porcelain")


@pytest.fixture
async def world(repo: Path, tmp_path: Path) -> AsyncIterator[World]:
    wt = tmp_path / "feat"
    _git(repo, "worktree", "add", "-q", "-b", "feat", str(wt))
    (wt / "feature.txt").write_text("one\ntwo\n")
    _git(wt, "add", "feature.txt")
    _git(wt, "commit", "-q", "-m", "add feature")
    view = StoreView(repos={"r1": Repo(id="r1", path=str(repo), display_name="repo")})
    with Inotify() as inotify:
        watcher = GitWatcher(inotify)
        tracker = RepoTracker(watcher, lambda _events: None)
        async with trio.open_nursery() as nursery:
            await nursery.start(watcher.run, tracker.apply_batch)
            await tracker.track_repo("r1", str(repo))
            yield World(tracker, FixedStore(view), repo, wt)
            nursery.cancel_scope.cancel()


async def _preview(world: World, **kw: Any) -> gw.MergePreview:
    args = gw.MergePreviewArgs(worktree=kw.pop("worktree", world.wt_id), **kw)
    return await preview_merge(world.tracker, world.store, args)


async def _merge(world: World, **kw: Any) -> gw.MergeResult:
    args = gw.MergeArgs(worktree=kw.pop("worktree", world.wt_id), **kw)
    return await merge_worktree(world.tracker, world.store, args)


async def test_preview_counts_and_changes_nothing(world: World) -> None:
    """A clean preview names main, counts ahead/behind and the branch's diffstat, and no
    ref or file moves."""
    world.commit(world.repo, "other.txt", "x\n", "main moves on")
    before = (world.tip("main"), world.tip("feat"))
    with trio.fail_after(TIMEOUT_S):
        preview = await _preview(world)
    assert preview == gw.MergePreview(
        into="main", branch="feat", mode="merge", ahead=1, behind=1,
        diffstat=gw.Diffstat(files=1, insertions=2, deletions=0),
        conflicts=[], dirty=False, uncommitted=[], checkout=str(world.repo),
        checkout_dirty=False, uncommitted_diffstat=gw.Diffstat(files=0, insertions=0, deletions=0),
    )  # fmt: skip
    assert (world.tip("main"), world.tip("feat")) == before
    assert world.status(world.repo) == "" and world.status(world.wt) == ""


async def test_preview_counts_uncommitted_work_apart(world: World) -> None:
    """Issue 40 item 6: a tracked file changed and a new file not added are counted in
    uncommittedDiffstat (the new file's lines as insertions), not in the commits'."""
    world.commit(world.wt, "feature.txt", "one\ntwo\nthree\n", "more feature")
    (world.wt / "feature.txt").write_text("one\nTWO\nthree\nfour\n")
    (world.wt / "notes.md").write_text("a\nb\nc\n")
    with trio.fail_after(TIMEOUT_S):
        preview = await _preview(world)
    assert preview.dirty
    assert preview.uncommitted_diffstat == gw.Diffstat(files=2, insertions=5, deletions=1)


async def test_previews_read_no_listing_yet_count_what_is_on_disk_now(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`orca run show` previews every variant: a preview takes the worktree's row from
    the facts the watcher keeps (no scan of every worktree each), yet counts the
    commits and changes made a moment ago; a worktree the watcher has not seen yet is
    found by a scan."""
    scans: list[str] = []  # the listings a preview asked for (the watcher's are its own)
    real = lifecycle_module.fresh_facts  # where a preview's fallback scan is asked

    async def counted(tracker: RepoTracker, repo: Repo) -> Any:
        scans.append(repo.path)
        return await real(tracker, repo)

    monkeypatch.setattr(lifecycle_module, "fresh_facts", counted)
    world.commit(world.wt, "more.txt", "x\n", "a second commit, just now")
    (world.wt / "loose.txt").write_text("y\n")
    with trio.fail_after(TIMEOUT_S):
        previews = [await _preview(world) for _ in range(3)]
        assert not scans
        assert all(p.ahead == 2 and p.dirty and p.uncommitted == ["?? loose.txt"] for p in previews)
        late = world.repo.parent / "late"
        _git(world.repo, "worktree", "add", "-q", "-b", "late", str(late))
        preview = await _preview(world, worktree=f"r1::{late}")
    assert preview.branch == "late" and preview.ahead == 0 and len(scans) == 1


async def test_merge_makes_a_merge_commit_and_fast_forwards_the_clean_checkout(
    world: World,
) -> None:
    """mode merge: a two-parent commit on main; the main checkout has the file and is clean."""
    old_main = world.commit(world.repo, "other.txt", "x\n", "main moves on")
    feat = world.tip("feat")
    with trio.fail_after(TIMEOUT_S):
        result = await _merge(world)
    assert result.into == "main" and result.mode == "merge" and result.changed
    assert result.previous == old_main and result.checkout_updated
    assert world.tip("main") == result.commit
    assert _git(world.repo, "rev-list", "--parents", "-n1", "main").split()[1:] == [old_main, feat]
    assert (world.repo / "feature.txt").read_text() == "one\ntwo\n"
    assert world.status(world.repo) == ""
    assert _git(world.repo, "log", "-1", "--format=%s") == "Merge branch 'feat' into main"


async def test_merge_twice_changes_nothing_the_second_time(world: World) -> None:
    """A repeated merge (after a crash, say) finds the branch in main: changed false."""
    with trio.fail_after(TIMEOUT_S):
        first = await _merge(world)
        second = await _merge(world)
    assert first.changed and not second.changed
    assert second.commit == first.commit == world.tip("main")


async def test_squash_makes_one_commit_with_the_whole_change(world: World) -> None:
    """mode squash: one single-parent commit whose tree has the branch's change."""
    world.commit(world.wt, "feature.txt", "one\ntwo\nthree\n", "more feature")
    old_main = world.tip("main")
    with trio.fail_after(TIMEOUT_S):
        result = await _merge(world, mode="squash", message="feat, squashed\n")
        again = await _merge(world, mode="squash")
    assert _git(world.repo, "rev-list", "--parents", "-n1", "main").split()[1:] == [old_main]
    assert _git(world.repo, "log", "-1", "--format=%B", "main") == "feat, squashed"
    assert (world.repo / "feature.txt").read_text() == "one\ntwo\nthree\n"
    assert world.status(world.repo) == ""
    assert not again.changed and again.commit == result.commit


async def test_rebase_replays_the_branch_and_fast_forwards_main(world: World) -> None:
    """mode rebase: main ends at the rebased branch tip, history linear, both clean."""
    old_main = world.commit(world.repo, "other.txt", "x\n", "main moves on")
    with trio.fail_after(TIMEOUT_S):
        result = await _merge(world, mode="rebase")
    assert result.changed and world.tip("main") == world.tip("feat") == result.commit
    assert _git(world.repo, "rev-list", "--parents", "-n1", "main").split()[1:] == [old_main]
    assert _git(world.repo, "log", "-1", "--format=%s", "main") == "add feature"
    assert (world.wt / "other.txt").exists() and (world.repo / "feature.txt").exists()
    assert world.status(world.repo) == "" and world.status(world.wt) == ""


async def test_conflicting_preview_lists_the_path_and_merge_refuses(world: World) -> None:
    """Both sides changed README: the preview names it; every mode's merge is refused
    with the path, and no ref or file changed."""
    world.commit(world.repo, "README", "main's\n", "main edits README")
    world.commit(world.wt, "README", "feat's\n", "feat edits README")
    before = (world.tip("main"), world.tip("feat"))
    with trio.fail_after(TIMEOUT_S):
        for mode in ("merge", "squash", "rebase"):
            preview = await _preview(world, mode=mode)
            assert preview.conflicts == ["README"], mode
            with pytest.raises(errors.StateConflict, match="README") as refused:
                await _merge(world, mode=mode)
            assert "nothing was changed" in str(refused.value)
    assert (world.tip("main"), world.tip("feat")) == before
    assert world.status(world.repo) == "" and world.status(world.wt) == ""
    assert (world.repo / "README").read_text() == "main's\n"


async def test_dirty_worktree_is_refused_with_its_changes_listed(world: World) -> None:
    """Uncommitted work is never merged behind the caller's back: refused, listed."""
    (world.wt / "scratch.txt").write_text("wip\n")
    (world.wt / "feature.txt").write_text("changed\n")
    before = world.tip("main")
    with trio.fail_after(TIMEOUT_S):
        preview = await _preview(world)
        with pytest.raises(errors.WorktreeDirty) as refused:
            await _merge(world)
    assert preview.dirty and sorted(preview.uncommitted) == [" M feature.txt", "?? scratch.txt"]
    assert "scratch.txt" in str(refused.value) and "feature.txt" in str(refused.value)
    assert world.tip("main") == before


async def test_dirty_main_checkout_is_refused_and_untouched(world: World) -> None:
    """main is checked out with an uncommitted edit: refused, branch and edit kept."""
    (world.repo / "README").write_text("edited, not committed\n")
    before = world.tip("main")
    with trio.fail_after(TIMEOUT_S):
        preview = await _preview(world)
        with pytest.raises(errors.WorktreeDirty, match="README"):
            await _merge(world)
    assert preview.checkout == str(world.repo) and preview.checkout_dirty
    assert world.tip("main") == before
    assert (world.repo / "README").read_text() == "edited, not committed\n"


async def test_merge_into_a_branch_nobody_has_checked_out_moves_only_the_ref(
    world: World,
) -> None:
    """into a branch no worktree has: update-ref only; the main checkout stays as it was."""
    _git(world.repo, "branch", "release")
    main = world.tip("main")
    with trio.fail_after(TIMEOUT_S):
        result = await _merge(world, into="release", mode="squash")
    assert result.into == "release" and not result.checkout_updated
    assert world.tip("release") == result.commit and world.tip("main") == main
    assert not (world.repo / "feature.txt").exists()


async def test_bad_requests_are_named(world: World) -> None:
    """Unknown worktree, unknown or own branch, the main worktree: clear errors."""
    with trio.fail_after(TIMEOUT_S):
        with pytest.raises(errors.WorktreeNotFound):
            await _preview(world, worktree=f"r1::{world.repo}-nope")
        with pytest.raises(errors.WorktreeNotFound):
            await _preview(world, worktree="/no/such/worktree")
        with pytest.raises(errors.CallerError, match="not a worktree id"):
            await _preview(world, worktree="nonsense")
        with pytest.raises(errors.MissingTarget, match="no branch 'nope'"):
            await _preview(world, into="nope")
        with pytest.raises(errors.CallerError, match="into itself"):
            await _preview(world, into="feat")
        with pytest.raises(errors.CallerError, match="main worktree"):
            await _merge(world, worktree=f"r1::{world.repo}")
        with pytest.raises(errors.CallerError, match="not a branch name"):
            await _merge(world, into="--force")


async def test_worktree_named_by_path(world: World) -> None:
    """A worktree may be named by its path as well as by its id."""
    with trio.fail_after(TIMEOUT_S):
        preview = await _preview(world, worktree=str(world.wt))
    assert preview.branch == "feat" and preview.ahead == 1


def test_bad_mode_is_refused_by_the_args_decoder() -> None:
    """mode outside merge|squash|rebase never reaches the merge (bad_request on the wire)."""
    with pytest.raises(msgspec.ValidationError, match="mode"):
        msgspec.convert({"worktree": "r1::/x", "mode": "octopus"}, gw.MergeArgs)


async def test_computing_a_merge_moves_no_ref(world: World) -> None:
    """The commits exist before any ref moves: compute_merge with write makes objects only."""
    repo = open_for_merge(str(world.repo))
    before = (world.tip("main"), world.tip("feat"))
    found = compute_merge(repo, "refs/heads/feat", "refs/heads/main", "merge", write=True)
    assert found.new_into is not None and found.new_into not in before
    assert _git(world.repo, "cat-file", "-t", found.new_into) == "commit"
    assert (world.tip("main"), world.tip("feat")) == before


async def test_commit_first_merges_uncommitted_work(world: World) -> None:
    """commitFirst: the worktree's edits and new files are committed on its branch, then
    merged; the worktree is clean afterwards."""
    (world.wt / "feature.txt").write_text("one\ntwo\nedited\n")
    (world.wt / "new.txt").write_text("new\n")
    with trio.fail_after(TIMEOUT_S):
        result = await _merge(world, mode="squash", commit_first=True, commit_message="wip\n")
    assert result.committed == world.tip("feat") and result.changed
    assert _git(world.repo, "log", "-1", "--format=%s", "feat") == "wip"
    assert (world.repo / "new.txt").read_text() == "new\n"
    assert (world.repo / "feature.txt").read_text() == "one\ntwo\nedited\n"
    assert world.status(world.wt) == "" and world.status(world.repo) == ""


async def test_rebase_drops_merge_commits_and_commits_already_in_main(world: World) -> None:
    """A rebase replays the branch's own commits: a merge of main into it is dropped, a
    commit whose change main already has is skipped; the result is linear."""
    world.commit(world.repo, "other.txt", "x\n", "main moves on")
    _git(world.wt, "merge", "-q", "--no-edit", "main")  # a merge commit on the branch
    world.commit(world.wt, "late.txt", "late\n", "late work")
    world.commit(world.repo, "late.txt", "late\n", "main has the same change")
    with trio.fail_after(TIMEOUT_S):
        result = await _merge(world, mode="rebase")
    subjects = _git(world.repo, "log", "--format=%s", "main").splitlines()
    assert subjects == ["add feature", "main has the same change", "main moves on", "initial"]
    assert _git(world.repo, "rev-list", "--merges", "main") == ""
    assert world.tip("feat") == result.commit == world.tip("main")
    assert world.status(world.wt) == ""


async def test_into_named_as_a_remote_tracking_branch_means_its_local_branch(
    world: World, tmp_path: Path
) -> None:
    """A run based on ``origin/main`` merges into the local ``main``."""
    _git(world.repo, "update-ref", "refs/remotes/origin/main", world.tip("main"))
    with trio.fail_after(TIMEOUT_S):
        preview = await _preview(world, into="origin/main")
        with pytest.raises(errors.MissingTarget, match="no branch 'origin/nope'"):
            await _preview(world, into="origin/nope")
    assert preview.into == "main"


async def test_a_rebase_cut_short_between_its_two_refs_completes_when_repeated(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash after the branch moved and before main did (simulated: the second ref
    move fails) leaves main old and the branch rebased; the next merge fast-forwards."""
    from actors.gitwatch import merging

    world.commit(world.repo, "other.txt", "x\n", "main moves on")
    old_main = world.tip("main")

    async def crash(*_args: Any) -> bool:
        raise errors.GitFailure("gitwatch died here")

    monkeypatch.setattr(merging, "_move_into", crash)
    with trio.fail_after(TIMEOUT_S), pytest.raises(errors.GitFailure):
        await _merge(world, mode="rebase")
    assert world.tip("main") == old_main  # old, not half-moved
    assert _git(world.repo, "merge-base", "main", "feat") == old_main  # the branch: rebased
    assert world.status(world.wt) == ""
    monkeypatch.undo()
    with trio.fail_after(TIMEOUT_S):
        result = await _merge(world, mode="rebase")
    assert result.changed and world.tip("main") == world.tip("feat") == result.commit
    assert _git(world.repo, "rev-list", "--count", f"{old_main}..main") == "1"
