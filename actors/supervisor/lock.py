"""The single-instance lock: one ``orcad`` per profile (``ORCA_HOME``).

An ``flock`` on ``<runtime dir>/orcad.lock`` (``orca.fsio.FileLock``), held for the life
of the process, so the kernel releases it however the process dies; the file says who
holds it (``orca.contracts.supervisor.LockInfo``, the one format, read by
``read_lock_info``), so a second ``orca up`` can say where the running instance is.

``release`` empties the file; orcad calls it only after an orderly stop, so a file that
nobody holds but that still names an orcad marks a crash (``read_abandoned_lock_info``,
the fd keeper's cue to bring orcad back). ``service_manager`` names who restarts orcad
instead of the keeper.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path

from orca.contracts.supervisor import LockInfo, decode_lock_info, encode_lock_info
from orca.fsio import FileLock, LockHeld

# Set by a unit or script that restarts orcad itself (for systemd it is detected):
# the fd keeper then leaves bringing orcad back to it.
SERVICE_MANAGER_ENV = "ORCA_SERVICE_MANAGER"
# A reader (``read_lock_info``) holds the lock shared for a moment; a holder that reads
# as nobody is retried this long before it counts as another orcad.
READER_RETRY_S = 0.5
READER_RETRY_STEP_S = 0.01


class AlreadyRunning(Exception):
    def __init__(self, info: LockInfo) -> None:
        super().__init__(f"orcad is already running (pid {info.pid})")
        self.info = info


class InstanceLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = FileLock(path)

    def acquire(self, info: LockInfo) -> None:
        deadline = time.monotonic() + READER_RETRY_S
        while True:
            try:
                self._lock.acquire(encode_lock_info(info))
                return
            except LockHeld as held:
                if held.holder is None and time.monotonic() < deadline:
                    # Held shared by someone reading who holds it, not by an orcad.
                    time.sleep(READER_RETRY_STEP_S)
                    continue
                holder = LockInfo() if held.holder is None else decode_lock_info(held.holder)
                raise AlreadyRunning(holder) from None

    def release(self) -> None:
        self._lock.release()


def service_manager(environ: Mapping[str, str]) -> str | None:
    """Who restarts this orcad when it dies, if not the fd keeper: ``ORCA_SERVICE_MANAGER``,
    or ``systemd`` when systemd started us itself (``orca service install``'s unit runs
    orcad as its main process: our parent is ``systemd`` and ``INVOCATION_ID`` is set).
    A shell inside a systemd-run terminal has ``INVOCATION_ID`` too, but its ``orca up``
    is our parent, not systemd."""
    named = environ.get(SERVICE_MANAGER_ENV)
    if named:
        return named
    if not environ.get("INVOCATION_ID"):
        return None
    try:
        with open(f"/proc/{os.getppid()}/comm", encoding="utf-8") as f:
            parent = f.read().strip()
    except OSError:
        return None
    return "systemd" if parent == "systemd" else None
