"""``last-status.json`` on disk: the debounced saver and the loader (via :mod:`orca.fsio`).

The saver coalesces bursts with a 250 ms trailing debounce (seed 02 §10) and bounds
the delay under a continuous stream with ``SAVE_MAX_WAIT_S``; it skips a save whose
bytes equal the last ones written; ``flush_now`` is the synchronous flush (quit time,
pane retirement).

Invariant: the file only moves forward. Every render gets a generation number; the
write step (under a lock, since the background write runs in a worker thread while a
synchronous flush may run on the loop) skips any generation older than the one on disk.

A refused write (ENOSPC, EIO, EACCES..., issue 16 item 5) never leaves this module: the
rows stay in memory and are served, the failure is counted in :class:`WriteHealth`
(``sys.stats`` → ``hooks.statusFile``), and the saver *degrades*: it stops writing on
every change and retries once per ``SAVE_RETRY_S`` until the disk takes the file again.
The old file stays whole meanwhile (``write_atomic`` leaves it untouched).

The loader (:func:`load_status_file`) keeps a damaged file aside under a timestamped
name before anything can overwrite it (issue 16 item 12) and reports where.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import trio

from actors.hooks.status_file import LoadedStatus, decode_status_file
from orca.fsio import PRIVATE_FILE_MODE, write_atomic
from orca.model.hosts import LOCAL_HOST_ID

log = logging.getLogger(__name__)

# Seed 02 §10: 250 ms trailing debounce for agent-status saves.
SAVE_DEBOUNCE_S = 0.25
# A hook stream at 1,000 events/s never goes quiet for 250 ms; bound crash staleness.
SAVE_MAX_WAIT_S = 2.0
# While the disk refuses writes: one attempt per period, whatever the change rate (a
# full disk is not hammered), and the file is back within this long once space returns.
SAVE_RETRY_S = 2.0
# Damaged copies kept beside the file; older ones are deleted so that a file damaged at
# every start cannot fill the disk.
MAX_DAMAGED_KEPT = 5
DAMAGED_INFIX = ".damaged-"

WriteFn = Callable[[Path, bytes], None]


def write_private(path: Path, data: bytes) -> None:
    write_atomic(path, data, private_parent=True)


def describe_os_error(exc: OSError) -> str:
    """``"ENOSPC: No space left on device"``: the errno's name first, for readers."""
    name = errno.errorcode.get(exc.errno or 0, "OSError")
    return f"{name}: {exc.strerror or exc}"


class WriteHealth:
    """How writing one file goes: counts and the current failure streak, if any.

    ``degraded`` while the last attempt failed. Updated from the writer's thread, read
    from the loop: each field is one assignment.
    """

    def __init__(self) -> None:
        self.writes = 0
        self.failures = 0
        self.last_error: str | None = None
        self.failing_since_ms: int | None = None

    @property
    def degraded(self) -> bool:
        return self.failing_since_ms is not None

    def succeeded(self) -> None:
        self.writes += 1
        self.failing_since_ms = None

    def failed(self, exc: OSError) -> bool:
        """Record ``exc``; returns whether it starts a failure streak (log it once)."""
        self.failures += 1
        self.last_error = describe_os_error(exc)
        starts = self.failing_since_ms is None
        if starts:
            self.failing_since_ms = time.time_ns() // 1_000_000
        return starts

    def to_dict(self) -> dict[str, object]:
        return {
            "degraded": self.degraded,
            "writes": self.writes,
            "failures": self.failures,
            "lastError": self.last_error,
            "failingSinceMs": self.failing_since_ms,
        }


class DebouncedSaver:
    """Saves ``render()``'s bytes to ``path`` after bursts settle.

    ``render`` is called at save time, so the newest store content is written.
    Run :meth:`run` in a nursery; call :meth:`schedule` after each persistable change.
    ``write`` is the seam tests use to inject a failing disk.
    """

    def __init__(
        self,
        path: Path,
        render: Callable[[], bytes],
        *,
        debounce_s: float = SAVE_DEBOUNCE_S,
        max_wait_s: float = SAVE_MAX_WAIT_S,
        retry_s: float = SAVE_RETRY_S,
        write: WriteFn = write_private,
    ) -> None:
        self._path = path
        self._render = render
        self._debounce_s = debounce_s
        self._max_wait_s = max_wait_s
        self._retry_s = retry_s
        self._write_file = write
        self._pending = False
        self._last_change = 0.0
        self._wakeup = trio.Event()
        self._last_written: bytes | None = None
        self._written = trio.Event()
        self._generation = 0
        self._disk_generation = 0
        self._disk_lock = threading.Lock()
        self.health = WriteHealth()

    @property
    def writes(self) -> int:
        return self.health.writes

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
        # After a failed write the disk may hold older bytes than the last rendered.
        if data == self._last_written and not self.health.degraded:
            return None
        self._last_written = data
        self._generation += 1
        return self._generation, data

    def _write(self, generation: int, data: bytes) -> bool:
        with self._disk_lock:
            if generation <= self._disk_generation:
                return False
            try:
                self._write_file(self._path, data)
            except OSError as exc:
                if self.health.failed(exc):
                    log.warning(
                        "cannot save %s (%s): agent status stays in memory; retrying every %gs",
                        self._path,
                        describe_os_error(exc),
                        self._retry_s,
                    )
                return False
            if self.health.degraded:
                log.info("saved %s again after %d failures", self._path, self.health.failures)
            self._disk_generation = generation
            self.health.succeeded()
            return True

    def flush_now(self) -> bool:
        """Write immediately if the content changed; returns whether a write happened
        (``False`` too when the disk refused it: see :attr:`health`)."""
        rendered = self._render_next()
        return rendered is not None and self._write(*rendered)

    async def wait_for_write(self) -> None:
        """Return after the next completed background write attempt (tests, benchmarks;
        :attr:`health` tells whether it reached the disk)."""
        await self._written.wait()

    async def run(self) -> None:
        while True:
            if self.health.degraded:
                # Stop writing on every change while the disk refuses: one attempt per
                # retry period; changes meanwhile are in that attempt's render.
                await trio.sleep(self._retry_s)
                self._wakeup = trio.Event()
                await self._flush_in_thread()
                continue
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


@dataclass(frozen=True)
class StatusFileLoad:
    """What :func:`load_status_file` found; ``kept_aside`` names the damaged copy."""

    status: LoadedStatus
    damage: str | None = None
    kept_aside: Path | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "rows": len(self.status.rows),
            "droppedRows": self.status.dropped,
            "damage": self.damage,
            "keptAside": str(self.kept_aside) if self.kept_aside else None,
            "error": self.error,
        }


def load_status_file(path: Path, now_ms: int, host_id: str = LOCAL_HOST_ID) -> StatusFileLoad:
    """Read and decode ``path`` for the table of ``host_id``; a damaged or unreadable
    file is moved aside (reported).

    Never raises: a missing file loads empty; a file that cannot even be moved aside
    is reported in ``error`` (the next save then replaces it).
    """
    empty = LoadedStatus([], {}, 0)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return StatusFileLoad(empty)
    except OSError as exc:
        return _keep_aside(path, empty, "unreadable", describe_os_error(exc))
    loaded = decode_status_file(data, now_ms, host_id)
    if loaded.damage is None:
        return StatusFileLoad(loaded)
    return _keep_aside(path, loaded, loaded.damage, None)


def _keep_aside(path: Path, loaded: LoadedStatus, damage: str, error: str | None) -> StatusFileLoad:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = path.with_name(f"{path.name}{DAMAGED_INFIX}{stamp}-{os.getpid()}")
    try:
        # A rename needs no free space, so this works on a full disk too.
        os.replace(path, aside)
    except OSError as exc:
        log.error("damaged %s (%s) cannot be kept aside: %s", path, damage, exc)
        return StatusFileLoad(loaded, damage, None, error or describe_os_error(exc))
    with contextlib.suppress(OSError):
        os.chmod(aside, PRIVATE_FILE_MODE)  # whatever mode the damaged file had
    log.error("damaged %s (%s): kept aside as %s", path, damage, aside.name)
    _prune_damaged(path)
    return StatusFileLoad(loaded, damage, aside, error)


def _prune_damaged(path: Path) -> None:
    kept = sorted(path.parent.glob(f"{path.name}{DAMAGED_INFIX}*"), key=lambda p: p.name)
    for old in kept[:-MAX_DAMAGED_KEPT]:
        with contextlib.suppress(OSError):
            old.unlink()
