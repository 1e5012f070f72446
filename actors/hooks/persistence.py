"""Writing ``agent-hooks/`` files: atomic replace and the debounced status saver.

Files here hold a secret (``endpoint.env``) or the user's activity, so the directory is
0700 and every file 0600. A write is temp file (created 0600, exclusive) + fsync +
rename + directory fsync: a crash leaves either the old file or the new one, never a
torn one (seed 02 §13 "文件临时写了一半").

The saver coalesces bursts with a 250 ms trailing debounce (seed 02 §10) and bounds
the delay under a continuous stream with ``SAVE_MAX_WAIT_S``; it skips a save whose
bytes equal the last ones written; ``flush_now`` is the synchronous quit-time flush.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

import trio

# Seed 02 §10: 250 ms trailing debounce for agent-status saves.
SAVE_DEBOUNCE_S = 0.25
# A hook stream at 1,000 events/s never goes quiet for 250 ms; bound crash staleness.
SAVE_MAX_WAIT_S = 2.0
DIR_MODE = 0o700
FILE_MODE = 0o600


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` 0700, tightening it if it already exists with wider modes."""
    path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    if path.stat().st_mode & 0o777 != DIR_MODE:
        path.chmod(DIR_MODE)


def write_file_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably, mode 0600."""
    ensure_private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


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
        self.writes = 0

    def prime(self, data: bytes) -> None:
        """Tell the saver what is already on disk (after hydration), so it is not rewritten."""
        self._last_written = data

    def schedule(self) -> None:
        self._last_change = trio.current_time()
        if not self._pending:
            self._pending = True
            self._wakeup.set()

    def flush_now(self) -> bool:
        """Write immediately if the content changed; returns whether a write happened."""
        self._pending = False
        data = self._render()
        if data == self._last_written:
            return False
        write_file_atomic(self._path, data)
        self._last_written = data
        self.writes += 1
        return True

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
        # Render on the loop (the store is not thread-safe), fsync off it: a slow disk
        # must not stall hook ingest.
        self._pending = False
        data = self._render()
        if data == self._last_written:
            return
        await trio.to_thread.run_sync(write_file_atomic, self._path, data)
        self._last_written = data
        self.writes += 1
        self._written.set()
        self._written = trio.Event()
