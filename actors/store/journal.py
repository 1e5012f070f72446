"""The store's write-ahead journal: a mutation is on disk before its reply (issue 16 #10).

Why: the primary (``orca-data.json``) is rewritten whole, so it is saved on a trailing
debounce (1 s, at most 5 s, seed 01 §7.4). Before the journal, a store killed inside
that window lost mutations the CLI had already printed as done. Now every committed
change is appended to ``orca-data.json.journal`` as the ops of ``journal_format`` and
fsync'd before the op replies; the primary is still written at the seed's cadence (a
*compaction*), after which the journal is rotated to hold only what came later.

Group commit: ``append`` queues a frame and waits; one writer task takes every queued
frame at once, writes them with one ``write`` and one ``fdatasync`` in a worker thread,
then wakes all their waiters. While that fsync runs, new mutations queue for the next
batch, so N concurrent mutations cost about one fsync, not N.

Invariant: the writer finishes a batch's callbacks in queue order, so the events the
actor publishes from them (``on_written``) leave in commit order, and only after the
change is durable (or known not to be).

Invariant: the file on disk is always ``base`` + whole frames. A failed append (ENOSPC,
EIO) truncates the file back to its last whole frame; if even that fails the journal is
*broken* (no fd): appends fail at once until the next rotation rewrites the file. A
failed append is reported to its waiter (``JournalWriteFailed``), never silently
dropped; the change stays in memory and reaches disk with the next compaction.

Rotation (``rotate``) rewrites the file atomically (``fsio.write_atomic``): a new base
naming the primary just written (or, when the primary could not be written, a base with
no file and one put holding the whole state) plus the puts newer than that primary.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from actors.store import journal_format as jf
from orca.fsio import write_all, write_atomic

JOURNAL_SUFFIX = ".journal"


class JournalWriteFailed(Exception):
    """The change could not be made durable (the disk said no); ``errno_name`` says why."""

    def __init__(self, errno_name: str, message: str) -> None:
        super().__init__(f"{errno_name}: {message}")
        self.errno_name = errno_name
        self.message = message


@dataclass
class _Entry:
    seq: int
    frame: bytes
    on_written: Callable[[], None] | None
    done: trio.Event = field(default_factory=trio.Event)
    error: JournalWriteFailed | None = None


@dataclass(frozen=True)
class JournalStatistics:
    batches: int
    appended: int
    failures: int
    rotations: int
    size: int
    broken: bool
    largest_batch: int

    def to_dict(self) -> dict[str, object]:
        return {
            "batches": self.batches,
            "appended": self.appended,
            "failures": self.failures,
            "rotations": self.rotations,
            "size": self.size,
            "broken": self.broken,
            "largestBatch": self.largest_batch,
        }


def _failure(exc: OSError) -> JournalWriteFailed:
    return JournalWriteFailed(errno.errorcode.get(exc.errno or 0, "EUNKNOWN"), str(exc))


def journal_path(state_file: Path) -> Path:
    return state_file.with_name(state_file.name + JOURNAL_SUFFIX)


def read_journal_file(path: Path) -> jf.JournalContents:
    """The journal's whole frames (empty when there is none or it cannot be read)."""
    try:
        raw = path.read_bytes()
    except OSError:  # missing, or unreadable: nothing to replay (reported by the caller)
        raw = b""
    return jf.read_journal(raw)


class Journal:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._size = 0  # bytes of whole frames in the file
        # Put frames on disk since the last rotation (carried over by the next one).
        self._written: list[tuple[int, bytes]] = []
        self._queue: list[_Entry] = []
        self._wakeup = trio.Event()
        self._io_lock = trio.Lock()
        self._batches = 0
        self._appended = 0
        self._failures = 0
        self._rotations = 0
        self._largest_batch = 0

    # -- synchronous file work (worker threads, or start-up before serving) -----------
    def rewrite_sync(
        self, seq: int, sha: str | None, carried: list[tuple[int, bytes]], root: Any = None
    ) -> None:
        """Replace the file with base(seq, sha) [+ a put of the whole ``root``] + carried."""
        frames = [jf.base_frame(seq, sha)]
        if root is not None:
            frames.append(jf.put_frame(seq, [[[], root]]))
        frames.extend(frame for _, frame in carried)
        data = b"".join(frames)
        write_atomic(self.path, data)
        self._close_fd()  # the old fd names the replaced file: never append there again
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        self._size = len(data)
        self._written = list(carried)

    def _append_sync(self, data: bytes) -> None:
        if self._fd is None:
            raise OSError(errno.EBADF, "the journal is broken until the next compaction")
        try:
            write_all(self._fd, data)
            os.fdatasync(self._fd)
        except OSError:
            try:  # back to the last whole frame, so later appends follow valid bytes
                os.ftruncate(self._fd, self._size)
            except OSError:
                self._close_fd()  # broken: the next rotation rewrites the file
            raise
        self._size += len(data)

    def _close_fd(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def close(self) -> None:
        self._close_fd()

    # -- the trio side ------------------------------------------------------------------
    def enqueue(
        self, seq: int, ops: list[jf.JournalOp], on_written: Callable[[], None] | None = None
    ) -> _Entry:
        """Queue the change of revision ``seq`` now (queue order = commit order); await
        ``written(entry)`` for it to be on disk. Every entry queued before the writer
        wakes shares one write and one fsync (group commit).

        ``on_written`` runs in the writer, in queue order, whether the write worked or not.
        """
        entry = _Entry(seq, jf.put_frame(seq, ops), on_written)
        self._queue.append(entry)
        self._wakeup.set()
        return entry

    @staticmethod
    async def written(entry: _Entry) -> None:
        """Return once ``entry`` is on disk; ``JournalWriteFailed`` when it could not be."""
        await entry.done.wait()
        if entry.error is not None:
            raise entry.error

    async def append(
        self, seq: int, ops: list[jf.JournalOp], on_written: Callable[[], None] | None = None
    ) -> None:
        """``enqueue`` then ``written``: queue the change and return once it is on disk."""
        await self.written(self.enqueue(seq, ops, on_written))

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The group-commit writer; never returns."""
        task_status.started()
        while True:
            if not self._queue:
                self._wakeup = trio.Event()
                await self._wakeup.wait()
                continue
            batch, self._queue = self._queue, []
            data = b"".join(entry.frame for entry in batch)
            error: JournalWriteFailed | None = None
            async with self._io_lock:
                try:
                    await trio.to_thread.run_sync(self._append_sync, data)
                except OSError as exc:
                    error = _failure(exc)
            self._batches += 1
            self._largest_batch = max(self._largest_batch, len(batch))
            if error is None:
                self._appended += len(batch)
                self._written.extend((entry.seq, entry.frame) for entry in batch)
            else:
                self._failures += 1
            for entry in batch:
                entry.error = error
                if entry.on_written is not None:
                    entry.on_written()
                entry.done.set()

    async def rotate(
        self, seq: int, sha: str | None, root: Any = None
    ) -> JournalWriteFailed | None:
        """After the primary of revision ``seq`` (hash ``sha``) is on disk: keep only newer puts.

        ``sha=None`` with ``root`` (the whole state as builtins): the primary could not be
        written, so the journal stands on its own. Returns the failure, if any (the old
        file then stays as it was, and stays valid).
        """
        async with self._io_lock:
            carried = [(s, frame) for s, frame in self._written if s > seq]
            try:
                await trio.to_thread.run_sync(self.rewrite_sync, seq, sha, carried, root)
            except OSError as exc:
                return _failure(exc)
        self._rotations += 1
        return None

    def statistics(self) -> JournalStatistics:
        return JournalStatistics(
            batches=self._batches,
            appended=self._appended,
            failures=self._failures,
            rotations=self._rotations,
            size=self._size,
            broken=self._fd is None,
            largest_batch=self._largest_batch,
        )
