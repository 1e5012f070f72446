"""Durable, bounded terminal history: a raw journal of what the PTY produced.

Essay: why the journal holds *raw* bytes and is written by ``splice``.

``ptyd`` must survive ``kill -9`` without losing a byte (issue 6). A plain ``read()``
from the PTY master moves bytes out of the kernel into our memory; a SIGKILL that
lands after that syscall and before the bytes are on disk loses them, and because a
busy reader spends most of its time in syscalls that window is hit often. So output
never passes through our memory on its way to durability:

1. ``splice(master → pipe)``: the kernel moves output into a per-session pipe whose
   ends the fd keeper also holds (a killed ``ptyd`` leaves it there);
2. ``splice(pipe → journal file)``: moved into the current segment file, in one syscall
   (either the bytes are in the file or still in the pipe);
3. ``pread`` of what was just written (page cache) feeds the OSC scanner, the
   scrollback and the subscribers.

A restarted ``ptyd`` rebuilds the scrollback by replaying the journal through a fresh
OSC scanner (the scanner is chunk-invariant, so the stripped stream and its offsets
come out identical), then drains the pipe and continues. Bytes journaled but not yet
published when the old ``ptyd`` died are therefore published by the new one.

Layout under ``paths.terminal_history_dir``, named by a hash of the session's key
(session ids embed paths, not file names)::

    <h>.meta.json  {"key", "segments": [{"file": 0|1, "raw": R, "stripped": S}, ...]}
    <h>.0, <h>.1   raw output; a segment's first byte has raw offset R, and the
                   OSC-stripped stream is at offset S there
    <h>.model      the terminal-model checkpoint (``save_checkpoint``)
    <h>.cold       a cold session's compacted scrollback (``SpillFile``; gone once
                   the session prints again)
    <h>.info.json  the session's description (``SessionInfo``, exit code once known,
                   ``endedAt``): what lets a later ptyd list and show the session
                   after its process and every Orca process are gone
                   (``actors.ptyd.archive``; issue 13)

Segments rotate (the older file is truncated and reused) once the current one passes
half of ``max_bytes``, so disk use stays below ``max_bytes`` plus two chunks. A rotation
happens only where the OSC scanner is at a boundary (not inside a sequence), so a
replay can start at any segment with a fresh scanner.

A full or failing disk (ENOSPC, EDQUOT, EIO..., issue 16 item 5) never stops the
session: the journal *degrades*. The first refused write marks it degraded; output is
then read from the pipe into memory (``os.read`` instead of ``splice``) and still feeds
the scanner, the scrollback, the model and every client, but is not journaled (counted
in ``health.dropped_bytes``; such bytes are not crash-safe, and a restart while degraded
rebuilds only the journaled prefix). At most every ``RETRY_INTERVAL_S`` the next batch
tries to resume: once the file system has ``RESUME_FREE_BYTES`` free, both segment
files are truncated and a fresh layout starting at the current raw/stripped offsets is
published; a refused write keeps it degraded.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from orca.fsio import PRIVATE_FILE_MODE, ensure_private_dir, remove_orphan_temps, write_atomic

log = logging.getLogger(__name__)

# 4 MiB per session on disk: enough to refill a 1 MiB scrollback after a restart with
# room to spare; 50 sessions cost 200 MB at most.
DEFAULT_HISTORY_BYTES = 4 * 1024 * 1024


# The errors of a disk that is full or failing: the journal degrades on them (any other
# OSError is a bug and propagates).
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG, errno.EROFS})
# How often a degraded journal tries the disk again (on its next batch of output).
RETRY_INTERVAL_S = 1.0
# A degraded journal resumes only when the file system has this much free space (its
# own segments not counted): resuming frees them, and a journal that ate its own
# crash-safe history to write a few KiB more would flap between the two states.
RESUME_FREE_BYTES = 256 * 1024


def describe_os_error(exc: OSError) -> str:
    """``"ENOSPC: No space left on device"``: the errno's name first, for readers."""
    name = errno.errorcode.get(exc.errno or 0, "OSError")
    return f"{name}: {exc.strerror or exc}"


@dataclass
class JournalHealth:
    """How journaling one session goes (``sys.stats`` ``ptyd.history`` sums these)."""

    degraded: bool = False
    dropped_bytes: int = 0  # raw output not journaled (cumulative)
    failures: int = 0  # refused writes (journal, meta, checkpoint)
    last_error: str | None = None
    resumed: int = 0  # degraded periods that ended


# A terminal-model checkpoint: 8-byte big-endian stripped-stream offset, then the
# model's own bytes (``actors.ptyd.terminal_model``). Written whole by write_atomic.
MODEL_SUFFIX = ".model"
INFO_SUFFIX = ".info.json"
META_SUFFIX = ".meta.json"
# A cold session's compressed scrollback while it idles (``SpillFile``).
SPILL_SUFFIX = ".cold"
# Every file a session's history consists of (write_atomic's temps: remove_orphan_temps).
HISTORY_SUFFIXES = (".0", ".1", META_SUFFIX, MODEL_SUFFIX, INFO_SUFFIX, SPILL_SUFFIX)
_OFFSET_BYTES = 8


def save_checkpoint(path: Path, offset: int, data: bytes) -> None:
    """Replace the checkpoint at ``path``: the model ``data`` as of stream ``offset``.

    Not fsync'd: it is written on ptyd's loop whenever a session goes idle, and it is
    only a shortcut — a checkpoint lost or cut by a power failure is rebuilt from the
    journal (``rebuild_model`` falls back to replaying it). Still atomic, so a ptyd
    restarted after kill -9 reads a whole one."""
    write_atomic(path, offset.to_bytes(_OFFSET_BYTES, "big") + data, durable=False)


def load_checkpoint(path: Path) -> tuple[int, bytes] | None:
    """(offset, model bytes) of a checkpoint, or None if there is none (or it is cut)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    if len(raw) <= _OFFSET_BYTES:
        return None
    return int.from_bytes(raw[:_OFFSET_BYTES], "big"), raw[_OFFSET_BYTES:]


class SpillFile:
    """A cold scrollback's bytes on disk (``scrollback.SpillStore``): ``<h>.cold``, 0600
    in the private history dir. Not fsync'd: it lives one idle period, and a ptyd
    restarted after a crash rebuilds the scrollback from the journal instead."""

    def __init__(self, stem: Path) -> None:
        self.path = Path(f"{stem}{SPILL_SUFFIX}")

    def save(self, data: bytes) -> bool:
        try:
            write_atomic(self.path, data, durable=False)
        except OSError as exc:  # a full disk: the scrollback stays in memory
            log.info("scrollback of %s kept in memory (%s)", self.path.name, exc)
            return False
        return True

    def load(self) -> bytes | None:
        try:
            return self.path.read_bytes()
        except OSError:
            return None

    def discard(self) -> None:
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass


@dataclass(frozen=True)
class Segment:
    file: int
    raw: int  # raw offset of the segment's first byte
    stripped: int  # stripped-stream offset at that point


@dataclass(frozen=True)
class Replay:
    """What a journal holds: raw bytes starting at raw/stripped offsets ``segment``."""

    start: Segment
    raw: bytes


def history_stem(directory: Path, key: str) -> Path:
    """Base path of a session's journal files."""
    return directory / hashlib.sha256(key.encode()).hexdigest()[:32]


class RawJournal:
    """Append-only bounded raw output of one session; reopenable after a restart."""

    def __init__(
        self, directory: Path, key: str, max_bytes: int = DEFAULT_HISTORY_BYTES, *, resume: bool
    ) -> None:
        """Start a fresh journal, or with ``resume`` continue the one on disk (if any).

        A disk that refuses the start leaves the journal degraded (never raises for it).
        """
        self.key = key
        self.health = JournalHealth()
        self._directory = directory
        self._stem = history_stem(directory, key)
        self._segment_limit = max(1, max_bytes // 2)
        self._segments: list[Segment] = [Segment(0, 0, 0)]
        self._fd = -1
        self._size = 0
        self._unjournaled = 0  # raw bytes dropped since the current degraded period began
        self._retry_at = 0.0
        try:
            ensure_private_dir(directory)
            existing = self._load_meta() if resume else []
            if existing:
                self._segments = existing
                self._open(existing[-1].file, truncate=False)
                self._size = os.fstat(self._fd).st_size
            else:
                self._segments = []
                self._switch_to(0, Segment(0, 0, 0))
        except OSError as exc:
            if exc.errno not in DISK_ERRNOS:
                raise
            self._degrade(exc)

    @property
    def model_path(self) -> Path:
        """Where the session's terminal-model checkpoint is kept (``save_checkpoint``)."""
        return Path(f"{self._stem}{MODEL_SUFFIX}")

    @property
    def raw_end(self) -> int:
        """Raw offset just after the last byte the session produced (journaled or not)."""
        return self._segments[-1].raw + self._size + self._unjournaled

    @property
    def degraded(self) -> bool:
        return self.health.degraded

    def rotate_if_due(self, stripped_end: int, scanner_at_boundary: bool) -> None:
        """Start the other segment if this one is full and the scanner allows a cut here;
        a degraded journal tries to resume instead (at most every ``RETRY_INTERVAL_S``)."""
        if not scanner_at_boundary:
            return
        if self.health.degraded:
            if time.monotonic() >= self._retry_at:
                self._resume(stripped_end)
            return
        if self._size >= self._segment_limit:
            other = 1 - self._segments[-1].file
            try:
                self._switch_to(other, Segment(other, self.raw_end, stripped_end))
            except OSError as exc:
                if exc.errno not in DISK_ERRNOS:
                    raise
                self._degrade(exc)

    def splice_from(self, pipe_r: int, count: int) -> bytes:
        """Move up to ``count`` bytes from ``pipe_r`` into the journal; return them.
        Degraded (or refused now): read them from the pipe instead, counted as dropped.

        Raises BlockingIOError when the pipe is empty.
        """
        if not self.health.degraded:
            try:
                moved = os.splice(pipe_r, self._fd, count, offset_dst=self._size)
                data = os.pread(self._fd, moved, self._size) if moved else b""
            except BlockingIOError:
                raise
            except OSError as exc:
                if exc.errno not in DISK_ERRNOS:
                    raise
                self._degrade(exc)
            else:
                self._size += moved
                return data
        data = os.read(pipe_r, count)  # BlockingIOError when empty, as above
        self._drop(len(data))
        return data

    def splice_target(self) -> tuple[int, int] | None:
        """(fd, offset) the relay's native step splices output to; None while degraded
        (``splice_from`` then reads the pipe instead). Count what it moved: ``spliced``."""
        return None if self.health.degraded else (self._fd, self._size)

    def spliced(self, count: int) -> None:
        self._size += count

    def read_back(self, count: int) -> bytes:
        """``count`` bytes spliced at the end and not yet counted: read, then counted."""
        data = os.pread(self._fd, count, self._size)
        if len(data) != count:
            raise OSError(errno.EIO, f"journal {self._stem.name}: {count} bytes not read back")
        self._size += count
        return data

    def append(self, data: bytes) -> None:
        """Write ``data`` (the plain path, for sessions read without a pipe)."""
        view = memoryview(data)
        while view and not self.health.degraded:
            try:
                written = os.pwrite(self._fd, view, self._size)
            except OSError as exc:
                if exc.errno not in DISK_ERRNOS:
                    raise
                self._degrade(exc)
                break
            self._size += written
            view = view[written:]
        self._drop(len(view))

    def checkpoint(self, stripped_offset: int, data: bytes) -> None:
        """Save the model checkpoint (skipped while degraded: it would describe a stream
        the journal does not hold); a refused write is counted, never raised."""
        if self.health.degraded:
            return
        try:
            save_checkpoint(self.model_path, stripped_offset, data)
        except OSError as exc:  # any refusal: a checkpoint is an optimisation
            self.health.failures += 1
            self.health.last_error = describe_os_error(exc)
            log.warning("journal %s: model checkpoint not saved (%s)", self._stem.name, exc)

    # -- the degraded state ------------------------------------------------------------
    def _degrade(self, exc: OSError) -> None:
        health = self.health
        health.failures += 1
        health.last_error = describe_os_error(exc)
        self._retry_at = time.monotonic() + RETRY_INTERVAL_S
        if not health.degraded:
            health.degraded = True
            log.warning(
                "terminal history %s not written (%s): output is kept in memory only;"
                " retrying every %.0f s",
                self._stem.name,
                health.last_error,
                RETRY_INTERVAL_S,
            )

    def _drop(self, count: int) -> None:
        self._unjournaled += count
        self.health.dropped_bytes += count

    def _resume(self, stripped_end: int) -> None:
        """Start over on disk at the current offsets (the journal has a hole here)."""
        start = Segment(0, self.raw_end, stripped_end)
        try:
            existing = next(d for d in (self._directory, *self._directory.parents) if d.is_dir())
            fs = os.statvfs(existing)
            if fs.f_bavail * fs.f_frsize < RESUME_FREE_BYTES:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            ensure_private_dir(self._directory)
            for file in (1, 0):  # frees the space the old segments held
                self._open(file, truncate=True)
            self._segments = []
            self._size = 0
            self._unjournaled = 0
            self._segments = [start]
            self._write_meta()
        except OSError as exc:
            if exc.errno not in DISK_ERRNOS:
                raise
            self._segments = self._segments or [start]
            self._degrade(exc)
            return
        self.health.degraded = False
        self.health.resumed += 1
        log.warning(
            "terminal history %s written again (%d bytes were not journaled)",
            self._stem.name,
            self.health.dropped_bytes,
        )

    def replay(self) -> Replay:
        """Everything kept, for rebuilding the scrollback after a restart."""
        return replay_segments(self._stem, self._segments)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def spill_file(self) -> SpillFile:
        """Where this session's scrollback waits while the session is cold."""
        return SpillFile(self._stem)

    def remove(self) -> None:
        """Delete the journal (the session was closed for good)."""
        self.close()
        remove_history(self._stem)

    def _open(self, file: int, truncate: bool) -> None:
        self.close()
        # No O_APPEND: splice refuses append-mode targets; we track the position.
        flags = os.O_RDWR | os.O_CREAT | (os.O_TRUNC if truncate else 0)
        self._fd = os.open(f"{self._stem}.{file}", flags, PRIVATE_FILE_MODE)
        os.fchmod(self._fd, PRIVATE_FILE_MODE)  # O_CREAT's mode is masked by the umask

    def _switch_to(self, file: int, segment: Segment) -> None:
        # Truncate first, then publish the new layout: a crash in between leaves a
        # short older segment, which replay() detects and skips.
        self._open(file, truncate=True)
        self._size = 0
        kept = [s for s in self._segments[-1:] if s.file != file]
        self._segments = [*kept, segment]
        # A layout that keeps an older segment is fsync'd: a power cut must not lose
        # what that segment holds. A fresh journal's first layout (a new terminal) is
        # not: lost, it reads as no journal, which is what it holds; an fsync per new
        # terminal, on ptyd's loop, was what `orca run new` of 100 variants waited on.
        self._write_meta(durable=bool(kept) or segment.raw > 0)

    def _write_meta(self, durable: bool = True) -> None:
        meta = {
            "key": self.key,
            "segments": [
                {"file": s.file, "raw": s.raw, "stripped": s.stripped} for s in self._segments
            ],
        }
        write_atomic(Path(f"{self._stem}.meta.json"), json.dumps(meta).encode(), durable=durable)

    def _load_meta(self) -> list[Segment]:
        return load_segments(self._stem, self.key)


def load_segments(stem: Path, key: str) -> list[Segment]:
    """The segment layout of the journal at ``stem`` if it is ``key``'s, else []."""
    try:
        meta = json.loads(Path(f"{stem}{META_SUFFIX}").read_text())
        if not isinstance(meta, dict) or meta.get("key") != key:
            return []  # damaged ([] or null) or another session's: start afresh
        return [
            Segment(int(s["file"]), int(s["raw"]), int(s["stripped"])) for s in meta["segments"]
        ]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def replay_segments(stem: Path, segments: list[Segment]) -> Replay:
    """What the journal at ``stem`` holds (read only; a missing file reads as empty)."""
    parts: list[bytes] = []
    for seg in segments:
        try:
            parts.append(Path(f"{stem}.{seg.file}").read_bytes())
        except FileNotFoundError:
            parts.append(b"")
    if len(parts) == 2 and segments[0].raw + len(parts[0]) != segments[1].raw:
        # The older segment was cut short (a crash during rotation): skip it.
        return Replay(segments[1], parts[1])
    return Replay(segments[0], b"".join(parts))


def read_journal(directory: Path, key: str) -> Replay | None:
    """The journal of ``key`` without opening it for writing (an ended session's)."""
    stem = history_stem(directory, key)
    segments = load_segments(stem, key)
    return replay_segments(stem, segments) if segments else None


def history_bytes_on_disk(stem: Path) -> int:
    """Bytes the history files at ``stem`` take (the budget's measure)."""
    total = 0
    for suffix in HISTORY_SUFFIXES:
        try:
            total += os.stat(f"{stem}{suffix}").st_blocks * 512
        except FileNotFoundError:
            pass
    return total


def remove_history(stem: Path) -> None:
    """Delete every file of the history at ``stem``."""
    for suffix in HISTORY_SUFFIXES:
        Path(f"{stem}{suffix}").unlink(missing_ok=True)


def save_info(stem: Path, record: dict[str, object], *, durable: bool = True) -> None:
    """Replace the session description beside the journal (``<h>.info.json``; written
    on spawn, resize, re-key and exit - never on the output path). After a reboot it is
    all that says what the session was and how it ended; ``durable`` fsyncs (ptyd does
    not: ``SessionTable.record`` says why)."""
    write_atomic(Path(f"{stem}{INFO_SUFFIX}"), json.dumps(record).encode(), durable=durable)


def load_info(stem: Path) -> dict[str, object] | None:
    """The saved description, or None when missing or damaged."""
    try:
        record = json.loads(Path(f"{stem}{INFO_SUFFIX}").read_bytes())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def remove_orphans(directory: Path, keep_keys: set[str]) -> int:
    """Delete journals whose session is gone (ptyd restarted without them); returns count.

    A journal is addressed only through its live session, so once the session is
    lost (a restart without an fd keeper hangs every terminal up) it is unreachable.
    """
    removed = 0
    for meta_path in directory.glob("*.meta.json"):
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            meta = None
        # Any JSON at all may be on disk ([] or null from a damaged file): not a dict → no key.
        key = meta.get("key") if isinstance(meta, dict) else None
        if key in keep_keys:
            continue
        remove_history(Path(str(meta_path)[: -len(META_SUFFIX)]))
        remove_orphan_temps(directory, meta_path.name)
        removed += 1
    return removed
