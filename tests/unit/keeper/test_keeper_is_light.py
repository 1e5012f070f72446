"""The keeper only holds descriptors, so it pays for no event loop (issue 36): the
process imports neither trio nor ZeroMQ nor the actor runtime, and no msgspec either
(its packets and lock files are ``orca.wire.records``, the standard library's json), nor
dataclasses (which bring inspect and ast): about 3.5 MiB of its 18 were those two."""

from __future__ import annotations

import subprocess
import sys

HEAVY = (
    "trio",
    "zmq",
    "msgspec",
    "dataclasses",
    "inspect",
    "orca.actor",
    "orca.contracts.base",
    "orca.wire.codec",
    "actors.ptyd",
    "actors.supervisor",
)


def test_the_keeper_process_imports_no_event_loop_no_actor_runtime_and_no_msgspec() -> None:
    probe = (
        "import sys, actors.keeper.__main__\n"
        f"heavy = {HEAVY!r}\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-P", "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]", out
