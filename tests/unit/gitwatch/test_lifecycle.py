"""Worktree create/remove/rename on real repositories (seed 01 §4.3, §5.3, §5.4).

``store`` is replaced by a recording port (the seam in ``storeview``); git, the
filesystem and the watcher are real.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from actors.gitwatch import errors
from actors.gitwatch import lifecycle as lifecycle_module
from actors.gitwatch import tracker as tracker_module
from actors.gitwatch.aheadbehind import AheadBehindCache, Bases
from actors.gitwatch.firstmessage import name_from_message, rename_from_first_message
from actors.gitwatch.lifecycle import (
    CreateRequest,
    create_worktree,
    remove_worktree,
    rename_worktree,
)
from actors.gitwatch.storeview import StoreView
from actors.gitwatch.tracker import RepoTracker
from actors.gitwatch.watcher import DEBOUNCE_S, GitWatcher
from orca.actor.inotify import Inotify
from orca.contracts import gitwatch as gw
from orca.model.state import GlobalSettings
from orca.model.types_repo import Repo
from orca.model.worktree import WorktreeMeta
from orca.wire.errors import Unavailable


@dataclass
class RecordingStore:
    """A StorePort that keeps meta in memory and records every write, in order."""

    current: StoreView
    calls: list[tuple[str, Any, Any]] = field(default_factory=list)
    fail_migrate: bool = False
    fail_patch: bool = False

    def view(self) -> StoreView:
        return self.current

    async def whole_view(self) -> StoreView:
        return self.current

    async def lookup_repo(self, repo_id: str) -> Repo | None:
        return self.current.repos.get(repo_id)

    async def replace_meta(self, worktree_id: str, meta: WorktreeMeta) -> None:
        self.calls.append(("replace_meta", worktree_id, meta))

    async def forget_meta(self, worktree_id: str) -> None:
        self.calls.append(("forget_meta", worktree_id, None))

    async def patch_meta(self, worktree_id: str, patch: dict[str, Any]) -> None:
        self.calls.append(("patch_meta", worktree_id, patch))
        if self.fail_patch:
            raise Unavailable("store is down")

    async def migrate_identity(self, old_id: str, new_id: str) -> None:
        self.calls.append(("migrate_identity", old_id, new_id))
        if self.fail_migrate:
            raise Unavailable("store is down")


@dataclass
class World:
    tracker: RepoTracker
    store: RecordingStore
    events: list[msgspec.Struct]  # what the tracker emitted and the progress, in order
    root: Path
    repo: Path

    def progress(self, stage: gw.Stage, text: str) -> None:
        self.events.append(gw.CreateProgress(request_id=None, repo_id="r1", stage=stage, text=text))


@pytest.fixture
async def world(repo: Path, tmp_path: Path) -> AsyncIterator[World]:
    root = tmp_path / "workspaces"
    root.mkdir()
    view = StoreView(
        repos={"r1": Repo(id="r1", path=str(repo), display_name="repo")},
        settings=GlobalSettings(workspace_dir=str(root), nest_workspaces=True),
    )
    events: list[msgspec.Struct] = []
    with Inotify() as inotify:
        watcher = GitWatcher(inotify)
        tracker = RepoTracker(watcher, events.append)
        async with trio.open_nursery() as nursery:
            await nursery.start(watcher.run, tracker.apply_batch)
            await tracker.track_repo("r1", str(repo))
            yield World(tracker, RecordingStore(view), events, root, repo)
            nursery.cancel_scope.cancel()


async def _create(world: World, name: str, **kw: Any) -> gw.Created:
    request = CreateRequest(repo_id="r1", name=name, **kw)
    return await create_worktree(world.tracker, world.store, request, world.progress)


async def test_create_puts_worktree_under_root_and_records_evidence(world: World) -> None:
    """A new worktree lands at <root>/<repo>/<name>, on a new branch, with creation evidence."""
    with trio.fail_after(20):
        result = await _create(world, "feature one")
        path = world.root / "repo" / "feature-one"
        assert result.path == str(path) and result.branch == "refs/heads/feature-one"
        assert (path / "README").exists()
        assert str(path) in world.tracker.repos["r1"].rows
        [(op, worktree_id, patch)] = world.store.calls
        assert (op, worktree_id) == ("replace_meta", f"r1::{path}")
        assert patch.orca_created_at > 0 and patch.orca_creation_workspace_layout == "nested"


@pytest.mark.parametrize("name", ["../../x", "/etc/evil", "a\x00b\nc\x1b[2J", "..\\..\\y"])
async def test_traversal_and_control_names_are_sanitized_inside_root(
    world: World, name: str
) -> None:
    """Names with ../, absolute paths or control characters become one safe leaf in the root."""
    with trio.fail_after(20):
        result = await _create(world, name)
        path = Path(result.path)
        assert path.parent == world.root / "repo"
        assert all(ch.isprintable() and ch not in "/\\" for ch in path.name)
        assert ".." not in path.name


@pytest.mark.parametrize("name", ["..", "../..", "/", "\x00\x01", "   "])
async def test_names_with_nothing_usable_are_refused(world: World, name: str) -> None:
    """A name that sanitizes to nothing is refused before git runs."""
    with trio.fail_after(10), pytest.raises(errors.InvalidWorktreeName):
        await _create(world, name)
    assert world.store.calls == []


async def test_symlinked_repo_dir_cannot_lead_outside_root(world: World, tmp_path: Path) -> None:
    """A symlink inside the root pointing elsewhere is caught after resolving it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, world.root / "repo")
    with trio.fail_after(10), pytest.raises(errors.PathOutsideWorkspace):
        await _create(world, "sneaky")
    assert not any(outside.iterdir())


async def test_branch_checked_out_elsewhere_is_a_clear_conflict(world: World) -> None:
    """Creating a worktree for a branch already checked out raises BranchCheckedOutElsewhere."""
    with trio.fail_after(10), pytest.raises(errors.BranchCheckedOutElsewhere) as caught:
        await _create(world, "main")
    assert caught.value.other_path == str(world.repo)


async def test_existing_destination_is_refused(world: World) -> None:
    """A path that already exists is never reused as a worktree."""
    (world.root / "repo" / "taken").mkdir(parents=True)
    with trio.fail_after(10), pytest.raises(errors.DestinationExists):
        await _create(world, "taken")


def _exists(path: Path | str) -> bool:
    """Tests may block briefly; the code under test is what must not."""
    return Path(path).exists()


def _git_out(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, check=True, capture_output=True, text=True
    ).stdout


def _commit_setup(repo: Path, text: str) -> None:
    (repo / "orca.yaml").write_text(text)
    for args in (["add", "orca.yaml"], ["commit", "-q", "-m", "setup"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


async def test_setup_script_output_is_streamed_as_progress(world: World) -> None:
    """The orca.yaml setup block runs in the new worktree; each line is a progress event."""
    _commit_setup(world.repo, "name: x\nsetup: |\n  echo one\n  echo two >&2\n  pwd\nother: 1\n")
    with trio.fail_after(20):
        result = await _create(world, "with-setup")
    lines = [
        e.text for e in world.events if isinstance(e, gw.CreateProgress) and e.stage == "setup"
    ]
    assert lines == ["one", "two", result.path]
    assert result.setup == gw.SetupOutcome(ran=True, exit_code=0)


async def test_setup_can_be_skipped_and_failure_is_reported(world: World) -> None:
    """--setup skip never runs the script; a failing script reports its exit code."""
    _commit_setup(world.repo, "setup: exit 3\n")
    with trio.fail_after(20):
        skipped = await _create(world, "skip", run_setup=False)
        failed = await _create(world, "fail")
    assert skipped.setup == gw.SetupOutcome(ran=False, exit_code=None)
    assert failed.setup == gw.SetupOutcome(ran=True, exit_code=3)


async def test_dirty_worktree_removal_is_refused_unless_forced(world: World) -> None:
    """Removing a worktree with changes raises WorktreeDirty; force removes it; branch stays."""
    with trio.fail_after(20):
        created = await _create(world, "dirty")
        path = Path(created.path)
        (path / "README").write_text("unsaved work\n")
        with pytest.raises(errors.WorktreeDirty):
            await remove_worktree(world.tracker, world.store, created.worktree_id)
        assert _exists(path)
        result = await remove_worktree(world.tracker, world.store, created.worktree_id, force=True)
        assert result.removed and not _exists(path)
        assert world.store.calls[-1] == ("forget_meta", created.worktree_id, None)
        branches = _git_out(world.repo, "branch", "--list", "dirty")
        assert "dirty" in branches


async def test_locked_worktree_removal_is_refused(world: World) -> None:
    """A locked worktree is not removed without force."""
    with trio.fail_after(20):
        created = await _create(world, "locked")
        _git_out(world.repo, "worktree", "lock", created.path)
        with pytest.raises(errors.WorktreeLocked):
            await remove_worktree(world.tracker, world.store, created.worktree_id)
        await remove_worktree(world.tracker, world.store, created.worktree_id, force=True)
        assert not _exists(created.path)


async def test_branch_is_deleted_only_when_asked(world: World) -> None:
    """delete_branch removes the (merged) branch along with the worktree."""
    with trio.fail_after(20):
        created = await _create(world, "gone")
        result = await remove_worktree(
            world.tracker, world.store, created.worktree_id, delete_branch=True
        )
    assert result.branch_deleted is True
    out = _git_out(world.repo, "branch")
    assert "gone" not in out


async def test_main_worktree_cannot_be_removed(world: World) -> None:
    """The main worktree is never removed through gitwatch."""
    with trio.fail_after(10), pytest.raises(errors.CallerError):
        await remove_worktree(world.tracker, world.store, f"r1::{world.repo}", force=True)


async def test_rename_moves_then_migrates_then_announces(world: World) -> None:
    """Rename = git worktree move, then store identity migration, then worktree.renamed (§4.3)."""
    with trio.fail_after(20):
        created = await _create(world, "old")
        old_path = Path(created.path)
        world.events.clear()
        world.store.calls.clear()
        result = await rename_worktree(
            world.tracker, world.store, world.tracker.emit, created.worktree_id, "new name"
        )
        new_path = old_path.parent / "new-name"
        assert result.new_worktree_id == f"r1::{new_path}"
        assert world.store.calls == [
            ("patch_meta", created.worktree_id, {"displayName": "new name"}),
            ("migrate_identity", created.worktree_id, f"r1::{new_path}"),
        ]
        assert _exists(new_path) and not _exists(old_path)
        await trio.sleep(DEBOUNCE_S * 3)  # let the watcher see the move
        kinds = [type(e) for e in world.events]
        assert kinds[0] is gw.WorktreeRenamed
        assert gw.WorktreeRemoved not in kinds and gw.WorktreeAdded not in kinds
        assert str(new_path) in world.tracker.repos["r1"].rows


async def test_rename_reports_a_failed_migration_after_the_move(world: World) -> None:
    """If store cannot migrate, the move stands, the rename is announced and the error says so."""
    with trio.fail_after(20):
        created = await _create(world, "stuck")
        world.store.fail_migrate = True
        with pytest.raises(errors.PeerUnavailable):
            await rename_worktree(
                world.tracker, world.store, world.tracker.emit, created.worktree_id, "moved"
            )
        renamed = [e for e in world.events if isinstance(e, gw.WorktreeRenamed)]
        assert renamed and renamed[0].identity_migrated is False


async def test_rename_refuses_an_existing_destination(world: World) -> None:
    """Moving onto an existing directory is refused before git runs."""
    with trio.fail_after(20):
        created = await _create(world, "a")
        await _create(world, "b")
        with pytest.raises(errors.DestinationExists):
            await rename_worktree(
                world.tracker, world.store, world.tracker.emit, created.worktree_id, "b"
            )


async def test_the_post_checkout_hook_runs_as_git_worktree_add_runs_it(world: World) -> None:
    """The files are checked out apart from registering the worktree (so checkouts of a
    big repo run side by side), and the repo's post-checkout hook still runs once, in
    the new worktree with its files there, given what git gives it: a null previous
    HEAD, the new HEAD, 1 (a branch checkout)."""
    record = world.root.parent / "hook-calls"
    hook = world.repo / ".git" / "hooks" / "post-checkout"
    hook.write_text(f'#!/bin/sh\necho "$1 $2 $3 $(pwd) $(cat README)" >> "{record}"\n')
    hook.chmod(0o700)
    with trio.fail_after(20):
        result = await _create(world, "hooked")
    head = _git_out(Path(result.path), "rev-parse", "HEAD").strip()
    readme = (world.repo / "README").read_text().strip()
    assert record.read_text().splitlines() == [f"{'0' * 40} {head} 1 {result.path} {readme}"]
    assert _git_out(Path(result.path), "status", "--porcelain") == ""


async def test_a_failing_post_checkout_hook_fails_the_create_and_keeps_the_worktree(
    world: World,
) -> None:
    """As with ``git worktree add`` itself: the hook's failure is the create's, named,
    and the worktree it ran in stays."""
    hook = world.repo / ".git" / "hooks" / "post-checkout"
    hook.write_text("#!/bin/sh\necho 'lfs: no such object' >&2\nexit 2\n")
    hook.chmod(0o700)
    with trio.fail_after(20), pytest.raises(errors.GitFailure, match="no such object"):
        await _create(world, "unlucky")
    assert (world.root / "repo" / "unlucky" / "README").exists()


async def test_two_creates_of_one_name_at_once_come_in_turn(world: World) -> None:
    """Creates run side by side, but two of one name are served one after the other: one
    worktree, and the second a clear DestinationExists, as if they had come in turn (not
    a git error from racing it)."""
    outcomes: list[object] = []

    async def one() -> None:
        try:
            outcomes.append(await _create(world, "twin"))
        except errors.GitwatchError as exc:
            outcomes.append(exc)

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(one)
            nursery.start_soon(one)
    made = [o for o in outcomes if isinstance(o, gw.Created)]
    refused = [o for o in outcomes if isinstance(o, errors.DestinationExists)]
    assert len(made) == 1 and len(refused) == 1, outcomes
    assert [c[0] for c in world.store.calls] == ["replace_meta"]


async def test_creates_at_once_each_read_only_their_own_worktree(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eight creates at once each get their worktree listed when they return, having read
    that one worktree only: none listed the whole repo (the watcher's own rescans, as
    the admin dirs and refs change, are not the creates' and are not counted)."""
    listings: list[str] = []  # whole-repo listings a create asked for
    own: list[str] = []  # single worktrees a create read
    fresh, read_one = lifecycle_module.fresh_facts, tracker_module.read_one_with_ahead_behind

    async def counted_fresh(tracker: RepoTracker, repo: Repo) -> Any:
        listings.append(repo.path)
        return await fresh(tracker, repo)

    def counted_one(repo_path: str, path: str, *rest: Any) -> Any:
        own.append(path)
        return read_one(repo_path, path, *rest)

    monkeypatch.setattr(lifecycle_module, "fresh_facts", counted_fresh)
    monkeypatch.setattr(tracker_module, "read_one_with_ahead_behind", counted_one)
    names = [f"side-{i}" for i in range(8)]
    results: dict[str, gw.Created] = {}

    async def one(name: str) -> None:
        results[name] = await _create(world, name)
        assert results[name].path in world.tracker.repos["r1"].rows  # listed on return

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            for name in names:
                nursery.start_soon(one, name)
    assert sorted(results) == names
    assert all(_exists(r.path) for r in results.values())
    assert listings == [] and sorted(own) == sorted(r.path for r in results.values())
    # What each create read of its own worktree is what a whole scan reads now.
    scanned = tracker_module.scan_with_ahead_behind(str(world.repo), Bases(), AheadBehindCache())
    assert {r.path: r for r in scanned} == world.tracker.repos["r1"].rows


async def test_a_rescan_asked_during_a_scan_reads_the_disk_again(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rescan asked while another is reading returns only after a scan that began after
    the ask: a worktree made in between is in the facts it returns."""
    reading, release = threading.Event(), threading.Event()
    real = tracker_module.scan_with_ahead_behind

    def held(*args: Any) -> Any:
        if not release.is_set():
            reading.set()
            release.wait(20)
        return real(*args)

    monkeypatch.setattr(tracker_module, "scan_with_ahead_behind", held)
    late = world.root / "late"
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(world.tracker.rescan_repo, "r1")
            await trio.to_thread.run_sync(reading.wait, 20)  # the first scan is reading
            _git_out(world.repo, "worktree", "add", "-q", "-b", "late", str(late))
            nursery.start_soon(world.tracker.rescan_repo, "r1")
            await trio.testing.wait_all_tasks_blocked()  # the second asked, waits its turn
            release.set()
        assert str(late) in world.tracker.repos["r1"].rows


async def test_existing_branch_not_checked_out_is_reused(world: World) -> None:
    """A name whose branch exists but is checked out nowhere gets a worktree on that branch."""
    _git_out(world.repo, "branch", "parked")
    with trio.fail_after(20):
        result = await _create(world, "parked")
    assert result.branch == "refs/heads/parked"
    [(_, _, meta)] = world.store.calls
    assert meta.base_ref is None  # no new branch, so no base


async def test_create_tracks_a_repo_the_tracker_has_not_seen_yet(
    world: World, tmp_path: Path, git: Any
) -> None:
    """A repo the store knows but the tracker does not track yet is tracked on demand."""
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    git(other, "commit", "-q", "--allow-empty", "-m", "init")
    repos = {**world.store.current.repos, "r2": Repo(id="r2", path=str(other), display_name="o")}
    world.store.current = StoreView(repos=repos, settings=world.store.current.settings)
    with trio.fail_after(20):
        result = await create_worktree(
            world.tracker, world.store, CreateRequest(repo_id="r2", name="x"), world.progress
        )
    assert result.path == str(world.root / "other" / "x")
    assert result.path in world.tracker.repos["r2"].rows


async def test_unknown_base_is_the_callers_error(world: World) -> None:
    """A base ref git cannot resolve is a bad request, and nothing is left behind."""
    with trio.fail_after(20), pytest.raises(errors.CallerError):
        await _create(world, "based", base="no-such-ref")
    assert not _exists(world.root / "repo" / "based")
    assert world.store.calls == []


async def test_a_base_is_anything_git_reads_as_a_commit(world: World) -> None:
    """A tag, a relative revision or a short id is a base; a tree is not (refused before
    anything is made, as with an unknown name)."""
    (world.repo / "second").write_text("2\n")
    _git_out(world.repo, "add", "second")
    _git_out(world.repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "two")
    first = _git_out(world.repo, "rev-parse", "HEAD~1").strip()
    _git_out(world.repo, "tag", "-a", "-m", "v1", "v1", first)
    with trio.fail_after(30):
        for name, base in (("by-tag", "v1"), ("by-rel", "HEAD~1"), ("by-id", first[:10])):
            created = await _create(world, name, base=base)
            assert _git_out(Path(created.path), "rev-parse", "HEAD").strip() == first
        tree = _git_out(world.repo, "rev-parse", "HEAD^{tree}").strip()
        with pytest.raises(errors.CallerError, match="is not a branch, tag or commit"):
            await _create(world, "by-tree", base=tree)
    assert not _exists(world.root / "repo" / "by-tree")


async def test_unsupported_setup_is_reported_and_worktree_kept(world: World) -> None:
    """A setup key this parser refuses does not fail the create; the result says why."""
    _commit_setup(world.repo, "setup:\n  - npm ci\n")
    with trio.fail_after(20):
        result = await _create(world, "listy")
    assert result.setup.ran is False and "setup must be" in (result.setup.error or "")
    assert _exists(result.path)


async def test_rename_renames_branch_display_name_and_folder_together(world: World) -> None:
    """mv gives the branch and folder the sanitized name and the display name as typed."""
    with trio.fail_after(20):
        created = await _create(world, "old")
        result = await rename_worktree(
            world.tracker, world.store, world.tracker.emit, created.worktree_id, "New Task"
        )
        assert (result.branch, result.display_name) == ("refs/heads/New-Task", "New Task")
        assert _git_out(world.repo, "branch", "--list", "old") == ""
        row = world.tracker.repos["r1"].rows[result.path]
        assert row.branch == "refs/heads/New-Task" and result.path.endswith("/New-Task")


async def test_rename_refuses_a_taken_branch_name_and_changes_nothing(world: World) -> None:
    """A branch that already exists is a conflict found before anything is renamed."""
    _git_out(world.repo, "branch", "taken")
    with trio.fail_after(20):
        created = await _create(world, "mine")
        world.store.calls.clear()
        with pytest.raises(errors.StateConflict):
            await rename_worktree(
                world.tracker, world.store, world.tracker.emit, created.worktree_id, "taken"
            )
        assert world.store.calls == [] and _exists(created.path)
        assert _git_out(world.repo, "branch", "--list", "mine").strip() == "+ mine"


async def test_unrecorded_name_undoes_the_branch_rename(world: World) -> None:
    """store failing to record the display name undoes the branch rename; no move."""
    with trio.fail_after(20):
        created = await _create(world, "keep")
        world.store.fail_patch = True
        with pytest.raises(errors.PeerUnavailable):
            await rename_worktree(
                world.tracker, world.store, world.tracker.emit, created.worktree_id, "other"
            )
        assert _git_out(world.repo, "branch", "--list", "keep").strip() == "+ keep"
        assert _git_out(world.repo, "branch", "--list", "other") == ""
        assert _exists(created.path)
        assert not any(isinstance(e, gw.WorktreeRenamed) for e in world.events)


def test_first_message_name_is_its_first_line_cut_at_a_word() -> None:
    """The first non-blank line, whitespace collapsed, at most 40 characters."""
    text = "\n  fix   the login redirect loop when the session cookie expires\nmore"
    assert name_from_message(text) == "fix the login redirect loop when the"
    assert name_from_message("   \n ") is None
    assert name_from_message("x" * 100) == "x" * 40


@dataclass
class ReloadingStore(RecordingStore):
    """store's mirror re-snapshotting past its bound: ``view`` is the copy being replaced."""

    async def whole_view(self) -> StoreView:
        raise errors.StoreCatchingUp("store is catching up")


async def test_first_message_is_not_skipped_from_a_copy_being_reloaded(world: World) -> None:
    """Issue 33: the copy being replaced may lack the pending flag; "no rename pending"
    would be final, so the call answers that store is catching up instead."""
    with trio.fail_after(20):
        created = await _create(world, "wt-placeholder", pending_first_agent_message_rename=True)
        reloading = ReloadingStore(world.store.current)  # (its meta lacks the new worktree)
        with pytest.raises(errors.StoreCatchingUp):
            await rename_from_first_message(
                world.tracker, reloading, world.tracker.emit, created.worktree_id, "Add dark mode"
            )
        assert reloading.calls == []


async def test_first_message_renames_a_pending_worktree_once(world: World) -> None:
    """Pending: renamed by the message and the flag cleared with the name; else skipped."""
    with trio.fail_after(20):
        created = await _create(world, "wt-placeholder", pending_first_agent_message_rename=True)
        evidence = world.store.calls[-1][2]
        assert evidence.pending_first_agent_message_rename is True
        world.store.current = dataclasses.replace(
            world.store.current, meta={created.worktree_id: evidence}
        )
        world.store.calls.clear()
        done = await rename_from_first_message(
            world.tracker, world.store, world.tracker.emit, created.worktree_id, "Add dark mode"
        )
        assert done.renamed and done.rename is not None
        assert done.rename.branch == "refs/heads/Add-dark-mode"
        assert world.store.calls[0] == (
            "patch_meta",
            created.worktree_id,
            {
                "pendingFirstAgentMessageRename": False,
                "firstAgentMessageRenameError": None,
                "displayName": "Add dark mode",
            },
        )
        again = await rename_from_first_message(
            world.tracker, world.store, world.tracker.emit, done.rename.new_worktree_id, "x"
        )
        assert (again.renamed, again.skipped) == (False, "no rename pending")
        assert not again.still_pending


async def test_first_message_with_no_usable_name_leaves_the_worktree_pending(
    world: World,
) -> None:
    """A message that names nothing changes nothing and says the flag is still set, so
    hooks asks again with the next prompt."""
    with trio.fail_after(20):
        created = await _create(world, "wt-placeholder", pending_first_agent_message_rename=True)
        evidence = world.store.calls[-1][2]
        world.store.current = dataclasses.replace(
            world.store.current, meta={created.worktree_id: evidence}
        )
        world.store.calls.clear()
        answer = await rename_from_first_message(
            world.tracker, world.store, world.tracker.emit, created.worktree_id, "  \n\t\n"
        )
        assert (answer.renamed, answer.still_pending) == (False, True)
        assert world.store.calls == []
