"""Durable, bounded terminal history on disk: a ring of two files per session.

Layout under ``paths.terminal_history_dir``, named by a hash of the session id (ids
embed worktree paths, which are not file names)::

    <h>.meta.json   {"sessionId", "segments": [{"file": 0|1, "offset": N}, ...]}
    <h>.0, <h>.1    raw (OSC-stripped) output; a segment's first byte has offset N

Output is appended to the current segment; when the next chunk would take it past half the bound the other
file is truncated and becomes current, so the disk use stays below ``max_bytes``
(a single chunk larger than half may exceed it) and the newest ``max_bytes / 2`` bytes are always kept. The meta file is
rewritten (atomically) only on a switch, not per chunk.

Writes are plain ``os.write`` calls on the event loop: the page cache absorbs them in
microseconds, and writing before the output is published keeps the window in which a
``kill -9`` of ``ptyd`` could lose already-read bytes as short as possible.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

# 4 MiB per session on disk: a few screens more than the in-memory scrollback, so a
# restarted ptyd can refill its scrollback; 50 sessions cost 200 MB at most.
DEFAULT_HISTORY_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class _Segment:
    file: int
    offset: int


def history_stem(directory: Path, session_id: str) -> Path:
    """Base path of a session's history files."""
    return directory / hashlib.sha256(session_id.encode()).hexdigest()[:32]


class HistoryRing:
    """Append-only bounded history of one session; reopenable after a restart."""

    def __init__(
        self,
        directory: Path,
        session_id: str,
        max_bytes: int = DEFAULT_HISTORY_BYTES,
        resume: bool = False,
    ) -> None:
        """Start a fresh history, or with ``resume`` continue the one on disk (if any)."""
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.session_id = session_id
        self._stem = history_stem(directory, session_id)
        self._segment_limit = max(1, max_bytes // 2)
        self._segments: list[_Segment] = []
        self._fd = -1
        self._size = 0
        existing = self._load_meta() if resume else []
        if existing:
            self._segments = existing
            self._open(existing[-1].file, truncate=False)
            self._size = os.fstat(self._fd).st_size
        else:
            self._switch_to(0, 0)

    @property
    def end(self) -> int:
        """Offset just after the last byte written."""
        return self._segments[-1].offset + self._size

    def append(self, data: bytes) -> None:
        if self._size and self._size + len(data) > self._segment_limit:
            self._switch_to(1 - self._segments[-1].file, self.end)
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        self._size += len(data)

    def read_all(self) -> tuple[int, bytes]:
        """(offset of the first byte, the bytes) for everything kept on disk."""
        parts: list[bytes] = []
        for seg in self._segments:
            try:
                parts.append(Path(f"{self._stem}.{seg.file}").read_bytes())
            except FileNotFoundError:
                parts.append(b"")
        start = self._segments[0].offset
        # Segments are contiguous by construction; if a file was cut short by a crash
        # the later segment's offset is still right, so only keep the last segment
        # when the earlier one does not reach it.
        if len(parts) == 2 and start + len(parts[0]) != self._segments[1].offset:
            return self._segments[1].offset, parts[1]
        return start, b"".join(parts)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def remove(self) -> None:
        """Delete the session's history (after the session is closed)."""
        self.close()
        for suffix in (".0", ".1", ".meta.json"):
            Path(f"{self._stem}{suffix}").unlink(missing_ok=True)

    def _open(self, file: int, truncate: bool) -> None:
        self.close()
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | (os.O_TRUNC if truncate else 0)
        self._fd = os.open(f"{self._stem}.{file}", flags, 0o600)

    def _switch_to(self, file: int, offset: int) -> None:
        self._open(file, truncate=True)
        self._size = 0
        kept = [s for s in self._segments[-1:] if s.file != file]
        self._segments = [*kept, _Segment(file, offset)]
        self._write_meta()

    def _write_meta(self) -> None:
        meta = {
            "sessionId": self.session_id,
            "segments": [{"file": s.file, "offset": s.offset} for s in self._segments],
        }
        tmp = Path(f"{self._stem}.meta.json.tmp")
        tmp.write_text(json.dumps(meta))
        os.replace(tmp, f"{self._stem}.meta.json")

    def _load_meta(self) -> list[_Segment]:
        try:
            meta = json.loads(Path(f"{self._stem}.meta.json").read_text())
            if meta.get("sessionId") != self.session_id:
                return []
            return [_Segment(int(s["file"]), int(s["offset"])) for s in meta["segments"]]
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            return []
