"""Issue 16 item 11: SIGSTOP of orcad for longer than the heartbeat timeout, then SIGCONT,
killed every healthy actor as hung.

orcad now notices that it was not scheduled itself (its monotonic clock jumped past its
own check-in step) and restarts every liveness clock from the moment it runs again, so
the actors' queued heartbeats get through: same pids, zero restarts. A really hung actor
is still killed (tests/system/test_supervisor.py::test_hung_actor_is_detected...).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import trio
from support.lifecycle import lifecycle
from support.procs import run_cli, write_config

from orca.actor import open_rpc_client
from orca.contracts import supervisor as sup
from orca.paths import resolve_paths

# Tight enough that the pause is several timeouts long, loose enough that a loaded
# machine (the suite's -n 3 on 2 cores) does not starve a healthy actor past it.
HEARTBEAT_TIMEOUT_S = 2.0
# Well past the timeout: the old orcad killed every actor on SIGCONT after this.
PAUSE_S = 3 * HEARTBEAT_TIMEOUT_S
CONFIG = f"""
[supervisor]
heartbeat_interval_s = 0.2
heartbeat_timeout_s = {HEARTBEAT_TIMEOUT_S}
stable_after_s = 30
ready_timeout_s = 20
shutdown_grace_s = 2
""" + "".join(
    f'\n[[child]]\nname = "{n}"\nmodule = "fixture_actors.steady"\n'
    for n in ("store", "hooks", "ptyd", "gitwatch")
)


async def test_paused_orcad_kills_no_healthy_actor(orca_home: Path) -> None:
    """SIGSTOP orcad past the heartbeat timeout, SIGCONT: the same four pids, no restart."""
    with trio.fail_after(90):
        write_config(orca_home, CONFIG)
        result = run_cli(orca_home, "up")
        assert result.returncode == 0, result.stderr
        paths = resolve_paths({"ORCA_HOME": str(orca_home)})
        info = sup.read_lock_info(paths.lock_file)
        assert info is not None and info.pid is not None
        async with (
            open_rpc_client(paths.ipc_endpoint("supervisor", "rpc")) as orcad,
            lifecycle(orca_home) as (_mirror, rec),
        ):
            before = await orcad.invoke(sup.STATUS)
            pids = {a.name: a.pid for a in before.actors}
            assert len(pids) == 4 and all(a.state == "running" for a in before.actors)
            os.kill(info.pid, signal.SIGSTOP)
            try:
                await trio.sleep(PAUSE_S)  # the pause itself is what is under test
            finally:
                os.kill(info.pid, signal.SIGCONT)
            # orcad answers again; then give it several heartbeat timeouts to misjudge.
            await orcad.invoke(sup.STATUS, timeout=5, retries=2)
            await trio.sleep(3 * HEARTBEAT_TIMEOUT_S)
            after = await orcad.invoke(sup.STATUS)
            assert not rec.of(sup.EXITED), [e.reason for e in rec.of(sup.EXITED)]
        assert {a.name: a.pid for a in after.actors} == pids
        # Compared with before the pause: what happened during `up` (a start slowed by
        # the machine's load) is not what is under test. CI: [0, 1, 1, 1] == [0, 0, 0, 0]
        # with the pids unchanged and no exit recorded after the pause.
        assert [a.restarts for a in after.actors] == [a.restarts for a in before.actors]
        assert all(a.state == "running" for a in after.actors)
        assert after.supervisor.pauses >= 1, "orcad saw its own pause"
