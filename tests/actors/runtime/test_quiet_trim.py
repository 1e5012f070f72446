"""``QuietTrim`` (orca/actor/memory.py): freed memory goes back once work pauses.

gitwatch's libgit2 work frees thousands of small blocks in trio's worker threads, and
glibc keeps them: 50 worktrees' statuses read four times took a process from 19 to 43
MiB of private memory until a ``malloc_trim``. The trim runs once per burst (a pause of
``quiet_s``), at least every ``max_wait_s`` while work never pauses, and never in an
idle actor. The timing tests run on trio's autojump clock; the last frees memory the
way gitwatch does (many blocks, in a worker thread) and reads the process's own pages.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio
import trio.testing

from orca.actor import memory


class Releases:
    """A stand-in for ``release_free_memory`` that records when it ran."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.ran = trio.Event()

    def __call__(self) -> bool:
        self.times.append(trio.current_time())
        self.ran.set()
        return True


def timed_trim() -> tuple[memory.QuietTrim, Releases]:
    """A trim 5 s after work pauses, within 60 s of it, recording when it releases."""
    releases = Releases()
    return memory.QuietTrim(quiet_s=5.0, max_wait_s=60.0, release=releases), releases


@asynccontextmanager
async def running(trim: memory.QuietTrim, deadline_s: float) -> AsyncIterator[None]:
    """``trim.run`` in a task of its own for the body's time."""
    with trio.fail_after(deadline_s):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trim.run)
            yield
            nursery.cancel_scope.cancel()


async def test_a_burst_of_work_is_trimmed_once_when_it_pauses(
    autojump_clock: trio.testing.MockClock,
) -> None:
    trim, releases = timed_trim()
    async with running(trim, 1000):
        start = trio.current_time()
        for _ in range(4):  # work at +0, +1, +2, +3: the pause starts at +3
            trim.worked()
            await trio.sleep(1.0)
        await trio.sleep(100.0)
        assert [t - start for t in releases.times] == [8.0]
        assert trim.trims == 1
        trim.worked()  # a later burst: trimmed again, 5 s after it
        await trio.sleep(100.0)
        assert [t - start for t in releases.times] == [8.0, 109.0]


async def test_work_that_never_pauses_is_trimmed_every_max_wait(
    autojump_clock: trio.testing.MockClock,
) -> None:
    trim, releases = timed_trim()
    async with running(trim, 1000):
        start = trio.current_time()
        for _ in range(200):  # work every second for 200 s: never a 5 s pause
            trim.worked()
            await trio.sleep(1.0)
        await trio.sleep(10.0)
        offsets = [t - start for t in releases.times]
        # Within 60 s of the first work not trimmed after, three times (the work of
        # the second a trim ran in counts for it or for the next, as the two tasks
        # happen to run); then the pause after the last, at +199.
        assert len(offsets) == 4, offsets
        assert offsets[0] == 60.0
        gaps = [b - a for a, b in itertools.pairwise(offsets[:3])]
        assert all(60.0 <= gap <= 61.0 for gap in gaps), offsets
        assert offsets[3] == 204.0


async def test_an_idle_actor_never_trims(autojump_clock: trio.testing.MockClock) -> None:
    trim, releases = timed_trim()
    async with running(trim, 100_000):
        await trio.sleep(86_400.0)  # a day of nothing
        assert releases.times == []


def private_dirty_mib() -> float:
    with open("/proc/self/smaps_rollup") as rollup:
        for line in rollup:
            if line.startswith("Private_Dirty:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no Private_Dirty in /proc/self/smaps_rollup")


async def test_memory_freed_in_a_worker_thread_goes_back_after_the_pause() -> None:
    """60 MB in 1,500-byte blocks, one in a hundred kept (the others freed around it, as
    a status frees its entries around what it returns): glibc keeps the freed pages
    until the trim."""
    releases = Releases()

    def release() -> bool:
        memory.release_free_memory()
        return releases()

    kept: list[bytes] = []

    def work() -> None:
        blocks = [bytes(1500) for _ in range(40_000)]
        kept.extend(blocks[::100])

    trim = memory.QuietTrim(quiet_s=0.05, max_wait_s=10.0, release=release)
    async with running(trim, 30):
        before = private_dirty_mib()
        await trio.to_thread.run_sync(work)
        trim.worked()
        held = private_dirty_mib() - before
        assert held > 40, f"the work should hold its freed blocks first ({held:.1f} MiB)"
        await releases.ran.wait()
        after = private_dirty_mib() - before
        assert after < held - 40, f"{held:.1f} MiB held, {after:.1f} after the trim"
    assert len(kept) == 400
