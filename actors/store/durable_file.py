"""Crash-safe storage of one file: bytes in, bytes out.

This module knows nothing about PersistedState; the store hands it encoded bytes and a
``parse`` function. What it guarantees:

Invariant: the primary path only ever holds a complete file we wrote. A save writes a
temp file in the same directory, fsyncs it, renames it over the primary (atomic on
POSIX) and fsyncs the directory so the rename itself survives a power cut. A crash at
any moment leaves the old primary or the new one, plus at most an orphan temp file that
the next start sweeps.

Invariant: a save tagged with generation ``g`` never replaces a file committed with a
generation ``>= g``. Saves run in worker threads; a debounced save that serialized old
content must not land after a newer flush. Generations are per-process (the store's
revision counter); across processes the single-writer lock in ``writer_lock`` applies.

A save whose content hash equals the last committed content is skipped: idle means no
disk writes. The backup ring (``.bak.0`` newest .. ``.bak.4`` oldest) is rotated only
after a successful primary write, and at most once per ``backup_interval_s`` so a burst
of debounced saves cannot replace every backup with near-identical copies, except for
a save that carries a structural change (``backup="force"``: a repo, project, group,
folder or worktree added, removed or re-keyed): the newest backup then always holds
every repo, so recovering from a damaged primary cannot fall back to a state that
predates them (issue 16 #9: it used to load the empty first-start backup).

A failed save (ENOSPC, EIO, ...) removes its temp file, leaves the primary untouched and
is returned as ``SaveFailed``; the caller reports it and retries later.
"""

from __future__ import annotations

import errno
import hashlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, TypeVar

from actors.store.durable_load import LoadReport, load_with_backups
from orca.fsio import PRIVATE_FILE_MODE, fsync_dir, write_all

T = TypeVar("T")
BackupPolicy = Literal["due", "force", "never"]

BACKUP_COUNT = 5  # five hourly copies: enough to step back past a bad session, bounded disk
BACKUP_INTERVAL_S = 3600.0  # a backup per hour at most; the debounce would otherwise churn them
TEMP_MARKER = ".tmp-"  # orca-data.json.tmp-<pid>-<n>; swept at start


class FileWriter(Protocol):
    """The one file-write primitive; tests swap it to inject OS errors."""

    def write_new_file(self, path: Path, data: bytes) -> None:
        """Create ``path`` (must not exist), write all of ``data``, fsync. Raise OSError."""


class OsFileWriter:
    """Writes with ``os.open(O_EXCL)``, an explicit 0600, ``fsio.write_all`` + ``os.fsync``
    (steps 1-2 of ``orca.fsio``'s atomic write; the rename and the backup ring are here)."""

    def write_new_file(self, path: Path, data: bytes) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, PRIVATE_FILE_MODE)
        try:
            os.fchmod(fd, PRIVATE_FILE_MODE)
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)


@dataclass(frozen=True)
class SaveWritten:
    generation: int
    size: int
    duration_s: float
    backed_up: bool


@dataclass(frozen=True)
class SaveSkippedUnchanged:
    generation: int


@dataclass(frozen=True)
class SaveSkippedStale:
    generation: int
    committed_generation: int


@dataclass(frozen=True)
class SaveError:
    """An OS error while saving; the primary on disk is the last good one."""

    errno_name: str
    message: str
    at: float  # wall-clock time.time()

    def to_dict(self) -> dict[str, object]:
        return {"errno": self.errno_name, "message": self.message, "at": self.at}


@dataclass(frozen=True)
class SaveFailed:
    generation: int
    error: SaveError


SaveOutcome = SaveWritten | SaveSkippedUnchanged | SaveSkippedStale | SaveFailed


@dataclass(frozen=True)
class DurableFileStatistics:
    writes: int
    skipped_unchanged: int
    skipped_stale: int
    failures: int
    backups_rotated: int
    committed_generation: int
    last_write_duration_s: float | None
    last_error: SaveError | None
    last_backup_error: SaveError | None

    def to_dict(self) -> dict[str, object]:
        return {
            "writes": self.writes,
            "skippedUnchanged": self.skipped_unchanged,
            "skippedStale": self.skipped_stale,
            "failures": self.failures,
            "backupsRotated": self.backups_rotated,
            "committedGeneration": self.committed_generation,
            "lastWriteDurationS": self.last_write_duration_s,
            "lastError": None if self.last_error is None else self.last_error.to_dict(),
            "lastBackupError": (
                None if self.last_backup_error is None else self.last_backup_error.to_dict()
            ),
        }


def _save_error(exc: OSError, wall_clock: Callable[[], float]) -> SaveError:
    name = errno.errorcode.get(exc.errno or 0, "EUNKNOWN")
    return SaveError(errno_name=name, message=str(exc), at=wall_clock())


class DurableFile:
    """One crash-safe file with a backup ring. Thread-safe: saves may run in workers."""

    def __init__(
        self,
        path: Path,
        *,
        writer: FileWriter | None = None,
        backup_count: int = BACKUP_COUNT,
        backup_interval_s: float = BACKUP_INTERVAL_S,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = path
        self._writer: FileWriter = writer if writer is not None else OsFileWriter()
        self._backup_count = backup_count
        self._backup_interval_s = backup_interval_s
        self._wall_clock = wall_clock
        self._lock = threading.Lock()
        self._temp_counter = 0
        self._last_hash: bytes | None = None
        self._committed_generation = -1  # generations are >= 0; nothing committed yet
        self._last_backup_at: float | None = None
        self._last_backup_hash: bytes | None = None  # of the copy this process wrote last
        self._writes = 0
        self._skipped_unchanged = 0
        self._skipped_stale = 0
        self._failures = 0
        self._backups_rotated = 0
        self._last_write_duration_s: float | None = None
        self._last_error: SaveError | None = None
        self._last_backup_error: SaveError | None = None

    def backup_path(self, index: int) -> Path:
        return self.path.with_name(f"{self.path.name}.bak.{index}")

    def sweep_orphan_temps(self) -> int:
        """Delete temp files a crashed save left behind; returns how many."""
        prefix = self.path.name + TEMP_MARKER
        backup_prefix = self.path.name + ".bak."
        swept = 0
        for entry in self.path.parent.iterdir():
            is_temp = entry.name.startswith(prefix) or (
                entry.name.startswith(backup_prefix) and TEMP_MARKER in entry.name
            )
            if is_temp:
                entry.unlink(missing_ok=True)
                swept += 1
        return swept

    def load(self, parse: Callable[[bytes], T]) -> tuple[T | None, LoadReport]:
        """Load the primary, or the newest backup that parses; see ``load_with_backups``."""
        swept = self.sweep_orphan_temps()
        backups = [self.backup_path(i) for i in range(self._backup_count)]
        value, raw, report = load_with_backups(
            self.path, backups, parse, swept_temp_files=swept, wall_clock=self._wall_clock
        )
        with self._lock:
            # Only a primary we just read counts as committed: content recovered from a
            # backup must still be written back to the primary by the next save.
            if report.source == "primary" and raw is not None:
                self._last_hash = hashlib.sha256(raw).digest()
        return value, report

    def save(self, data: bytes, generation: int, *, backup: BackupPolicy = "due") -> SaveOutcome:
        """Commit ``data`` as the primary unless unchanged or older than what is on disk.

        ``backup``: "due" rotates the ring when its interval has passed, "force" whatever
        the interval (even when the primary already holds these bytes), "never" not at
        all (a first start's empty state is not worth a slot of the ring)."""
        with self._lock:
            if generation <= self._committed_generation:
                self._skipped_stale += 1
                return SaveSkippedStale(generation, self._committed_generation)
            digest = hashlib.sha256(data).digest()
            if digest == self._last_hash:
                self._committed_generation = generation
                self._skipped_unchanged += 1
                if backup == "force":
                    self._rotate_backups_if_due(data, force=True)
                return SaveSkippedUnchanged(generation)
            started = time.perf_counter()
            try:
                self._replace_atomically(self.path, data)
            except OSError as exc:
                self._failures += 1
                self._last_error = _save_error(exc, self._wall_clock)
                return SaveFailed(generation, self._last_error)
            self._last_hash = digest
            self._committed_generation = generation
            self._writes += 1
            self._last_error = None
            backed_up = backup != "never" and self._rotate_backups_if_due(
                data, force=backup == "force"
            )
            duration = time.perf_counter() - started
            self._last_write_duration_s = duration
            return SaveWritten(generation, len(data), duration, backed_up)

    def statistics(self) -> DurableFileStatistics:
        """Counters as of now. Deliberately lock-free: the save lock is held across fsync,
        and the event loop must not wait for a slow disk to answer ``sys.stats``; each
        field is read atomically, so the worst case is a view one save out of date."""
        return DurableFileStatistics(
            writes=self._writes,
            skipped_unchanged=self._skipped_unchanged,
            skipped_stale=self._skipped_stale,
            failures=self._failures,
            backups_rotated=self._backups_rotated,
            committed_generation=self._committed_generation,
            last_write_duration_s=self._last_write_duration_s,
            last_error=self._last_error,
            last_backup_error=self._last_backup_error,
        )

    def _temp_path_for(self, target: Path) -> Path:
        self._temp_counter += 1
        return target.with_name(f"{target.name}{TEMP_MARKER}{os.getpid()}-{self._temp_counter}")

    def _replace_atomically(self, target: Path, data: bytes) -> None:
        temp = self._temp_path_for(target)
        try:
            self._writer.write_new_file(temp, data)
            os.replace(temp, target)
        except OSError:
            temp.unlink(missing_ok=True)
            raise
        fsync_dir(target.parent)

    def _rotate_backups_if_due(self, data: bytes, *, force: bool = False) -> bool:
        now = self._wall_clock()
        if self._last_backup_at is None:
            try:
                self._last_backup_at = self.backup_path(0).stat().st_mtime
            except FileNotFoundError:
                self._last_backup_at = None
        digest = hashlib.sha256(data).digest()
        if digest == self._last_backup_hash:
            return False  # the newest backup already holds exactly these bytes
        last = self._last_backup_at
        recent = last is not None and now - last < self._backup_interval_s
        if not force and recent:
            return False
        # A forced copy (a structural change) within the interval replaces the newest
        # copy instead of pushing the ring along: a burst of changes (one `orca run new`
        # of five agents) kept five near-identical copies and lost every older one (seed
        # 02-09). The older copies stay one interval apart; the newest has the change.
        shift = not recent
        # Write the new copy first: if that fails, the existing ring stays untouched.
        temp = self._temp_path_for(self.backup_path(0))
        try:
            self._writer.write_new_file(temp, data)
            for index in range(self._backup_count - 1, 0, -1) if shift else ():
                older = self.backup_path(index - 1)
                if older.exists():
                    os.replace(older, self.backup_path(index))
            os.replace(temp, self.backup_path(0))
            fsync_dir(self.path.parent)
        except OSError as exc:
            temp.unlink(missing_ok=True)
            self._last_backup_error = _save_error(exc, self._wall_clock)
            return False
        if shift:  # (the interval counts from the rotation, not from a replacement)
            self._last_backup_at = now
        self._last_backup_hash = digest
        self._last_backup_error = None
        self._backups_rotated += 1
        return True
