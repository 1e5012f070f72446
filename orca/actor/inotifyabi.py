"""The kernel's inotify ABI: flag values, the event record and its byte layout (pure).

Separate from the ctypes binding (``inotify``) so the pure decision code
(``watchplan``) reads flags and events without loading libc or trio.

Kernel facts relied on:
* one ``read`` returns only whole events, each a ``struct inotify_event`` followed by
  its NUL-padded name;
* ``IN_IGNORED`` arrives after a watch ends (rm_watch, or its directory deleted);
* ``IN_Q_OVERFLOW`` (wd -1) means events were dropped: the caller must rescan.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_EXCL_UNLINK = 0x04000000
IN_ISDIR = 0x40000000

_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len (struct inotify_event)


@dataclass(frozen=True, slots=True)
class InotifyEvent:
    wd: int
    mask: int
    cookie: int
    name: str  # "" for events on the watched directory itself


def parse_events(buffer: bytes) -> list[InotifyEvent]:
    """Split a ``read`` of an inotify fd into events (names NUL-padded)."""
    events: list[InotifyEvent] = []
    offset = 0
    while offset + _HEADER.size <= len(buffer):
        wd, mask, cookie, length = _HEADER.unpack_from(buffer, offset)
        start = offset + _HEADER.size
        raw_name = buffer[start : start + length].split(b"\0", 1)[0]
        events.append(InotifyEvent(wd, mask, cookie, os.fsdecode(raw_name)))
        offset = start + length
    return events


def encode_event(event: InotifyEvent) -> bytes:
    """The kernel's byte layout of one event (inverse of :func:`parse_events`; for tests)."""
    name = os.fsencode(event.name)
    padded = name + b"\0" * (-(len(name) + 1) % 16 + 1) if name else b""
    return _HEADER.pack(event.wd, event.mask, event.cookie, len(padded)) + padded
