"""Watching real repositories: external changes are published within about a second."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio

from actors.gitwatch.inotify import Inotify
from actors.gitwatch.service import GitwatchService
from actors.gitwatch.watcher import GitWatcher

Event = tuple[str, dict[str, Any]]
# "Within about a second" (issue 5): debounce + one status, with slack for a loaded CI box.
PUBLISH_DEADLINE_S = 3.0


@dataclass
class Watched:
    service: GitwatchService
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
        service = GitwatchService(watcher, lambda kind, data: send.send_nowait((kind, data)))
        async with trio.open_nursery() as nursery:
            await nursery.start(watcher.run, service.apply_batch)
            await service.track_repo("r1", str(repo))
            yield Watched(service, receive)
            nursery.cancel_scope.cancel()


def _is(kind: str, path: Path) -> Callable[[Event], bool]:
    def match(event: Event) -> bool:
        data = event[1]
        return event[0] == kind and (data.get("git") or data).get("path") == str(path)

    return match


async def test_external_worktree_add_and_remove_are_published(
    watched: Watched, repo: Path, tmp_path: Path
) -> None:
    """`git worktree add`/`remove` run outside Orca appear and disappear (seed 01 §4.2)."""
    with trio.fail_after(15):
        wt = tmp_path / "external"
        await _git(repo, "worktree", "add", "-q", str(wt), "-b", "ext")
        _, data = await watched.next_matching(_is("worktree.added", wt))
        assert data["worktreeId"] == f"r1::{wt}"
        assert data["git"]["branch"] == "refs/heads/ext"
        await _git(repo, "worktree", "remove", str(wt))
        await watched.next_matching(_is("worktree.removed", wt))
        assert str(wt) not in watched.service.repos["r1"].rows


async def test_commit_in_linked_worktree_changes_its_head(
    watched: Watched, repo: Path, tmp_path: Path
) -> None:
    """A commit made in a linked worktree is published as a new HEAD for that worktree."""
    with trio.fail_after(15):
        wt = tmp_path / "w"
        await _git(repo, "worktree", "add", "-q", str(wt), "-b", "w")
        _, added = await watched.next_matching(_is("worktree.added", wt))
        await _git(wt, "commit", "-q", "--allow-empty", "-m", "next")
        _, changed = await watched.next_matching(
            lambda e: _is("worktree.changed", wt)(e) and e[1]["git"]["head"] != added["git"]["head"]
        )
        assert changed["git"]["branch"] == "refs/heads/w"


async def test_file_edit_changes_dirty_count(watched: Watched, repo: Path) -> None:
    """Editing a tracked file (no git command at all) publishes the new dirty count."""
    with trio.fail_after(15):
        (repo / "README").write_text("edited\n")
        _, data = await watched.next_matching(
            lambda e: (
                _is("worktree.changed", repo)(e) and (e[1]["gitStatus"] or {}).get("unstaged") == 1
            )
        )
        assert data["gitStatus"]["total"] == 1
        (repo / "sub").mkdir()
        (repo / "sub" / "new.txt").write_text("x")
        await watched.next_matching(
            lambda e: _is("worktree.changed", repo)(e) and e[1]["gitStatus"]["untracked"] == 1
        )


async def test_file_created_in_a_new_subdirectory_is_seen(watched: Watched, repo: Path) -> None:
    """A directory created after watching started gets its own watch (later edits count)."""
    with trio.fail_after(15):
        (repo / "pkg").mkdir()
        (repo / "pkg" / "a.txt").write_text("a")
        await _git(repo, "add", "pkg/a.txt")
        await _git(repo, "commit", "-q", "-m", "pkg")
        await watched.next_matching(
            lambda e: (
                _is("worktree.changed", repo)(e) and (e[1]["gitStatus"] or {}).get("total") == 0
            )
        )
        (repo / "pkg" / "a.txt").write_text("b")
        await watched.next_matching(
            lambda e: _is("worktree.changed", repo)(e) and e[1]["gitStatus"]["unstaged"] == 1
        )


async def test_vanished_repository_is_reported_not_crashing(watched: Watched, repo: Path) -> None:
    """Deleting the repo's directory publishes repo.unavailable; the service keeps running."""
    with trio.fail_after(15):
        shutil.rmtree(repo)
        _, data = await watched.next_matching(lambda e: e[0] == "repo.unavailable")
        assert data["repoId"] == "r1" and data["path"] == str(repo)
        assert watched.service.repos["r1"].rows == {}
        await watched.service.rescan_repo("r1")  # still alive, still unavailable, no new event
        assert watched.service.repos["r1"].unavailable


async def test_ignored_files_do_not_publish(watched: Watched, repo: Path) -> None:
    """Writes under an ignored directory cause no event (no watch there at all)."""
    with trio.fail_after(15):
        (repo / ".gitignore").write_text("build/\n")
        await watched.next_matching(
            lambda e: (
                _is("worktree.changed", repo)(e) and (e[1]["gitStatus"] or {}).get("untracked") == 1
            )
        )
        count = watched.service.watcher.watch_count
        (repo / "build").mkdir()
        (repo / "build" / "out.o").write_text("x")
        await trio.sleep(0.6)  # longer than the debounce: nothing may arrive
        with pytest.raises(trio.WouldBlock):
            watched.events.receive_nowait()
        assert watched.service.watcher.watch_count == count


async def test_folder_repo_is_listed_and_its_disappearance_reported(tmp_path: Path) -> None:
    """A folder (non-git) repo is one row; deleting the folder publishes repo.unavailable."""
    folder = tmp_path / "notes"
    folder.mkdir()
    send, receive = trio.open_memory_channel[Event](100)
    with trio.fail_after(15), Inotify() as inotify:
        watcher = GitWatcher(inotify)
        service = GitwatchService(watcher, lambda kind, data: send.send_nowait((kind, data)))
        async with trio.open_nursery() as nursery:
            await nursery.start(watcher.run, service.apply_batch)
            await service.track_repo("f1", str(folder), "folder")
            kind, data = receive.receive_nowait()
            assert (kind, data["git"]["path"], data["git"]["head"]) == (
                "worktree.added", str(folder), "",
            )  # fmt: skip
            assert watcher.watch_count == 1  # the folder itself, not its files
            shutil.rmtree(folder)
            watched = Watched(service, receive)
            _, gone = await watched.next_matching(lambda e: e[0] == "repo.unavailable")
            assert gone["repoId"] == "f1"
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
        service = GitwatchService(watcher, lambda kind, data: send.send_nowait((kind, data)))
        async with trio.open_nursery() as nursery:
            await nursery.start(watcher.run, service.apply_batch)
            await service.track_repo("s1", str(repo))
            watched = Watched(service, receive)
            await watched.next_matching(_is("worktree.added", repo))
            (repo / "a.txt").write_text("edited")
            await watched.next_matching(
                lambda e: (
                    _is("worktree.changed", repo)(e)
                    and (e[1]["gitStatus"] or {}).get("unstaged") == 1
                )
            )
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
        service = GitwatchService(watcher, lambda kind, data: send.send_nowait((kind, data)))
        async with trio.open_nursery() as nursery:
            await nursery.start(watcher.run, service.apply_batch)
            await service.track_repo("r1", str(repo))
            assert watcher.degraded == {("r1", str(repo))}
            watched = Watched(service, receive)
            (repo / "README").write_text("edited\n")  # no watch sees this
            await trio.sleep(0.6)
            assert all(e[0] != "worktree.changed" or not e[1]["gitStatus"]["total"]
                       for e in _drain(receive))  # fmt: skip
            await trio.to_thread.run_sync(lambda: git(repo, "add", "README"))
            await watched.next_matching(
                lambda e: (
                    _is("worktree.changed", repo)(e)
                    and (e[1]["gitStatus"] or {}).get("staged") == 1
                )
            )
            nursery.cancel_scope.cancel()


def _drain(receive: trio.MemoryReceiveChannel[Event]) -> list[Event]:
    events = []
    while True:
        try:
            events.append(receive.receive_nowait())
        except trio.WouldBlock:
            return events
