"""Giving freed memory back to the operating system, in every actor process.

CPython allocates large buffers (a peer's frame, a list of a million items, a PTY's
scrollback) with ``malloc``. glibc serves a request above its mmap threshold with its
own mapping, unmapped at ``free``, but it *raises* that threshold to the size of every
mapped block freed (up to 32 MiB): after one 15 MiB frame, every later block below it
comes from the heap, which keeps freed memory for reuse instead of returning it. A
peer of the same uid sending large frames thus left +95 to 170 MiB in every actor
(issue 33).

- :func:`keep_large_blocks_mapped`, once at an actor's start (``run_actor``): a fixed
  threshold of 1 MiB (``mallopt(M_MMAP_THRESHOLD)``, which also ends the dynamic
  adjustment), so every block from 1 MiB up is its own mapping, given back the moment
  it is freed. Blocks below it (PTY reads are 64 KiB) keep the heap's speed.
- :func:`release_free_memory`: ``malloc_trim(0)``, for memory freed in many small
  blocks (ptyd's compacted scrollbacks). A trim walks the heap: measured at most ~7 ms
  with a 150 MB heap, so callers run it after a compaction, never per message.

On a libc without them (musl) both are no-ops that say so.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any

# glibc's mallopt parameter number for M_MMAP_THRESHOLD (malloc.h).
_M_MMAP_THRESHOLD = -3
# From this size up a block is mapped on its own and unmapped at free.
MMAP_THRESHOLD_BYTES = 1024 * 1024


def _libc_function(name: str, argtypes: list[Any]) -> Any | None:
    lib = ctypes.util.find_library("c")
    if lib is None:
        return None
    try:
        fn = getattr(ctypes.CDLL(lib), name)
    except (OSError, AttributeError):
        return None
    fn.argtypes = argtypes
    fn.restype = ctypes.c_int
    return fn


_malloc_trim = _libc_function("malloc_trim", [ctypes.c_size_t])
_mallopt = _libc_function("mallopt", [ctypes.c_int, ctypes.c_int])


def keep_large_blocks_mapped(threshold: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Every block from ``threshold`` up is mapped on its own (module docstring);
    False where libc cannot."""
    if _mallopt is None:
        return False
    return bool(_mallopt(_M_MMAP_THRESHOLD, threshold) == 1)


def release_free_memory() -> bool:
    """Return freed heap memory to the OS; False where libc cannot."""
    if _malloc_trim is None:
        return False
    _malloc_trim(0)
    return True
