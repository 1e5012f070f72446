"""A crash on purpose, for the chaos test: kill -9 of orch between an act and its result.

``ORCA_ORCH_CRASH_AFTER=<step>[,<step>...]`` (``worktree``, ``terminal``, ``prompt``,
``merge``; for an automation's firing ``auto-intent``: its intent recorded, no run
made yet, and ``auto-act``: its run made, the result not recorded)
makes orch SIGKILL itself right after the step acted on its peer (the worktree made,
the terminal spawned, the prompt typed, the branch merged) and before the result is
written: exactly the "spawn physically committed, reply not recorded" crash of seed 02
§13. Each step fires once per data directory (a marker file), so the restarted orch
goes on (to the next step's crash, when several are named).
Unset (always, outside tests), :func:`crash_point` does nothing.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

CRASH_ENV = "ORCA_ORCH_CRASH_AFTER"


def crash_point(step: str, directory: Path) -> None:
    if step not in os.environ.get(CRASH_ENV, "").split(","):
        return
    marker = directory / f"crashed-after-{step}"
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.fsync(fd)
    os.close(fd)
    os.kill(os.getpid(), signal.SIGKILL)
