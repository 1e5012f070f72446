"""The supervision tree as a user runs it: real orcad, real actor processes, the real CLI."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import psutil
import pytest
import trio
from fixture_actors.contracts import COUNTER_BUMP, BumpArgs
from support.lifecycle import lifecycle
from support.procs import alive, descendants, run_cli, write_config

from orca import keys
from orca.actor import open_rpc_client
from orca.contracts import supervisor as sup
from orca.contracts import sys as sys_contract
from orca.paths import resolve_paths

FAST = """
[supervisor]
backoff_initial_s = 0.05
backoff_max_s = 0.2
stable_after_s = 30
intensity = 3
period_s = 60
heartbeat_interval_s = 0.2
heartbeat_timeout_s = 1.0
ready_timeout_s = 20
shutdown_grace_s = 2
"""


def tree(*children: tuple[str, str]) -> str:
    return FAST + "".join(f'\n[[child]]\nname = "{n}"\nmodule = "{m}"\n' for n, m in children)


def up(home: Path) -> None:
    result = run_cli(home, "up")
    assert result.returncode == 0, result.stderr
    assert "every actor ready" in result.stdout


def status(home: Path) -> dict[str, dict[str, Any]]:
    result = run_cli(home, "status", "--json")
    assert result.returncode == 0, result.stderr
    return {a["name"]: a for a in json.loads(result.stdout)["actors"]}


def orcad_pid(home: Path) -> int:
    info = sup.read_lock_info(resolve_paths({"ORCA_HOME": str(home)}).lock_file)
    assert info is not None and info.pid is not None, "orcad holds its lock"
    return info.pid


async def test_killed_actor_is_restarted_announced_and_its_clients_reconnect(
    orca_home: Path,
) -> None:
    """kill -9 of an actor: orcad restarts it, publishes the lifecycle, old clients keep working."""
    with trio.fail_after(60):
        write_config(
            orca_home, tree(("alpha", "fixture_actors.steady"), ("beta", "fixture_actors.steady"))
        )
        up(orca_home)
        before = status(orca_home)
        paths = resolve_paths({"ORCA_HOME": str(orca_home)})
        async with (
            lifecycle(orca_home) as (mirror, rec),
            open_rpc_client(paths.ipc_endpoint("alpha", "rpc")) as alpha,
        ):
            assert (await alpha.invoke(COUNTER_BUMP, BumpArgs(by=2))).counter == 2
            os.kill(before["alpha"]["pid"], signal.SIGKILL)
            await mirror.wait_until(
                lambda m: rec.seen(sup.STARTED, "alpha", lambda d: d.pid != before["alpha"]["pid"])
            )
            assert rec.seen(sup.EXITED, "alpha", lambda d: d.reason == "killed by SIGKILL")
            assert rec.seen(sup.RESTARTING, "alpha")
            assert not rec.of(sup.EXITED, "beta")
            # The same client, created before the crash, reaches the new process.
            reply = await alpha.invoke(COUNTER_BUMP, BumpArgs(by=1), timeout=2, retries=3)
            assert reply.counter == 1  # a fresh process: state is the actor's to persist
        after = status(orca_home)
        assert after["alpha"]["state"] == "running" and after["alpha"]["restarts"] == 1
        assert after["beta"]["pid"] == before["beta"]["pid"], "one_for_one leaves siblings alone"


async def test_crash_loop_backs_off_ends_failed_and_restart_revives_it(orca_home: Path) -> None:
    """A crash-looping actor is restarted a bounded number of times, then failed; restart clears it."""
    with trio.fail_after(60):
        write_config(
            orca_home, tree(("steady", "fixture_actors.steady"), ("flaky", "fixture_actors.flaky"))
        )
        up(orca_home)
        orcad = psutil.Process(orcad_pid(orca_home))
        cpu_before = sum(orcad.cpu_times()[:2])
        async with lifecycle(orca_home) as (mirror, rec):
            (orca_home / "crash-flaky").touch()
            pid = status(orca_home)["flaky"]["pid"]
            os.kill(pid, signal.SIGKILL)
            await mirror.wait_until(lambda m: rec.seen(sup.FAILED, "flaky"))
            restarts = rec.of(sup.RESTARTING, "flaky")
            assert len(restarts) == 3, "intensity 3 allows exactly three restarts"
            delays = [e.delay_s for e in restarts]
            assert delays == sorted(delays) and delays[-1] > delays[0], "backoff grows"
            row = status(orca_home)["flaky"]
            assert row["state"] == "failed" and row["pid"] is None
            assert "status 3" in row["lastExit"]["reason"]
            # Failed means left alone: no restart activity while we wait a while.
            n_events = len(rec.typed)
            await trio.sleep(1.0)
            assert not [e for e in rec.typed[n_events:] if e.name == "flaky"]
            cpu_used = sum(orcad.cpu_times()[:2]) - cpu_before
            assert cpu_used < 2.0, f"the supervisor burnt {cpu_used:.2f}s of CPU on a crash loop"

            (orca_home / "crash-flaky").unlink()
            result = run_cli(orca_home, "restart", "flaky")
            assert result.returncode == 0, result.stderr
            await mirror.wait_until(lambda m: rec.seen(sup.STARTED, "flaky"))
        assert status(orca_home)["flaky"]["state"] == "running"


async def test_hung_actor_is_detected_by_heartbeat_and_replaced(orca_home: Path) -> None:
    """A SIGSTOPped actor misses heartbeats, is killed and restarted."""
    with trio.fail_after(60):
        write_config(orca_home, tree(("alpha", "fixture_actors.steady")))
        up(orca_home)
        pid = status(orca_home)["alpha"]["pid"]
        async with lifecycle(orca_home) as (mirror, rec):
            os.kill(pid, signal.SIGSTOP)
            await mirror.wait_until(
                lambda m: rec.seen(sup.STARTED, "alpha", lambda d: d.pid != pid)
            )
            exited = rec.of(sup.EXITED, "alpha")
            assert exited and "no heartbeat" in exited[0].reason
        assert not alive([pid])


def test_down_leaves_no_process_behind(orca_home: Path) -> None:
    """orca down stops every actor, their own children and orcad itself."""
    write_config(
        orca_home, tree(("alpha", "fixture_actors.steady"), ("forker", "fixture_actors.forker"))
    )
    up(orca_home)
    root = orcad_pid(orca_home)
    everything = [root, *descendants(root)]
    assert len(everything) >= 4, "orcad, two actors and the forker's grandchild"
    result = run_cli(orca_home, "down", "--kill-terminals")
    assert result.returncode == 0, result.stderr
    assert alive(everything) == []
    again = run_cli(orca_home, "status")
    assert again.returncode == 3 and "not running" in again.stderr
    ipc = resolve_paths({"ORCA_HOME": str(orca_home)}).runtime_dir
    assert not [p.name for p in ipc.iterdir() if p.suffix in (".rpc", ".pub")], "sockets removed"


def test_second_up_says_where_the_running_one_is(orca_home: Path) -> None:
    """orca up while running exits 0 and names the running orcad's pid and endpoint."""
    write_config(orca_home, tree(("alpha", "fixture_actors.steady")))
    up(orca_home)
    result = run_cli(orca_home, "up")
    assert result.returncode == 0
    assert f"pid {orcad_pid(orca_home)}" in result.stdout and "supervisor.rpc" in result.stdout


def test_cli_errors_when_not_running(orca_home: Path) -> None:
    """Every command that needs the service says it is not running and exits 3."""
    for args in (("status",), ("restart", "alpha"), ("down",)):
        result = run_cli(orca_home, *args)
        assert result.returncode == 3, (args, result.stdout, result.stderr)
        assert "not running" in (result.stdout + result.stderr)


def test_restart_of_unknown_actor_is_a_usage_error(orca_home: Path) -> None:
    """orca restart NOPE names the known actors and exits 2."""
    write_config(orca_home, tree(("alpha", "fixture_actors.steady")))
    up(orca_home)
    result = run_cli(orca_home, "restart", "nope")
    assert result.returncode == 2 and "alpha" in result.stderr


def test_logs_show_an_actors_output(orca_home: Path) -> None:
    """orca logs NAME prints what the actor wrote (its ready line included)."""
    write_config(orca_home, tree(("alpha", "fixture_actors.steady")))
    up(orca_home)
    result = run_cli(orca_home, "logs", "alpha")
    assert result.returncode == 0 and "alpha ready on ipc://" in result.stdout
    assert run_cli(orca_home, "logs", "nope").returncode == 2


def test_bad_config_is_reported_and_nothing_starts(orca_home: Path) -> None:
    """A config error is reported with the file and key; up fails without leaving processes."""
    write_config(orca_home, tree(("alpha", "fixture_actors.steady")) + "\n[supervisor]\n")
    result = run_cli(orca_home, "up")
    assert result.returncode != 0
    write_config(orca_home, "[supervisor]\nstrategy = 'sideways'\n")
    result = run_cli(orca_home, "up")
    assert result.returncode == 1 and "strategy" in result.stderr


@pytest.mark.parametrize("strategy", ["rest_for_one"])
async def test_rest_for_one_restarts_the_children_after_the_crashed_one(
    orca_home: Path, strategy: str
) -> None:
    """With rest_for_one, a crash of the first child also restarts the second, not vice versa."""
    with trio.fail_after(60):
        write_config(
            orca_home,
            tree(("first", "fixture_actors.steady"), ("second", "fixture_actors.steady")).replace(
                "[supervisor]\n", f"[supervisor]\nstrategy = '{strategy}'\n"
            ),
        )
        up(orca_home)
        before = status(orca_home)
        async with lifecycle(orca_home) as (mirror, rec):
            os.kill(before["first"]["pid"], signal.SIGKILL)
            await mirror.wait_until(
                lambda m: rec.seen(
                    sup.STARTED, "second", lambda d: d.pid != before["second"]["pid"]
                )
            )
            order = [e.name for e in rec.of(sup.STARTED)]
            assert order.index("first") < order.index("second")
        after = status(orca_home)
        assert after["second"]["restarts"] == 0, "a dependent restart is not the dependent's crash"


async def test_foreground_up_serves_until_interrupted(orca_home: Path) -> None:
    """orca up --foreground runs orcad in the terminal; Ctrl-C (SIGINT) stops the whole tree."""
    import subprocess
    import sys

    from support.procs import child_env

    with trio.fail_after(60):
        write_config(orca_home, tree(("alpha", "fixture_actors.steady")))
        proc = await trio.lowlevel.open_process(
            [sys.executable, "-m", "orca.cli.main", "up", "--foreground"],
            env=child_env(orca_home),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            paths = resolve_paths({"ORCA_HOME": str(orca_home)})
            async with open_rpc_client(paths.ipc_endpoint("supervisor", "rpc")) as orcad:
                ready = await orcad.invoke(
                    sup.WAIT_READY, sup.WaitReadyArgs(timeout=30), timeout=40, retries=0
                )
            (alpha,) = ready.actors
            assert alpha.state == "running" and ready.supervisor.pid == proc.pid
            assert alpha.pid is not None
            proc.send_signal(signal.SIGINT)
            assert await proc.wait() == 0
            assert alive([alpha.pid]) == []
        finally:
            proc.kill()
            await proc.wait()


async def test_actors_stop_when_orcad_is_killed(orca_home: Path) -> None:
    """kill -9 of orcad: every actor notices (pidfd) and stops on its own; none is orphaned."""
    with trio.fail_after(60):
        write_config(
            orca_home, tree(("alpha", "fixture_actors.steady"), ("beta", "fixture_actors.steady"))
        )
        up(orca_home)
        root = orcad_pid(orca_home)
        pidfds = [os.pidfd_open(a["pid"]) for a in status(orca_home).values()]
        try:
            os.kill(root, signal.SIGKILL)
            for fd in pidfds:  # readable once that process has exited
                await trio.lowlevel.wait_readable(fd)
        finally:
            for fd in pidfds:
                trio.lowlevel.notify_closing(fd)
                os.close(fd)


async def test_every_op_is_reachable_over_loopback_tcp(orca_home: Path) -> None:
    """With tcp_host set, each actor also serves its ops on tcp://127.0.0.1 (remote hosts'
    path), to a CURVE client whose key is authorized (tests/security/test_tcp_curve.py:
    nobody else)."""
    with trio.fail_after(60):
        write_config(
            orca_home,
            tree(("alpha", "fixture_actors.steady")).replace(
                "[supervisor]\n", "[supervisor]\ntcp_host = '127.0.0.1'\n"
            ),
        )
        up(orca_home)
        paths = resolve_paths({"ORCA_HOME": str(orca_home)})
        async with open_rpc_client(paths.ipc_endpoint("alpha", "rpc")) as over_ipc:
            hello = await over_ipc.invoke(sys_contract.HELLO)
        (tcp,) = [e for e in hello.endpoints if e.startswith("tcp://127.0.0.1:")]
        client = keys.KeyPair.generate()
        keys.authorize(paths, client.public, "system-test")
        curve = keys.CurveClient.for_server(client, keys.host_public_key(paths))
        async with open_rpc_client(tcp, curve=curve) as over_tcp:
            assert (await over_tcp.invoke(COUNTER_BUMP, BumpArgs(by=5))).counter == 5
        async with open_rpc_client(paths.ipc_endpoint("supervisor", "rpc")) as orcad:
            status = await orcad.invoke(sup.STATUS)
        (orcad_tcp,) = [e for e in status.supervisor.endpoints if e.startswith("tcp://")]
        assert orcad_tcp.startswith("tcp://127.0.0.1:"), "orcad binds the same loopback host"


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.1", "localhost"])
def test_non_loopback_tcp_host_refuses_to_start_and_binds_nothing(
    orca_home: Path, host: str
) -> None:
    """tcp_host off loopback: orcad exits with a config error naming it; no socket, no actor."""
    write_config(
        orca_home,
        tree(("alpha", "fixture_actors.steady")).replace(
            "[supervisor]\n", f"[supervisor]\ntcp_host = '{host}'\n"
        ),
    )
    result = run_cli(orca_home, "up")
    assert result.returncode == 1
    assert "bad configuration" in result.stderr and "tcp_host" in result.stderr
    assert repr(host) in result.stderr
    paths = resolve_paths({"ORCA_HOME": str(orca_home)})
    assert sup.read_lock_info(paths.lock_file) is None
    assert not [p.name for p in paths.runtime_dir.iterdir() if p.suffix in (".rpc", ".pub")]
    assert not paths.log_file("alpha").exists(), "no actor was started"
