"""Issue 16 item 3 (the leftovers): ``tcp_host = "0.0.0.0"`` served orcad's RPC and PUB on
every interface and kept orcad running although ``orca up`` exited 1; ``"::"`` and
``"10.0.0.1"`` crashed orcad, ``"localhost"`` crash-looped the actors, and
``ORCA_TCP_HOST`` was ignored under orcad.

The config file is covered by tests/system/test_supervisor.py; here the same host in
``ORCA_TCP_HOST`` (what ``orca up`` hands orcad): refused with a clear error, no orcad
left behind, nothing listening. A loopback ``ORCA_TCP_HOST`` is honoured by orcad and
every actor, and what they serve there is CURVE only.
"""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest
from support.procs import child_env, run_cli, write_config

from orca.client.sync import invoke
from orca.contracts import supervisor as sup
from orca.contracts import sys as sys_contract
from orca.paths import resolve_paths
from orca.wire.errors import Unavailable

TREE = """
[supervisor]
heartbeat_interval_s = 0.2
heartbeat_timeout_s = 2.0
ready_timeout_s = 20
shutdown_grace_s = 2

[[child]]
name = "alpha"
module = "fixture_actors.steady"
"""


def _tcp_listeners(pids: list[int]) -> list[str]:
    found = []
    for pid in pids:
        try:
            conns = psutil.Process(pid).net_connections(kind="tcp")
        except psutil.NoSuchProcess:
            continue
        found += [f"{c.laddr.ip}:{c.laddr.port}" for c in conns if c.status == psutil.CONN_LISTEN]
    return found


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.1", "localhost"])
def test_bad_orca_tcp_host_in_the_environment_starts_nothing(orca_home: Path, host: str) -> None:
    """ORCA_TCP_HOST off loopback: `orca up` fails naming it; no orcad, no socket, no actor."""
    write_config(orca_home, TREE)
    result = run_cli(orca_home, "up", env=child_env(orca_home, {"ORCA_TCP_HOST": host}))
    assert result.returncode == 1, result.stdout
    assert "Traceback" not in result.stderr
    assert "ORCA_TCP_HOST" in result.stderr and repr(host) in result.stderr
    paths = resolve_paths({"ORCA_HOME": str(orca_home)})
    assert sup.read_lock_info(paths.lock_file) is None, "orcad did not keep running"
    assert not [p.name for p in paths.runtime_dir.iterdir() if p.suffix in (".rpc", ".pub")]
    assert not paths.log_file("alpha").exists(), "no actor was started"


def test_loopback_orca_tcp_host_is_honoured_under_orcad_with_curve_only(orca_home: Path) -> None:
    """ORCA_TCP_HOST=127.0.0.2 given to `orca up`: orcad and its actor listen there (and
    nowhere else), and a plaintext client gets nothing."""
    write_config(orca_home, TREE)
    env = child_env(orca_home, {"ORCA_TCP_HOST": "127.0.0.2"})
    result = run_cli(orca_home, "up", env=env)
    assert result.returncode == 0, result.stderr
    try:
        paths = resolve_paths({"ORCA_HOME": str(orca_home)})
        status = invoke(sup.STATUS, paths=paths)
        pids = [status.supervisor.pid, *(a.pid for a in status.actors if a.pid is not None)]
        listeners = _tcp_listeners(pids)
        assert len(listeners) == 4 and all(e.startswith("127.0.0.2:") for e in listeners)
        hello = invoke(sys_contract.HELLO, endpoint=paths.ipc_endpoint("alpha", "rpc"))
        (tcp,) = [e for e in hello.endpoints if e.startswith("tcp://")]
        assert tcp.startswith("tcp://127.0.0.2:")
        with pytest.raises(Unavailable, match="cannot connect"):
            invoke(sys_contract.PING, endpoint=tcp, timeout=1.0)
    finally:
        assert run_cli(orca_home, "down", "--kill-terminals", env=env).returncode == 0
