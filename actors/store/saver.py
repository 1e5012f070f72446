"""The trio shell around ``SaveScheduler`` + ``DurableFile``.

One task (``run``) sleeps until the scheduler's deadline, then takes a snapshot of the
current state and hands it to a worker thread that encodes and writes it (encoding a
large state takes tens of milliseconds and fsync longer: neither may block the event
loop). ``flush`` saves at once; ``close`` fences the scheduler first so nothing is
written after it.

With a journal (``actors.store.journal``) each save is a compaction: once the primary
holds revision ``g`` (written, or already on disk with the same bytes) the journal is
rotated to keep only the puts after ``g``. A save that fails leaves the journal as it
is, so acknowledged changes stay on disk there. ``request_backup`` makes the next save
rotate the backup ring regardless of its interval (a structural change); so does the
stop flush.

Invariant: saves are serialized by ``_save_lock`` and each one snapshots the state
*inside* the lock, so a save that starts later always carries newer content; the
generation check in ``DurableFile`` backs this up should a save ever race another.
A snapshot is an encoder bound to one immutable state (frozen records, maps never
mutated after commit), so encoding it later in a thread yields that revision's bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import trio

from actors.store.durable_file import (
    BackupPolicy,
    DurableFile,
    SaveFailed,
    SaveOutcome,
    SaveSkippedStale,
)
from actors.store.journal import Journal
from actors.store.save_scheduler import SaveScheduler

# An encoder of the current (immutable) state and its revision, the save generation.
Snapshot = Callable[[], tuple[Callable[[], bytes], int]]


class Saver:
    def __init__(
        self,
        durable: DurableFile,
        snapshot: Snapshot,
        *,
        scheduler: SaveScheduler | None = None,
        on_outcome: Callable[[SaveOutcome], None] | None = None,
        journal: Journal | None = None,
    ) -> None:
        self._journal = journal
        self._backup_requested = False
        self._durable = durable
        self._snapshot = snapshot
        self._scheduler = scheduler if scheduler is not None else SaveScheduler()
        self._on_outcome = on_outcome
        self._save_lock = trio.Lock()
        self._wakeup = trio.Event()
        self.last_outcome: SaveOutcome | None = None

    @property
    def scheduler(self) -> SaveScheduler:
        return self._scheduler

    def mark_dirty(self) -> None:
        """A mutation happened: schedule a debounced save."""
        self._scheduler.mark_dirty(trio.current_time())
        self._wakeup.set()

    def request_backup(self) -> None:
        """The next save also writes the backup ring (a structural change happened)."""
        self._backup_requested = True

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Save whenever the scheduler says a debounced save is due; never returns."""
        task_status.started()
        while True:
            # No checkpoint between replacing the event and reading the deadline, so a
            # mark_dirty cannot slip between them unnoticed.
            self._wakeup = trio.Event()
            deadline = self._scheduler.deadline()
            if deadline is None:
                await self._wakeup.wait()
                continue
            with trio.move_on_at(deadline):
                await self._wakeup.wait()
            async with self._save_lock:
                if self._scheduler.begin_save(trio.current_time()):
                    await self._save_locked()

    async def flush(self) -> SaveOutcome | None:
        """Save now if anything is unsaved; returns the outcome (None when clean)."""
        async with self._save_lock:
            if not self._scheduler.begin_flush():
                return None
            return await self._save_locked()

    async def close(self) -> SaveOutcome | None:
        """Fence debounced saves, then flush: the last write of this process. The flush
        also writes the backup ring: a stop is rare and its state the newest worth keeping."""
        self._scheduler.fence()
        self._backup_requested = True
        self._wakeup.set()
        return await self.flush()

    async def _save_locked(self) -> SaveOutcome:
        encode, generation = self._snapshot()
        force_backup, self._backup_requested = self._backup_requested, False

        def encode_and_save() -> tuple[SaveOutcome, str]:
            data = encode()
            policy: BackupPolicy = "force" if force_backup else "due"
            outcome = self._durable.save(data, generation, backup=policy)
            return outcome, hashlib.sha256(data).hexdigest()

        outcome, sha = await trio.to_thread.run_sync(encode_and_save)
        if isinstance(outcome, SaveFailed):
            self._backup_requested = self._backup_requested or force_backup
            self._scheduler.save_failed(trio.current_time())
            self._wakeup.set()
        else:
            self._scheduler.save_succeeded()
            if self._journal is not None and not isinstance(outcome, SaveSkippedStale):
                await self._journal.rotate(generation, sha)
        self.last_outcome = outcome
        if self._on_outcome is not None:
            self._on_outcome(outcome)
        return outcome
