"""Giving freed memory back to the operating system, in every actor process.

CPython allocates large buffers (a peer's frame, a list of a million items, a PTY's
scrollback) with ``malloc``. glibc serves a request above its mmap threshold with its
own mapping, unmapped at ``free``, but it *raises* that threshold to the size of every
mapped block freed (up to 32 MiB): after one 15 MiB frame, every later block below it
comes from the heap, which keeps freed memory for reuse instead of returning it. A
peer of the same uid sending large frames thus left +95 to 170 MiB in every actor
(issue 33).

- :func:`keep_large_blocks_mapped`, once at an actor's start (``run_actor``): a fixed
  threshold of 1 MiB (``mallopt(M_MMAP_THRESHOLD)``, which also ends the dynamic
  adjustment), so every block from 1 MiB up is its own mapping, given back the moment
  it is freed. Blocks below it (PTY reads are 64 KiB) keep the heap's speed.
- :func:`release_free_memory`: ``malloc_trim(0)``, for memory freed in many small
  blocks (ptyd's compacted scrollbacks). A trim walks the heap: measured at most ~7 ms
  with a 150 MB heap, so callers run it after a compaction, never per message.
- :class:`QuietTrim`: the same, for an actor whose work allocates in many small blocks
  off its own heap (gitwatch: a libgit2 status of a worktree of this repository is
  thousands of ``malloc``s, in trio's worker threads, each of which gets a glibc arena
  of its own). Freed, that memory stays with the process: 50 worktrees' statuses read
  four times over took a process from 19 to 43 MiB of private memory, and a trim
  brought it back to 19 (issue 36). The actor calls ``worked()`` after each piece of
  work; the trim runs once the work has paused for ``quiet_s``, or ``max_wait_s``
  after the first untrimmed work while it goes on. Between bursts it waits on an
  event: an idle actor has no timer for it.

On a libc without them (musl) both are no-ops that say so.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
from collections.abc import Callable
from typing import Any

import trio

# glibc's mallopt parameter number for M_MMAP_THRESHOLD (malloc.h).
_M_MMAP_THRESHOLD = -3
# From this size up a block is mapped on its own and unmapped at free.
MMAP_THRESHOLD_BYTES = 1024 * 1024


def _libc_function(name: str, argtypes: list[Any]) -> Any | None:
    lib = ctypes.util.find_library("c")
    if lib is None:
        return None
    try:
        fn = getattr(ctypes.CDLL(lib), name)
    except (OSError, AttributeError):
        return None
    fn.argtypes = argtypes
    fn.restype = ctypes.c_int
    return fn


_malloc_trim = _libc_function("malloc_trim", [ctypes.c_size_t])
_mallopt = _libc_function("mallopt", [ctypes.c_int, ctypes.c_int])


def keep_large_blocks_mapped(threshold: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Every block from ``threshold`` up is mapped on its own (module docstring);
    False where libc cannot."""
    if _mallopt is None:
        return False
    return bool(_mallopt(_M_MMAP_THRESHOLD, threshold) == 1)


def release_free_memory() -> bool:
    """Return freed heap memory to the OS; False where libc cannot."""
    if _malloc_trim is None:
        return False
    _malloc_trim(0)
    return True


# QuietTrim's defaults: a pause of QUIET_S ends a burst; work that never pauses is
# trimmed every MAX_WAIT_S (a trim is milliseconds: at most one a minute is nothing).
QUIET_S = 5.0
MAX_WAIT_S = 60.0


class QuietTrim:
    """``release_free_memory`` once a burst of work has ended (module docstring).

    ``worked()`` from the actor's trio thread after each piece of work; ``run()`` is a
    task of the actor's for its whole life.
    """

    def __init__(
        self,
        quiet_s: float = QUIET_S,
        max_wait_s: float = MAX_WAIT_S,
        release: Callable[[], bool] = release_free_memory,
    ) -> None:
        self.quiet_s = quiet_s
        self.max_wait_s = max_wait_s
        self._release = release
        self._worked = trio.Event()  # set by work not trimmed after yet
        self._last = -math.inf  # trio.current_time() of the latest such work
        self._latest = math.inf  # the trim's time however the work goes on
        self._wait: trio.CancelScope | None = None  # run()'s wait for the trim's time
        self.trims = 0

    def worked(self) -> None:
        self._last = trio.current_time()
        if self._wait is not None:  # the wait moves on: quiet_s from now, within max_wait_s
            self._wait.deadline = self._due()
        self._worked.set()

    def _due(self) -> float:
        return min(self._last + self.quiet_s, self._latest)

    async def run(self) -> None:
        while True:
            await self._worked.wait()
            self._latest = trio.current_time() + self.max_wait_s
            with trio.CancelScope(deadline=self._due()) as self._wait:
                await trio.sleep_forever()
            self._wait = None
            # Work from here on is after this trim: it sets a new event.
            self._worked = trio.Event()
            self._release()
            self.trims += 1
