"""Reading a growing JSONL file from where the last read stopped, in bounded steps.

The agents append to their transcripts while we read them. So a read takes only
complete lines (ended by ``\\n``): a last line still being written (or cut for good by
a crash) is left unconsumed, and read again once its newline arrives. One step reads
at most ``budget`` bytes (more only to finish the line it is in, up to
:data:`MAX_LINE_BYTES`), so one huge or fast-growing file never holds up the others.

A line longer than :data:`MAX_LINE_BYTES` (a pasted image, a giant tool output) is
skipped, never held in memory whole: the reader drops bytes until its newline, and if
the file ends first it says so (``mid_line``), so the next step starts by dropping the
rest of that line instead of reading its tail as a line of its own.

Pure I/O on one open descriptor (``os.pread``), no state of its own: callers keep the
offset and the ``mid_line`` flag with the transcript.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

# Claude lines carrying an image or a large tool result run to a few MB; far beyond
# that a line is not worth indexing and must not be buffered.
MAX_LINE_BYTES = 32 * 1024 * 1024
READ_CHUNK_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class LineBatch:
    lines: list[bytes]  # complete lines, without their newline
    end: int  # the offset after the last byte consumed
    skipped: int  # overlong lines dropped
    mid_line: bool  # the step ended inside an overlong line being dropped
    more: bool  # stopped at the budget: there is more to read now
    # How far the file was looked at (the size this step saw of it): a step stopped at
    # its budget has seen less than the file's size, so an unchanged file still has
    # more to read (the caller records this, not the stat's size).
    examined: int


def read_lines(
    fd: int,
    start: int,
    size: int,
    budget: int,
    *,
    mid_line: bool = False,
    max_line: int = MAX_LINE_BYTES,
) -> LineBatch:
    """Complete lines from ``start`` up to ``size`` (the size the caller saw), taking
    at most about ``budget`` bytes; ``mid_line``: ``start`` is inside an overlong line
    (longer than ``max_line``)."""
    lines: list[bytes] = []
    skipped = 0
    pos = start  # the next byte to read
    line_start = start  # where the line being assembled began
    pending = bytearray()
    dropping = mid_line
    more = False
    while pos < size:
        chunk = os.pread(fd, min(READ_CHUNK_BYTES, max(1, budget), size - pos), pos)
        if not chunk:
            break  # the file shrank under us: the caller's next stat sees it
        i = 0
        while (newline := chunk.find(b"\n", i)) >= 0:
            if dropping:
                dropping = False  # the overlong line ends here
            else:
                pending += chunk[i:newline]
                if pending.strip():
                    lines.append(bytes(pending))
            pending.clear()
            i = newline + 1
            line_start = pos + i
        if not dropping:
            pending += chunk[i:]
            if len(pending) > max_line:
                pending.clear()
                dropping = True
                skipped += 1
        pos += len(chunk)
        if pos - start >= budget and (dropping or line_start > start):
            more = pos < size
            break  # over budget: a partial line is read again next step
    if dropping:
        return LineBatch(lines, pos, skipped, True, more, pos)  # all of it is the long line
    return LineBatch(lines, line_start, skipped, False, more, pos)
