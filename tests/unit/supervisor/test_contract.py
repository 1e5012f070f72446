"""orcad serves and publishes exactly what ``orca/contracts/supervisor.py`` declares."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import msgspec
import pytest
import trio

from actors.supervisor.config import ChildSpec, SupervisorSpec
from actors.supervisor.core import Publish, SupervisorCore
from actors.supervisor.tree import Supervisor
from orca.actor.endpoints import BadTcpHost, tcp_host_from_env
from orca.contracts import supervisor as sup
from orca.contracts import sys as sys_contract
from orca.contracts.base import spec_of
from orca.paths import resolve_paths

SPEC = SupervisorSpec(children=(ChildSpec("a", "m.a"), ChildSpec("b", "m.b")), intensity=1)


def test_registered_ops_equal_the_contract(tmp_path: Path) -> None:
    """Every op orcad registers is declared in the contract, and every declared op is served."""
    paths = resolve_paths({"ORCA_HOME": str(tmp_path)}).ensure()
    orcad = Supervisor(paths, SPEC)
    try:
        assert set(orcad.rpc.ops) == set(sup.CONTRACT.ops) | set(sys_contract.CONTRACT.ops)
    finally:
        orcad.rpc.close()
        orcad.events.close()


def published_specs(effects: Sequence[object]) -> set[str]:
    return {spec_of(e.event).type for e in effects if isinstance(e, Publish)}


def test_published_event_types_equal_the_contract() -> None:
    """Driving the core through start, crash, failure and operator restart publishes every
    declared event type and nothing else."""
    core = SupervisorCore(SPEC)
    seen: set[str] = set()
    core.boot(0.0)
    core.spawned("a", 100, 0.0)
    seen |= published_specs(core.ready("a", 100, 0.1))
    seen |= published_specs(core.exited("a", 100, 1, 1.0))  # exited + restarting
    core.tick(1.0)
    core.spawned("a", 101, 1.0)
    seen |= published_specs(core.exited("a", 101, 1, 1.1))  # exited + failed
    seen |= published_specs(core.restart("a", 2.0))  # operator restarting
    seen |= published_specs(core.log_failing("a", "ENOSPC: No space left on device", 3))
    seen |= published_specs(core.log_recovered("a", 3))
    assert seen == set(sup.CONTRACT.events)


def test_events_keep_their_documented_wire_fields() -> None:
    """camelCase fields; an operator restart carries no lastExit, a crash restart no operator."""
    crash = sup.ActorRestarting(
        name="a", delay_s=0.25, restarts=2, last_exit=sup.ExitInfo(code=1, reason="exited")
    )
    assert msgspec.to_builtins(crash) == {
        "name": "a",
        "delayS": 0.25,
        "restarts": 2,
        "lastExit": {"code": 1, "reason": "exited"},
    }
    operator = sup.ActorRestarting(name="a", delay_s=0.0, restarts=2, operator=True)
    assert msgspec.to_builtins(operator) == {
        "name": "a",
        "delayS": 0.0,
        "restarts": 2,
        "operator": True,
    }
    failed = sup.ActorFailed(
        name="a", restarts=3, period_s=60.0, last_exit=sup.ExitInfo(code=None, reason="x")
    )
    assert set(msgspec.to_builtins(failed)) == {"name", "restarts", "periodS", "lastExit"}


def test_status_rows_decode_with_the_contract() -> None:
    """The core's status rows are what a client decodes from sup.status."""
    core = SupervisorCore(SPEC)
    core.boot(0.0)
    core.spawned("a", 100, 0.0)
    core.ready("a", 100, 0.5)
    info = sup.SupervisorInfo(
        pid=1,
        uptime=1.0,
        home=None,
        endpoint="e",
        endpoints=["e"],
        strategy="one_for_one",
        stopping=False,
    )
    status = sup.Status(actors=core.statuses(2.0), supervisor=info)
    wire = msgspec.msgpack.encode(status)
    decoded = sup.STATUS.decode_result(wire)
    assert decoded == status
    assert [(r.name, r.state, r.uptime) for r in decoded.actors] == [
        ("a", "running", 1.5),
        ("b", "starting", None),
    ]


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.1", "localhost"])
async def test_orcad_binds_through_the_loopback_check(tmp_path: Path, host: str) -> None:
    """Even a spec that skipped config validation cannot make orcad bind off loopback:
    its sockets go through the actors' bind path, which refuses before binding anything."""
    paths = resolve_paths({"ORCA_HOME": str(tmp_path)}).ensure()
    orcad = Supervisor(paths, replace(SPEC, tcp_host=host))
    with trio.fail_after(10), pytest.raises(BadTcpHost, match=r"loopback|IP address|IPv6"):
        await orcad.run()
    assert orcad.rpc.endpoints == [] and orcad.events.endpoints == []
    assert not [p for p in paths.runtime_dir.iterdir() if p.suffix in (".rpc", ".pub")]


def test_an_actors_orca_tcp_host_goes_through_the_same_check() -> None:
    """ORCA_TCP_HOST as an actor reads it: loopback accepted, anything else refused by name."""
    assert tcp_host_from_env({}) is None and tcp_host_from_env({"ORCA_TCP_HOST": ""}) is None
    assert tcp_host_from_env({"ORCA_TCP_HOST": "127.0.0.1"}) == "127.0.0.1"
    with pytest.raises(BadTcpHost, match=r"ORCA_TCP_HOST='0\.0\.0\.0' is not a loopback"):
        tcp_host_from_env({"ORCA_TCP_HOST": "0.0.0.0"})
