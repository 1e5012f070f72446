"""Running a run's check command (``--check "pytest -q"``) in a variant's worktree.

The command runs under ``/bin/sh -c`` with the worktree as its directory, in a process
group of its own (a timeout ends the whole group), its output (stdout and stderr
together) kept to the last :data:`KEEP_BYTES`; the result is the exit code and the
output's tail. Orca's own variables are not passed on (as ptyd does for agents).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from typing import NamedTuple

import trio

from actors.orch.core import tail
from orca.contracts.orch import CHECK_TAIL_CHARS

# A test suite may take a while; one that hangs must not hold a check slot forever.
CHECK_TIMEOUT_S = float(os.environ.get("ORCA_ORCH_CHECK_TIMEOUT_S", "900"))
KEEP_BYTES = 64 * 1024
TIMED_OUT = 124  # timeout(1)'s exit code for a command it ended


class CheckOutcome(NamedTuple):
    exit_code: int
    tail: str
    ran_at_ms: int
    duration_ms: int


def check_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("ORCA_")}


async def run_check(command: str, cwd: str, timeout_s: float = CHECK_TIMEOUT_S) -> CheckOutcome:
    started = time.monotonic()
    ran_at = time.time_ns() // 1_000_000
    kept = bytearray()
    try:
        proc = await trio.lowlevel.open_process(
            ["/bin/sh", "-c", command],
            cwd=cwd,
            env=check_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        return CheckOutcome(127, f"cannot run the check: {exc}", ran_at, 0)
    code = TIMED_OUT
    try:
        assert proc.stdout is not None
        with trio.move_on_after(timeout_s) as scope:
            while chunk := await proc.stdout.receive_some(65536):
                kept += chunk
                if len(kept) > KEEP_BYTES:
                    del kept[: len(kept) - KEEP_BYTES]
            code = await proc.wait()
        if scope.cancelled_caught:
            kept += f"\n[check timed out after {timeout_s:g} s]\n".encode()
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with trio.CancelScope(shield=True):
                await proc.wait()
        if proc.stdout is not None:
            await proc.stdout.aclose()
    text = kept.decode("utf-8", errors="replace")
    duration = int((time.monotonic() - started) * 1000)
    return CheckOutcome(code, tail(text, CHECK_TAIL_CHARS), ran_at, duration)
