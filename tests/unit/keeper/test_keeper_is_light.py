"""The keeper only holds descriptors, so it pays for no event loop (issue 36): the
process imports neither trio nor ZeroMQ nor the actor runtime."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("trio", "zmq", "orca.actor", "actors.ptyd", "actors.supervisor")


def test_the_keeper_process_imports_no_event_loop_and_no_actor_runtime() -> None:
    probe = (
        "import sys, actors.keeper.__main__\n"
        f"heavy = {HEAVY!r}\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-P", "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]", out
