"""A real ``hooks`` actor process on a temp ORCA_HOME, driven over real HTTP and RPC."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import trio
import zmq

from actors.hooks.endpoint_file import read_endpoint_env
from orca.actor import RpcClient
from orca.actor.zsocket import ZSocket, new_socket
from orca.contracts import hooks as contract
from orca.contracts import store as store_contract
from orca.contracts import sys as sys_contract
from orca.paths import OrcaPaths, resolve_paths
from orca.wire.envelope import Event, decode_event

ROOT = Path(__file__).resolve().parents[3]
START_TIMEOUT_S = 15.0
PANE = "tab-1:3f1c2a9e-0000-4000-8000-000000000001"
WT = "repo1::/src/wt-a"


class EventTap:
    """Every event the actor publishes, in order (a subscriber, as any reader would be)."""

    def __init__(self, endpoint: str) -> None:
        self._send, self.receive = trio.open_memory_channel[Event](100_000)
        sock = new_socket(zmq.SUB)
        for spec in contract.EVENTS:
            sock.setsockopt(zmq.SUBSCRIBE, spec.type.encode())
        sock.setsockopt(zmq.SUBSCRIBE, sys_contract.HEARTBEAT_TYPE.encode())
        sock.connect(endpoint)
        self._zs = ZSocket(sock, self._on_message)

    def _on_message(self, frames: list[bytes]) -> None:
        self._send.send_nowait(decode_event(frames[-1]))

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await self._zs.run(task_status=task_status)

    def close(self) -> None:
        self._zs.close()


@dataclass
class HooksProcess:
    home: Path
    paths: OrcaPaths
    proc: subprocess.Popen[bytes]
    client: RpcClient
    tap: EventTap
    port: int
    secret: str

    async def call(self, op: str, args: dict[str, Any] | None = None) -> Any:
        """An op by name with a raw map (tests of malformed or hand-shaped requests)."""
        return await self.client.call(op, args or {})

    async def rows(self) -> list[dict[str, Any]]:
        """The snapshot's rows as the wire maps (camelCase keys)."""
        snapshot = await self.client.invoke(contract.SNAPSHOT)
        rows: list[dict[str, Any]] = msgspec.to_builtins(snapshot.rows)
        return rows

    async def post(
        self,
        agent: str,
        payload: object,
        *,
        secret: str | None = None,
        pane: str = PANE,
        extra: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, Any]]:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return await post_hook(
            self.port,
            secret if secret is not None else self.secret,
            agent,
            body,
            {"X-Orca-Pane-Key": pane, "X-Orca-Worktree-Id": WT, **(extra or {})},
        )


async def post_hook(
    port: int, secret: str, agent: str, body: bytes, headers: dict[str, str]
) -> tuple[int, dict[str, Any]]:
    head = "".join(f"{k}: {v}\r\n" for k, v in {"X-Orca-Hook-Secret": secret, **headers}.items())
    request = (
        f"POST /hook/{agent} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n{head}"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(request)
        chunks = []
        while chunk := await stream.receive_some(65536):
            chunks.append(chunk)
    head_bytes, _, reply = b"".join(chunks).partition(b"\r\n\r\n")
    return int(head_bytes.split(b" ", 2)[1]), json.loads(reply) if reply else {}


def _start(home: Path, actor: str = "hooks") -> subprocess.Popen[bytes]:
    env = dict(os.environ, ORCA_HOME=str(home))
    env.pop("ORCA_SUPERVISOR", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    with open(home / f"{actor}.stderr", "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", f"actors.{actor}"], env=env, stdout=log, stderr=log, cwd=ROOT
        )


@asynccontextmanager
async def running_store(home: Path) -> AsyncIterator[RpcClient]:
    """A real ``store`` actor on ``home``, answering RPC; stopped by pid on exit."""
    paths = resolve_paths({"ORCA_HOME": str(home)})
    proc = _start(home, "store")
    client = RpcClient(paths.ipc_endpoint("store", "rpc"), timeout=START_TIMEOUT_S)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(client.run)
            await client.invoke(store_contract.STATE_SNAPSHOT, timeout=START_TIMEOUT_S)
            client.timeout = 5.0
            try:
                yield client
            finally:
                nursery.cancel_scope.cancel()
    finally:
        client.close()
        with trio.CancelScope(shield=True):
            await stop(proc)


async def stop(proc: subprocess.Popen[bytes]) -> int:
    """SIGTERM (the actor flushes), SIGKILL after a deadline; always reaps. Returns rc."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        with trio.move_on_after(5):
            await trio.to_thread.run_sync(proc.wait)
        if proc.poll() is None:
            proc.kill()
    return await trio.to_thread.run_sync(proc.wait)


@asynccontextmanager
async def running_hooks(home: Path) -> AsyncIterator[HooksProcess]:
    """Start the actor, wait until it answers a snapshot, yield; stop it by pid."""
    paths = resolve_paths({"ORCA_HOME": str(home)})
    proc = _start(home)
    client = RpcClient(paths.ipc_endpoint("hooks", "rpc"), timeout=START_TIMEOUT_S)
    tap = EventTap(paths.ipc_endpoint("hooks", "pub"))
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(client.run)
            await nursery.start(tap.run)
            # The first answered call is the readiness signal (the RPC socket binds
            # after setup, which writes endpoint.env first).
            await client.invoke(contract.SNAPSHOT, timeout=START_TIMEOUT_S)
            client.timeout = 5.0
            endpoint = await client.invoke(contract.ENDPOINT)
            fields = read_endpoint_env(Path(endpoint.endpoint_file))
            assert int(fields["ORCA_HOOK_PORT"]) == endpoint.port
            # PUB drops events for a subscription still in flight (slow joiner); the
            # first heartbeat proves ours is live before any test event is published.
            await next_event_of(tap, sys_contract.HEARTBEAT_TYPE)
            try:
                yield HooksProcess(
                    home, paths, proc, client, tap, endpoint.port, fields["ORCA_HOOK_SECRET"]
                )
            finally:
                nursery.cancel_scope.cancel()
    finally:
        client.close()
        tap.close()
        with trio.CancelScope(shield=True):  # reap the process even when the test timed out
            await stop(proc)


async def next_event_of(tap: EventTap, type_: str) -> Event:
    while True:
        event = await tap.receive.receive()
        if event.type == type_:
            return event


async def next_event(hooks: HooksProcess, type_: str) -> Event:
    return await next_event_of(hooks.tap, type_)
