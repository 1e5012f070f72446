"""Watching real repositories: external changes are published within about a second."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import msgspec
import pytest
import trio

from actors.gitwatch.tracker import RepoTracker
from actors.gitwatch.watcher import GitWatcher
from actors.gitwatch.watchplan import RescanRepo
from orca.actor.inotify import Inotify
from orca.contracts import gitwatch as gw

# What the tracker emits: the contract's event Structs, in order.
Event = msgspec.Struct
# "Within about a second" (issue 5): debounce + one status, with slack for a loaded CI box.
PUBLISH_DEADLINE_S = 3.0


@dataclass
class Watched:
    tracker: RepoTracker
    events: trio.MemoryReceiveChannel[Event]

    async def next_matching(self, predicate: Callable[[Event], bool]) -> Event:
        with trio.fail_after(PUBLISH_DEADLINE_S):
            async for event in self.events:
                if predicate(event):
                    return event
        raise AssertionError("event stream ended")


async def _git(cwd: Path, *args: str) -> None:
    await trio.run_process(["git", *args], cwd=cwd, capture_stdout=True, capture_stderr=True)


@pytest.fixture
async def watched(repo: Path) -> AsyncIterator[Watched]:
    send, receive = trio.open_memory_channel[Event](1000)
    with Inotify() as inotify:
        watcher = GitWatcher(inotify)
        tracker = RepoTracker(watcher, send.send_nowait)
        async with trio.open_nursery() as nursery:
            await nursery.start(watcher.run, tracker.apply_batch)
            await tracker.track_repo("r1", str(repo))
            yield Watched(tracker, receive)
            nursery.cancel_scope.cancel()


def _is(kind: type[Event], path: Path) -> Callable[[Event], bool]:
    def match(event: Event) -> bool:
        git = getattr(event, "git", None)
        at = git.path if git is not None else getattr(event, "path", None)
        return isinstance(event, kind) and at == str(path)

    return match


def _status(event: Event) -> gw.GitStatus:
    """The dirty counts of a worktree.changed that carries them."""
    assert isinstance(event, gw.WorktreeChanged) and event.git_status is not None
    return event.git_status


def _counts(kind: str, value: int, path: Path) -> Callable[[Event], bool]:
    """A worktree.changed of ``path`` whose ``kind`` count is ``value``."""

    def match(event: Event) -> bool:
        return (
            _is(gw.WorktreeChanged, path)(event)
            and getattr(event, "git_status", None) is not None
            and getattr(_status(event), kind) == value
        )

    return match


async def test_external_worktree_add_and_remove_are_published(
    watched: Watched, repo: Path, tmp_path: Path
) -> None:
    """`git worktree add`/`remove` run outside Orca appear and disappear (seed 01 §4.2)."""
    with trio.fail_after(15):
        wt = tmp_path / "external"
        await _git(repo, "worktree", "add", "-q", str(wt), "-b", "ext")
        added = await watched.next_matching(_is(gw.WorktreeAdded, wt))
        assert isinstance(added, gw.WorktreeAdded)
        assert added.worktree_id == f"r1::{wt}"
        assert added.git.branch == "refs/heads/ext"
        await _git(repo, "worktree", "remove", str(wt))
        await watched.next_matching(_is(gw.WorktreeRemoved, wt))
        assert str(wt) not in watched.tracker.repos["r1"].rows


async def test_a_deleted_worktree_folder_is_published_prunable(
    watched: Watched, repo: Path, tmp_path: Path
) -> None:
    """Issue 32: ``rm -rf`` of a linked worktree's folder (git's admin dir untouched) is
    heard on the folder's own watch: the row becomes prunable (``missing`` in the CLI)."""
    with trio.fail_after(15):
        wt = tmp_path / "doomed"
        await _git(repo, "worktree", "add", "-q", str(wt), "-b", "doomed")
        await watched.next_matching(_is(gw.WorktreeAdded, wt))
        await trio.to_thread.run_sync(shutil.rmtree, wt)
        gone = await watched.next_matching(
            lambda e: _is(gw.WorktreeChanged, wt)(e) and e.git.prunable  # type: ignore[attr-defined]
        )
        assert isinstance(gone, gw.WorktreeChanged)


async def test_a_worktree_folder_gone_before_its_watch_is_published_prunable(
    tmp_path: Path,
) -> None:
    """The folder deleted before the watcher placed its watch (no event can come): the
    failed watch itself asks for a rescan."""
    with Inotify() as inotify, trio.fail_after(15):
        watcher = GitWatcher(inotify)
        batches: list[set[object]] = []
        batched = trio.Event()

        async def on_batch(batch: set[object]) -> None:
            batches.append(batch)
            batched.set()

        async with trio.open_nursery() as nursery:
            await nursery.start(watcher.run, on_batch)
            await watcher.watch_worktree("r1", str(tmp_path / "never-there"), None)
            await batched.wait()
            nursery.cancel_scope.cancel()
        [batch] = batches
        assert RescanRepo("r1") in batch


async def test_commit_in_linked_worktree_changes_its_head(
    watched: Watched, repo: Path, tmp_path: Path
) -> None:
    """A commit made in a linked worktree is published as a new HEAD for that worktree."""
    with trio.fail_after(15):
        wt = tmp_path / "w"
        await _git(repo, "worktree", "add", "-q", str(wt), "-b", "w")
        added = await watched.next_matching(_is(gw.WorktreeAdded, wt))
        assert isinstance(added, gw.WorktreeAdded)
        await _git(wt, "commit", "-q", "--allow-empty", "-m", "next")

        def moved(event: Event) -> bool:
            return (
                isinstance(event, gw.WorktreeChanged)
                and _is(gw.WorktreeChanged, wt)(event)
                and (event.git.head != added.git.head)
            )

        changed = await watched.next_matching(moved)
        assert isinstance(changed, gw.WorktreeChanged)
        assert changed.git.branch == "refs/heads/w"


async def test_file_edit_changes_dirty_count(watched: Watched, repo: Path) -> None:
    """Editing a tracked file (no git command at all) publishes the new dirty count."""
    with trio.fail_after(15):
        (repo / "README").write_text("edited\n")
        edited = await watched.next_matching(_counts("unstaged", 1, repo))
        assert _status(edited).total == 1
        (repo / "sub").mkdir()
        (repo / "sub" / "new.txt").write_text("x")
        await watched.next_matching(_counts("untracked", 1, repo))


async def test_file_created_in_a_new_subdirectory_is_seen(watched: Watched, repo: Path) -> None:
    """A directory created after watching started gets its own watch (later edits count)."""
    with trio.fail_after(15):
        (repo / "pkg").mkdir()
        (repo / "pkg" / "a.txt").write_text("a")
        await _git(repo, "add", "pkg/a.txt")
        await _git(repo, "commit", "-q", "-m", "pkg")
        await watched.next_matching(_counts("total", 0, repo))
        (repo / "pkg" / "a.txt").write_text("b")
        await watched.next_matching(_counts("unstaged", 1, repo))


async def test_vanished_repository_is_reported_not_crashing(watched: Watched, repo: Path) -> None:
    """Deleting the repo's directory publishes repo.unavailable; the tracker keeps running."""
    with trio.fail_after(15):
        shutil.rmtree(repo)
        gone = await watched.next_matching(lambda e: isinstance(e, gw.RepoUnavailable))
        assert isinstance(gone, gw.RepoUnavailable)
        assert (gone.repo_id, gone.path) == ("r1", str(repo))
        assert watched.tracker.repos["r1"].rows == {}
        await watched.tracker.rescan_repo("r1")  # still alive, still unavailable, no new event
        assert watched.tracker.repos["r1"].unavailable


async def test_ignored_files_do_not_publish(watched: Watched, repo: Path) -> None:
    """Writes under an ignored directory cause no event (no watch there at all)."""
    with trio.fail_after(15):
        (repo / ".gitignore").write_text("build/\n")
        await watched.next_matching(_counts("untracked", 1, repo))
        count = watched.tracker.watcher.watch_count
        (repo / "build").mkdir()
        (repo / "build" / "out.o").write_text("x")
        await trio.sleep(0.6)  # longer than the debounce: nothing may arrive
        with pytest.raises(trio.WouldBlock):
            watched.events.receive_nowait()
        assert watched.tracker.watcher.watch_count == count


async def test_folder_repo_is_listed_and_its_disappearance_reported(tmp_path: Path) -> None:
    """A folder (non-git) repo is one row; deleting the folder publishes repo.unavailable."""
    folder = tmp_path / "notes"
    folder.mkdir()
    send, receive = trio.open_memory_channel[Event](100)
    with trio.fail_after(15), Inotify() as inotify:
        watcher = GitWatcher(inotify)
        tracker = RepoTracker(watcher, send.send_nowait)
        async with trio.open_nursery() as nursery:
            await nursery.start(watcher.run, tracker.apply_batch)
            await tracker.track_repo("f1", str(folder), "folder")
            added = receive.receive_nowait()
            assert isinstance(added, gw.WorktreeAdded)
            assert (added.git.path, added.git.head) == (str(folder), "")
            assert watcher.watch_count == 1  # the folder itself, not its files
            shutil.rmtree(folder)
            watched = Watched(tracker, receive)
            gone = await watched.next_matching(lambda e: isinstance(e, gw.RepoUnavailable))
            assert isinstance(gone, gw.RepoUnavailable) and gone.repo_id == "f1"
            nursery.cancel_scope.cancel()


async def test_sha256_repository_is_watched_through_the_cli_fallback(
    tmp_path: Path, git: Callable[..., str]
) -> None:
    """A repo libgit2 cannot open still publishes its rows and dirty counts."""
    repo = tmp_path / "sha"
    git(tmp_path, "init", "-q", "--object-format=sha256", "-b", "main", "sha")
    (repo / "a.txt").write_text("a")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "one")
    send, receive = trio.open_memory_channel[Event](100)
    with trio.fail_after(15), Inotify() as inotify:
        watcher = GitWatcher(inotify)
        tracker = RepoTracker(watcher, send.send_nowait)
        async with trio.open_nursery() as nursery:
            await nursery.start(watcher.run, tracker.apply_batch)
            await tracker.track_repo("s1", str(repo))
            watched = Watched(tracker, receive)
            await watched.next_matching(_is(gw.WorktreeAdded, repo))
            (repo / "a.txt").write_text("edited")
            await watched.next_matching(_counts("unstaged", 1, repo))
            nursery.cancel_scope.cancel()


async def test_oversized_tree_degrades_to_git_events_only(
    repo: Path, git: Callable[..., str]
) -> None:
    """Beyond the per-worktree watch budget only git's own writes refresh the status."""
    for name in ("a", "b", "c", "d"):
        (repo / name).mkdir()
    send, receive = trio.open_memory_channel[Event](100)
    with trio.fail_after(15), Inotify() as inotify:
        watcher = GitWatcher(inotify, tree_watch_limit=3)
        tracker = RepoTracker(watcher, send.send_nowait)
        async with trio.open_nursery() as nursery:
            await nursery.start(watcher.run, tracker.apply_batch)
            await tracker.track_repo("r1", str(repo))
            assert watcher.degraded == {("r1", str(repo))}
            watched = Watched(tracker, receive)
            (repo / "README").write_text("edited\n")  # no watch sees this
            await trio.sleep(0.6)
            changed = [e for e in _drain(receive) if isinstance(e, gw.WorktreeChanged)]
            assert all(_status(e).total == 0 for e in changed)
            await trio.to_thread.run_sync(lambda: git(repo, "add", "README"))
            await watched.next_matching(_counts("staged", 1, repo))
            nursery.cancel_scope.cancel()


def _drain(receive: trio.MemoryReceiveChannel[Event]) -> list[Event]:
    events = []
    while True:
        try:
            events.append(receive.receive_nowait())
        except trio.WouldBlock:
            return events
