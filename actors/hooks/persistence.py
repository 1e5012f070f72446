"""The debounced saver of ``last-status.json`` (writes via :func:`orca.fsio.write_atomic`).

The saver coalesces bursts with a 250 ms trailing debounce (seed 02 §10) and bounds
the delay under a continuous stream with ``SAVE_MAX_WAIT_S``; it skips a save whose
bytes equal the last ones written; ``flush_now`` is the synchronous flush (quit time,
pane retirement).

Invariant: the file only moves forward. Every render gets a generation number; the
write step (under a lock, since the background write runs in a worker thread while a
synchronous flush may run on the loop) skips any generation older than the one on disk.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import trio

from orca.fsio import write_atomic

# Seed 02 §10: 250 ms trailing debounce for agent-status saves.
SAVE_DEBOUNCE_S = 0.25
# A hook stream at 1,000 events/s never goes quiet for 250 ms; bound crash staleness.
SAVE_MAX_WAIT_S = 2.0


class DebouncedSaver:
    """Saves ``render()``'s bytes to ``path`` after bursts settle.

    ``render`` is called at save time, so the newest store content is written.
    Run :meth:`run` in a nursery; call :meth:`schedule` after each persistable change.
    """

    def __init__(
        self,
        path: Path,
        render: Callable[[], bytes],
        *,
        debounce_s: float = SAVE_DEBOUNCE_S,
        max_wait_s: float = SAVE_MAX_WAIT_S,
    ) -> None:
        self._path = path
        self._render = render
        self._debounce_s = debounce_s
        self._max_wait_s = max_wait_s
        self._pending = False
        self._last_change = 0.0
        self._wakeup = trio.Event()
        self._last_written: bytes | None = None
        self._written = trio.Event()
        self._generation = 0
        self._disk_generation = 0
        self._disk_lock = threading.Lock()
        self.writes = 0

    def prime(self, data: bytes) -> None:
        """Tell the saver what is already on disk (after hydration), so it is not rewritten."""
        self._last_written = data

    def schedule(self) -> None:
        self._last_change = trio.current_time()
        if not self._pending:
            self._pending = True
            self._wakeup.set()

    def _render_next(self) -> tuple[int, bytes] | None:
        """Render on the loop thread (the store is not thread-safe); None if unchanged."""
        self._pending = False
        data = self._render()
        if data == self._last_written:
            return None
        self._last_written = data
        self._generation += 1
        return self._generation, data

    def _write(self, generation: int, data: bytes) -> bool:
        with self._disk_lock:
            if generation <= self._disk_generation:
                return False
            write_atomic(self._path, data, private_parent=True)
            self._disk_generation = generation
            self.writes += 1
            return True

    def flush_now(self) -> bool:
        """Write immediately if the content changed; returns whether a write happened."""
        rendered = self._render_next()
        return rendered is not None and self._write(*rendered)

    async def wait_for_write(self) -> None:
        """Return after the next completed background write (tests, benchmarks)."""
        await self._written.wait()

    async def run(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup = trio.Event()
            first_change = trio.current_time()
            # Invariant: leave this loop once the stream has been quiet for the debounce
            # or once the first unsaved change is max_wait old.
            while True:
                deadline = min(
                    self._last_change + self._debounce_s, first_change + self._max_wait_s
                )
                if trio.current_time() >= deadline:
                    break
                await trio.sleep_until(deadline)
            if self._pending:
                await self._flush_in_thread()

    async def _flush_in_thread(self) -> None:
        # fsync off the loop: a slow disk must not stall hook ingest.
        rendered = self._render_next()
        if rendered is None:
            return
        await trio.to_thread.run_sync(self._write, *rendered)
        self._written.set()
        self._written = trio.Event()
