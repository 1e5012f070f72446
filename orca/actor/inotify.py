"""Linux inotify through ctypes, read from trio without a thread.

Why not a library: the stdlib has no inotify binding, the job is three syscalls, and
owning the read loop lets trio park on the fd (``wait_readable``) so an idle watcher
costs no CPU at all — no polling timer anywhere.

The fd is opened non-blocking. Invariant: after ``wait_readable`` says the fd is
readable we read until ``EAGAIN``, so a burst that arrived while we were busy is never
left behind waiting for a wake-up that will not come.

The flag values, the event record and its parser are the pure ``inotifyabi``.
"""

from __future__ import annotations

import ctypes
import errno
import os

import trio

from orca.actor.inotifyabi import InotifyEvent, parse_events

_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
# Big enough for hundreds of events per read; the kernel never splits an event.
_READ_SIZE = 64 * 1024

_libc = ctypes.CDLL(None, use_errno=True)
_libc.inotify_init1.argtypes = [ctypes.c_int]
_libc.inotify_init1.restype = ctypes.c_int
_libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
_libc.inotify_add_watch.restype = ctypes.c_int
_libc.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
_libc.inotify_rm_watch.restype = ctypes.c_int


class Inotify:
    """One inotify instance. Close it (or use ``with``) to release the fd."""

    def __init__(self) -> None:
        fd = _libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"inotify_init1: {os.strerror(err)}")
        self.fd = fd

    def add_watch(self, path: str, mask: int) -> int:
        """Watch ``path``; returns the watch descriptor (the same one for the same inode).

        Raises ``OSError`` (ENOENT when the path vanished, ENOSPC when the user's watch
        limit is reached).
        """
        wd = _libc.inotify_add_watch(self.fd, os.fsencode(path), mask)
        if wd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"inotify_add_watch {path}: {os.strerror(err)}")
        return int(wd)

    def rm_watch(self, wd: int) -> None:
        """Stop a watch; a watch the kernel already dropped (EINVAL) is not an error."""
        if _libc.inotify_rm_watch(self.fd, wd) < 0:
            err = ctypes.get_errno()
            if err != errno.EINVAL:
                raise OSError(err, f"inotify_rm_watch: {os.strerror(err)}")

    def read_nowait(self) -> list[InotifyEvent]:
        """Every event queued right now (empty when none)."""
        events: list[InotifyEvent] = []
        while True:
            try:
                chunk = os.read(self.fd, _READ_SIZE)
            except BlockingIOError:
                return events
            if not chunk:
                return events
            events.extend(parse_events(chunk))

    async def read(self) -> list[InotifyEvent]:
        """Wait until at least one event is queued, then return all queued events."""
        while True:
            events = self.read_nowait()
            if events:
                return events
            await trio.lowlevel.wait_readable(self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            # Wake any task parked in wait_readable on this fd before the number is reused.
            # Outside a trio run nobody can be parked on it, and trio refuses the call.
            if trio.lowlevel.in_trio_run():
                trio.lowlevel.notify_closing(fd)
            os.close(fd)

    def __enter__(self) -> Inotify:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
