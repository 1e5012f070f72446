"""A crash on purpose, for the chaos test: kill -9 of orch between an act and its result.

``ORCA_ORCH_CRASH_AFTER=<step>[,<step>...]`` (``worktree``, ``terminal``, ``prompt``,
``merge``; for an automation's firing ``auto-intent``: its intent recorded, no run
made yet, and ``auto-act``: its run made, the result not recorded)
makes orch SIGKILL itself right after the step acted on its peer (the worktree made,
the terminal spawned, the prompt typed, the branch merged) and before the result is
written: exactly the "spawn physically committed, reply not recorded" crash of seed 02
§13. Each step fires once per data directory (a marker file), so the restarted orch
goes on (to the next step's crash, when several are named).
``ORCA_ORCH_STOP_AT=<step>`` makes orch ask itself to stop (SIGTERM, as ``orca down``
asks it) at a step, once per data directory as well: ``prompt-body``, just before a
prompt's body is typed, so the stop arrives while the body is on its way to ptyd.
Unset (always, outside tests), :func:`crash_point` and :func:`stop_point` do nothing.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

CRASH_ENV = "ORCA_ORCH_CRASH_AFTER"
STOP_ENV = "ORCA_ORCH_STOP_AT"


def crash_point(step: str, directory: Path) -> None:
    if _first_time(CRASH_ENV, step, directory / f"crashed-after-{step}"):
        os.kill(os.getpid(), signal.SIGKILL)


def stop_point(step: str, directory: Path) -> None:
    if _first_time(STOP_ENV, step, directory / f"stopped-at-{step}"):
        os.kill(os.getpid(), signal.SIGTERM)


def _first_time(env: str, step: str, marker: Path) -> bool:
    """``step`` is named in ``env`` and its marker was not there yet (it is now)."""
    if step not in os.environ.get(env, "").split(","):
        return False
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    os.fsync(fd)
    os.close(fd)
    return True
