"""Two things done with a pipe in several processes: empty a wake-up pipe, and read a
started process's one-line verdict from its ready pipe. Standard library only (the
keeper imports it)."""

from __future__ import annotations

import os
import select
import time


def drain(fd: int) -> None:
    """Read a non-blocking pipe until it is empty (a wake-up pipe's bytes mean nothing)."""
    try:
        while os.read(fd, 4096):
            pass
    except (BlockingIOError, InterruptedError):
        pass


def read_ready_line(fd: int, timeout: float) -> str:
    """The line a started process writes on its ready pipe (``ready``, ``failed <why>``),
    stripped; ``timeout`` if none came within ``timeout`` s; empty if it closed the pipe
    first (it exited). Blocking; closes ``fd``."""
    deadline = time.monotonic() + timeout
    data = b""
    try:
        while not data.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                return "timeout"
            chunk = os.read(fd, 512)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    return data.decode(errors="replace").strip()
