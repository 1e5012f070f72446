"""orcad's instance lock file and how orcad is started: what the fd keeper needs of
orcad (``actors/keeper/orcad_watch.py``), with the standard library alone (the keeper
imports no msgspec, issue 36; ``orca.wire.records``). ``orca.contracts.supervisor``, the
RPC contract, imports every name here too.

The instance lock file (``<runtime dir>/orcad.lock``, ``OrcaPaths.lock_file``): orcad
holds an exclusive ``flock`` on it for its whole life and writes ``LockInfo`` as JSON
``{pid, endpoint, home, startedAt, manager}``. The kernel releases the flock however orcad
dies, so a file nobody holds locked is stale and names nobody: ``read_lock_info`` is
the one reader (the CLI detects a running orcad with it, without RPC) and
``encode_lock_info`` the one writer's encoding. What a stale file still says is read
once, by the fd keeper: orcad empties the file only when it stops on purpose (``sup.stop``,
``sup.hand_over``, SIGTERM), so a stale file that still names an orcad
(``read_abandoned_lock_info``) is one that died without saying so (``kill -9``, a crash),
which the keeper brings back (``actors/keeper/orcad_watch.py``) unless ``manager`` names
a service manager that restarts it itself (``systemd``: ``orca service install``).

Starting orcad (``orca up``, ``orca restart --all``, the keeper): ``launch_orcad``, the
one way, so every orcad starts alike: detached, its output appended to its log, its
verdict on a ready pipe (``ready``, ``failed <actors>``, ``timeout``; nothing if it
exited first: exit code 3 when another orcad holds the lock).

What orcad gives each actor in its environment: ``SUPERVISOR_ENV`` (its RPC endpoint),
``SUPERVISOR_PID_ENV`` (its pid: an actor whose parent is no longer it stops) and
``HEARTBEAT_ENV`` (the heartbeat period); the keeper clears them from the environment of
an orcad it starts.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Mapping
from pathlib import Path

from orca.daemon import spawn_detached
from orca.fsio import read_lock_holder
from orca.wire.errors import BadRequest
from orca.wire.records import JsonRecord, RecordDecoder, encode

SUPERVISOR_ENV = "ORCA_SUPERVISOR"
SUPERVISOR_PID_ENV = "ORCA_SUPERVISOR_PID"
HEARTBEAT_ENV = "ORCA_HEARTBEAT_S"


# -- the instance lock file ---------------------------------------------------------
class LockInfo(JsonRecord, camel=True):
    """Who holds the instance lock; every field null when the file is unreadable."""

    pid: int | None = None
    endpoint: str | None = None
    home: str | None = None
    started_at: float | None = None
    # Who restarts this orcad when it dies: a service manager ("systemd"), or null: the
    # fd keeper does (module docstring).
    manager: str | None = None


# Far above any LockInfo; a bigger file is not ours.
_LOCK_FILE_MAX = 65536
_LOCK_DECODER: RecordDecoder[LockInfo] = RecordDecoder(
    [LockInfo],
    what="lock file",
    max_bytes=None,  # read at most _LOCK_FILE_MAX
)


def encode_lock_info(info: LockInfo) -> bytes:
    return encode(info)


def decode_lock_info(raw: bytes) -> LockInfo:
    """The holder a lock file names; a file being written or damaged names nobody."""
    try:
        return _LOCK_DECODER.decode(raw)
    except BadRequest:
        return LockInfo()


def read_lock_info(path: Path) -> LockInfo | None:
    """Who holds the lock at ``path``, or None if nobody does (a stale file is not a holder)."""
    raw = read_lock_holder(path)
    return None if raw is None else decode_lock_info(raw[:_LOCK_FILE_MAX])


def read_abandoned_lock_info(path: Path) -> LockInfo | None:
    """The orcad a lock file still names though nobody holds the lock: one that died
    without stopping on purpose (an orderly stop empties the file first); None while
    the lock is held, or when the file is empty, unreadable or missing."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # held: a live orcad, not an abandoned one
        try:
            raw = os.read(fd, _LOCK_FILE_MAX)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    except OSError:
        return None
    finally:
        os.close(fd)
    if not raw:
        return None
    info = decode_lock_info(raw)
    return info if info.pid is not None else None


# -- starting orcad -------------------------------------------------------------------
# Its package, never imported by those who start it; -P keeps the current directory off
# sys.path (a folder named ``orca`` there would shadow the package: ``orca up`` from ``~``
# used to fail once ``~/orca/`` existed).
ORCAD_MODULE = "actors.supervisor"
ORCAD_ARGV = ("-P", "-m", ORCAD_MODULE)
# orcad's exit code when another orcad of the profile holds the lock.
EXIT_ALREADY_RUNNING = 3


def launch_orcad(python: str, env: Mapping[str, str], log_path: Path) -> tuple[int, int, int]:
    """Start orcad detached (``orca.daemon.spawn_detached``: it leaves the starter's
    session and terminal), output appended to ``log_path`` (0600). Returns its pid, the
    read end of its ready pipe (the caller reads the verdict and closes it) and the log's
    size before this run (orcad appends to every earlier run's log: a failure shows only
    this run's lines)."""
    return spawn_detached(python, ORCAD_ARGV, env, log_path)
