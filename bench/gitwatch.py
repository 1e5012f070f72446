"""Benchmark gitwatch on one repository with 200 linked worktrees.

Prints:
* full listing: ``scan_worktrees`` (in process) against ``git worktree list --porcelain
  -z`` + parse, both run in this process, median of many runs, and their ratio
  (goal: ratio <= 1, a full refresh no slower than the git CLI listing);
* what the ahead/behind counts add to each rescan, memoized and with every graph walk
  run again, as a ratio to the scan itself;
* serving ``worktree.list`` rows from the cached facts (what an op costs);
* change → event latency: a file edit (dirty count), a commit (HEAD) and an external
  ``git worktree add`` (new row), each timed from the change on disk to the event;
* idle CPU of the watching process over a quiet window (goal: ~0).

Usage: ``.venv/bin/python bench/gitwatch.py [--worktrees 200] [--samples 20]``
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import msgspec
import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from actors.gitwatch.aheadbehind import AheadBehindCache, Bases, with_ahead_behind
from actors.gitwatch.gitfacts import scan_worktrees
from actors.gitwatch.porcelain import parse_worktree_list_z
from actors.gitwatch.tracker import RepoTracker
from actors.gitwatch.watcher import DEBOUNCE_S, GitWatcher
from actors.gitwatch.wirerows import build_rows
from orca.actor.inotify import Inotify
from orca.contracts import gitwatch as gw
from orca.model.types_repo import Repo

FILES_PER_WORKTREE = 30
IDLE_WINDOW_S = 5.0

Event = msgspec.Struct  # what the tracker emits: the contract's event Structs


def git(cwd: Path, *args: str) -> str:
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b",
               GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b")  # fmt: skip
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)
    return done.stdout.decode()


def make_repo(base: Path, worktrees: int) -> Path:
    repo = base / "repo"
    (repo / "src").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for i in range(FILES_PER_WORKTREE):
        (repo / "src" / f"f{i}.txt").write_text(f"{i}\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "initial")
    for i in range(worktrees):
        git(repo, "worktree", "add", "-q", str(base / "wt" / f"w{i}"), "-b", f"b{i}")
    return repo


def median_ms(fn: Callable[[], object], runs: int) -> float:
    fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def paired_median_ms(
    ours: Callable[[], object], theirs: Callable[[], object], runs: int
) -> tuple[float, float]:
    """Medians of two functions timed alternately, so a load spike hits both alike."""
    ours_ms: list[float] = []
    theirs_ms: list[float] = []
    for _ in range(runs):
        for fn, samples in ((ours, ours_ms), (theirs, theirs_ms)):
            start = time.perf_counter()
            fn()
            samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(ours_ms), statistics.median(theirs_ms)


def cli_listing(repo: Path) -> int:
    out = subprocess.run(
        ["git", "worktree", "list", "--porcelain", "-z"], cwd=repo, check=True, capture_output=True
    ).stdout
    return len(parse_worktree_list_z(out))


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)  # all threads of this process
    return usage.ru_utime + usage.ru_stime


async def bench(worktrees: int, samples: int) -> None:
    with tempfile.TemporaryDirectory(prefix="orca-bench-") as tmp:
        base = Path(tmp)
        t0 = time.perf_counter()
        repo = make_repo(base, worktrees)
        print(f"setup: {worktrees} worktrees x {FILES_PER_WORKTREE} files in "
              f"{time.perf_counter() - t0:.1f}s")  # fmt: skip

        assert len(scan_worktrees(str(repo))) == cli_listing(repo) == worktrees + 1
        ours, theirs = paired_median_ms(
            lambda: scan_worktrees(str(repo)), lambda: cli_listing(repo), 40
        )
        print(f"full listing: in-process scan {ours:.2f} ms, git CLI + parse {theirs:.2f} ms, "
              f"ratio {ours / theirs:.2f} (goal <= 1)")  # fmt: skip
        listing = scan_worktrees(str(repo))
        cold_ms = median_ms(
            lambda: with_ahead_behind(str(repo), listing, Bases(), AheadBehindCache()), 20
        )
        warm = AheadBehindCache()
        warm_ms = median_ms(lambda: with_ahead_behind(str(repo), listing, Bases(), warm), 40)
        print(f"ahead/behind of {len(listing)} rows added to a rescan: {warm_ms:.2f} ms memoized, "
              f"{cold_ms:.2f} ms with every walk (= {warm_ms / ours:.2f}x / {cold_ms / ours:.2f}x "
              f"the scan)")  # fmt: skip

        send, receive = trio.open_memory_channel[Event](100_000)
        with Inotify() as inotify:
            watcher = GitWatcher(inotify)
            tracker = RepoTracker(watcher, send.send_nowait)
            async with trio.open_nursery() as nursery:
                await nursery.start(watcher.run, tracker.apply_batch)
                start = time.perf_counter()
                await tracker.track_repo("r1", str(repo))
                print(f"start tracking (listing + {worktrees + 1} statuses + "
                      f"{watcher.watch_count} watches): {time.perf_counter() - start:.2f}s")  # fmt: skip
                facts = tracker.repos["r1"]
                record = Repo(id="r1", path=str(repo), display_name="repo")
                rows_ms = median_ms(lambda: build_rows(facts, record, {}, []), 30)
                print(f"worktree.list rows from cache: {rows_ms:.2f} ms for {len(facts.rows)} rows")
                await drain(receive)

                few = max(3, samples // 4)
                edit = await latencies(samples, receive, tracker, "edit", worktrees, repo)
                commit = await latencies(few, receive, tracker, "commit", worktrees, repo)
                add = await latencies(few, receive, tracker, "add", worktrees, repo)
                for label, values in (("file edit -> dirty count", edit),
                                      ("commit -> HEAD", commit),
                                      ("external worktree add -> row", add)):  # fmt: skip
                    print(f"latency {label}: median {statistics.median(values):.0f} ms, "
                          f"max {max(values):.0f} ms (debounce {DEBOUNCE_S * 1000:.0f} ms)")  # fmt: skip

                await drain(receive)
                cpu0, wall0 = cpu_seconds(), time.perf_counter()
                await trio.sleep(IDLE_WINDOW_S)
                cpu = cpu_seconds() - cpu0
                wall = time.perf_counter() - wall0
                print(f"idle CPU: {cpu * 1000:.1f} ms over {wall:.1f}s = {100 * cpu / wall:.3f}% "
                      f"with {watcher.watch_count} inotify watches (goal ~0)")  # fmt: skip
                nursery.cancel_scope.cancel()


async def drain(receive: trio.MemoryReceiveChannel[Event]) -> None:
    """Wait until the stream has been quiet for a few debounce windows."""
    while True:
        with trio.move_on_after(DEBOUNCE_S * 4):
            await receive.receive()
            continue
        return


async def latencies(
    count: int,
    receive: trio.MemoryReceiveChannel[Event],
    tracker: RepoTracker,
    kind: str,
    worktrees: int,
    repo: Path,
) -> list[float]:
    """Milliseconds from the start of each change on disk to the event that reports it."""
    base = repo.parent
    event_kind: type[gw.WorktreeAdded | gw.WorktreeChanged]
    values = []
    for i in range(count):
        wt = base / "wt" / f"w{(i * 7) % worktrees}"  # spread over the tree
        old = tracker.repos["r1"].rows[str(wt)]
        start = time.perf_counter()
        if kind == "edit":
            target, event_kind = wt, gw.WorktreeChanged
            (wt / "src" / "f0.txt").write_text(f"edit {i}\n")
        elif kind == "commit":
            target, event_kind = wt, gw.WorktreeChanged
            (wt / "src" / "f1.txt").write_text(f"commit {i}\n")
            await trio.to_thread.run_sync(functools.partial(git, wt, "commit", "-qam", "bench"))
        else:
            target, event_kind = base / "extra" / f"x{i}", gw.WorktreeAdded
            add = functools.partial(git, repo, "worktree", "add", "-q", str(target), "-b", f"x{i}")
            await trio.to_thread.run_sync(add)
        with trio.fail_after(10):
            while True:
                event = await receive.receive()
                facts = getattr(event, "git", None)
                if not isinstance(event, event_kind) or facts is None or facts.path != str(target):
                    continue
                if kind == "commit" and facts.head == old.head:
                    continue  # the dirty-count event of the edit, not the new HEAD yet
                break
        values.append((time.perf_counter() - start) * 1000)
        await drain(receive)
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worktrees", type=int, default=200)
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    trio.run(bench, args.worktrees, args.samples)


if __name__ == "__main__":
    main()
