"""The standard-library ZMTP client (``orca.client.zmtp``, used by ``orca.client.sync``
for ``ipc://``) against real pyzmq ROUTER actors: real ``store``, ``hooks`` and ``ptyd``
processes answer it byte for byte as they answer a pyzmq DEALER, errors included."""

from __future__ import annotations

import functools
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import trio
from support.actors import running_actors

from orca.client import sync
from orca.contracts import hooks, ptyd, store
from orca.contracts import sys as sys_contract
from orca.contracts.base import Op
from orca.model.codec import to_builtins
from orca.paths import resolve_paths
from orca.wire.codec import decode_any
from orca.wire.errors import BadRequest, OrcaError, Unavailable, UnknownOp

WAIT_S = 10.0
ROWS = 300  # like `orca worktree ps` with 100 worktrees x 3 panes: a reply of many reads


async def both(endpoint: str, op: str, args: Any = None) -> tuple[object, object]:
    """The raw reply bytes (or the error) of one request over ZMTP and over pyzmq."""

    def over(transport: str) -> object:
        try:
            if transport == "zmtp":
                path = endpoint[len("ipc://") :]
                return sync._roundtrip_zmtp(endpoint, path, op, args, WAIT_S)
            return sync._roundtrip_zmq(endpoint, op, args, WAIT_S, None)
        except OrcaError as exc:
            return (type(exc), exc.message)

    zmtp = await trio.to_thread.run_sync(functools.partial(over, "zmtp"))
    zmq = await trio.to_thread.run_sync(functools.partial(over, "zmq"))
    return zmtp, zmq


async def test_real_actors_answer_zmtp_exactly_as_pyzmq(tmp_path: Path) -> None:
    """hello, typed listings, a 300-row snapshot, unknown ops, bad args and a 2 MB
    request: the same bytes or the same error both ways."""
    home = tmp_path / "home"
    with trio.fail_after(90):
        async with running_actors(home, "store", "hooks", "ptyd") as running:
            paths = resolve_paths({"ORCA_HOME": str(home)})
            hk = paths.ipc_endpoint(hooks.CONTRACT.actor, "rpc")
            for i in range(ROWS):
                row = hooks.IngestOscArgs(
                    pane_key=f"tab-{i // 3}:00000000-0000-4000-8000-{i % 3:012d}",
                    worktree_id=f"repo1::/w/wt-{i // 3:03d}",
                    terminal_handle=f"term_{i}",
                    payload=json.dumps({"state": "working", "agent": "claude"}),
                )
                invoke = functools.partial(sync.invoke, hooks.INGEST_OSC, row, paths=paths)
                await trio.to_thread.run_sync(invoke)
            listings: list[tuple[str, Op[Any, Any]]] = [
                (store.CONTRACT.actor, store.REPO_LIST),
                (hooks.CONTRACT.actor, hooks.SNAPSHOT),
                (ptyd.CONTRACT.actor, ptyd.LIST),
            ]
            for actor, op in listings:
                endpoint = paths.ipc_endpoint(actor, "rpc")
                zmtp, zmq = await both(endpoint, sys_contract.HELLO.name)
                assert isinstance(zmtp, bytes) and zmtp == zmq
                typed = functools.partial(sync.invoke, op, endpoint=endpoint, timeout=WAIT_S)
                via_zmtp = await trio.to_thread.run_sync(typed)
                assert to_builtins(via_zmtp) == to_builtins(await running[actor].invoke(op))
            snapshot, _ = await both(hk, hooks.SNAPSHOT.name)
            assert isinstance(snapshot, bytes) and len(snapshot) > 65536
            assert len(sync.invoke(hooks.SNAPSHOT, paths=paths).rows) == ROWS

            st = paths.ipc_endpoint(store.CONTRACT.actor, "rpc")
            cases: list[tuple[str, Any, type[OrcaError] | None]] = [
                (f"{store.CONTRACT.actor}.no-such-op", None, UnknownOp),
                (store.REPO_ADD.name, {"path": 5}, BadRequest),
                (sys_contract.PING.name, {"pad": "x" * 2_000_000}, None),
            ]
            for op_name, args, error in cases:
                zmtp, zmq = await both(st, op_name, args)
                if error is None:
                    assert isinstance(zmtp, bytes) and isinstance(zmq, bytes)
                    assert decode_any(zmtp).keys() == decode_any(zmq).keys()
                else:
                    assert isinstance(zmtp, tuple) and zmtp[0] is error and zmtp == zmq
        # The actors are stopped: their sockets are gone, and a call says so at once.
        with pytest.raises(Unavailable, match="orca is not running"):
            sync.invoke(store.REPO_LIST, paths=paths, timeout=WAIT_S)


async def test_an_in_process_rpc_server_serves_many_zmtp_calls_in_a_row() -> None:
    """One connection per call: 200 sequential calls through the runtime's RpcServer,
    every reply matched to its request."""
    from orca.actor import RpcServer

    short = Path(tempfile.mkdtemp(prefix="zmtp-", dir="/tmp"))  # sun_path: 107 bytes
    endpoint = f"ipc://{short}/calc.rpc"
    server = RpcServer("calc")
    server.bind(endpoint)
    try:
        with trio.fail_after(60):
            async with trio.open_nursery() as nursery:
                await nursery.start(server.serve)

                def calls() -> list[str]:
                    return [
                        sync.call_endpoint(endpoint, sys_contract.HELLO.name, timeout=WAIT_S)[
                            "name"
                        ]
                        for _ in range(200)
                    ]

                names = await trio.to_thread.run_sync(calls)
                nursery.cancel_scope.cancel()
    finally:
        server.close()
        shutil.rmtree(short, ignore_errors=True)
    assert names == ["calc"] * 200
