"""The gateway actor alone (no tree): its contract, its local event ring, a bad config."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import trio
from support.actors import running_actor, start_actor, wait_exited
from support.remote import free_port

from orca.contracts import gateway as gw
from orca.contracts import sys as sys_contract
from orca.contracts.base import NoArgs

TEST_TIMEOUT_S = 20.0


async def test_registered_ops_are_the_contract_and_it_listens_on_tcp_only_when_told(
    orca_home: Path,
) -> None:
    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_actor("gateway", orca_home) as gateway:
            hello = await gateway.client.invoke(sys_contract.HELLO, NoArgs())
            status = await gateway.client.invoke(gw.STATUS, NoArgs())
            head = await gateway.client.invoke(gw.EVENTS, gw.EventsArgs(after=-1))
            assert status.local_socket is not None
            mode = os.stat(status.local_socket.removeprefix("ipc://")).st_mode
    assert set(hello.capabilities) == set(gw.CONTRACT.ops) | set(sys_contract.CONTRACT.ops)
    # No tcp listener; the Unix socket ssh forwards reach is always there, owner-only,
    # behind the same CURVE server and ZAP handler.
    assert status.listening is None and status.zap_alive
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
    assert status.local_socket.endswith("/gateway.remote")
    assert head.next == 0 and not head.gap


async def test_listening_gateway_reports_its_endpoint_and_key(orca_home: Path) -> None:
    listen = f"tcp://127.0.0.1:{free_port()}"
    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_actor("gateway", orca_home, {"ORCA_GATEWAY_LISTEN": listen}) as gateway:
            status = await gateway.client.invoke(gw.STATUS, NoArgs())
    assert status.listening == listen and status.zap_alive and len(status.server_key) == 40


async def test_a_listen_value_that_is_not_an_endpoint_is_refused_at_start(orca_home: Path) -> None:
    actor = start_actor("gateway", orca_home, {"ORCA_GATEWAY_LISTEN": "0.0.0.0"})
    with trio.fail_after(TEST_TIMEOUT_S):
        await wait_exited(actor.proc.pid)
    assert actor.proc.wait() != 0


async def test_an_ssh_host_the_state_lacks_is_recorded_once_the_store_answers(
    orca_home: Path,
) -> None:
    """An SSH host in the pin file (`orca host add` while the store was down, or from
    before `sshTargets`) becomes one of the state's SSH targets as soon as the store
    answers; a target the state has and the pin file does not stays."""
    import zmq
    from support.actors import event_tap

    from orca.contracts import store
    from orca.paths import resolve_paths
    from orca.remote.hosts import add_ssh_host
    from orca.remote.ssh import SshTarget

    paths = resolve_paths()
    server_key = zmq.curve_keypair()[0].decode()
    add_ssh_host(
        paths, "buildbox", SshTarget(destination="me@nowhere.invalid", port=2200), server_key
    )
    other = {"id": "imported", "label": "imported", "destination": "elsewhere"}
    with trio.fail_after(TEST_TIMEOUT_S * 2):
        async with running_actor("store", orca_home) as st:
            await st.invoke(store.SSH_TARGET_UPSERT, store.SshTargetArgs(ssh_target=other))
        # The gateway starts with the store down; the store comes back after it.
        async with (
            running_actor("gateway", orca_home),
            running_actor("store", orca_home) as st,
            event_tap(orca_home, store.CONTRACT) as tap,
        ):
            while True:
                listed = (await st.invoke(store.SSH_TARGET_LIST, NoArgs())).ssh_targets
                if any(t.id == "buildbox" for t in listed):
                    break
                await tap.next_of(store.SSH_TARGET_UPSERTED)
    assert sorted((t.id, t.label, t.destination, t.port) for t in listed) == [
        ("buildbox", "buildbox", "me@nowhere.invalid", 2200),
        ("imported", "imported", "elsewhere", None),
    ]
