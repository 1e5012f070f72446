"""What one scan step does with one transcript file: nothing, read on, or start over. Pure.

A transcript is known by where its bytes come from (device and inode), how much of it
the last step saw (``size``: the file's size then, or less when the step stopped at its
byte budget, so that an unchanged file with more to read is not taken for done), its
mtime, how far it was read (``offset``: after the last complete line taken) and a
digest of its first bytes (``head``). The file's current stat against that record decides (seed 02 §11:
"有文件 version/mtime/size identity"):

=========================================  ===========
the file now                               the step
=========================================  ===========
never seen                                 read from 0
another inode (replaced, re-created)       start over
shorter than what was read (truncated)     start over
its first bytes changed (rewritten)        start over
same size and mtime as last seen           nothing
grown past what was read                   read on from ``offset``
=========================================  ===========

A whole-document transcript (Gemini's legacy ``.json``, rewritten whole on every
change) has no "read on": any change of size or mtime starts it over.

"Start over" drops the transcript's rows first (the index's generation changes:
paging cursors of earlier searches are refused, ``queries``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

# Enough of the start to tell one conversation's file from another's (the first line
# carries the session id and a timestamp).
HEAD_BYTES = 4096

Step = Literal["skip", "read", "restart"]


@dataclass(frozen=True, slots=True)
class FileIdentity:
    dev: int
    ino: int
    size: int
    mtime_ns: int


@dataclass(frozen=True, slots=True)
class ReadMark:
    """How far a transcript was read, as the index recorded it."""

    identity: FileIdentity
    offset: int
    head_len: int
    head_hash: str


def head_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def plan_step(now: FileIdentity, mark: ReadMark | None, *, whole: bool) -> Step:
    """The step for a file whose head is yet to be checked (see :func:`head_still_same`)."""
    if mark is None:
        return "read"
    seen = mark.identity
    if (now.dev, now.ino) != (seen.dev, seen.ino):
        return "restart"
    if now.size == seen.size and now.mtime_ns == seen.mtime_ns:
        return "skip"
    if whole:
        return "restart"
    if now.size < mark.offset:
        return "restart"
    if now.size == mark.offset:
        return "skip"  # touched, or only the unfinished last line changed size back
    return "read"


def head_still_same(mark: ReadMark, head: bytes) -> bool:
    """``head``: the file's first ``mark.head_len`` bytes now."""
    return len(head) == mark.head_len and head_digest(head) == mark.head_hash
