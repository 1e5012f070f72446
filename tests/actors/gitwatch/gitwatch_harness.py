"""Real ``store`` and ``gitwatch`` actor processes on a temp ORCA_HOME."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio
import zmq

from orca.actor import RpcClient
from orca.actor.zsocket import ZSocket, new_socket
from orca.paths import OrcaPaths, resolve_paths
from orca.wire.envelope import Event, decode_event

ROOT = Path(__file__).resolve().parents[3]
START_TIMEOUT_S = 15.0


class EventTap:
    """Every event an actor publishes, in order."""

    def __init__(self, endpoint: str) -> None:
        self._send, self.receive = trio.open_memory_channel[Event](100_000)
        sock = new_socket(zmq.SUB)
        sock.setsockopt(zmq.SUBSCRIBE, b"")
        sock.connect(endpoint)
        self._zs = ZSocket(sock, self._on_message)

    def _on_message(self, frames: list[bytes]) -> None:
        self._send.send_nowait(decode_event(frames[-1]))

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await self._zs.run(task_status=task_status)

    async def next_matching(self, predicate: Callable[[Event], bool]) -> Event:
        while True:
            event = await self.receive.receive()
            if predicate(event):
                return event

    def close(self) -> None:
        self._zs.close()


@dataclass
class Actors:
    home: Path
    paths: OrcaPaths
    store: RpcClient
    gitwatch: RpcClient
    events: EventTap  # gitwatch's events
    ptyd: RpcClient | None = None

    async def git(self, op: str, args: dict[str, Any] | None = None, timeout: float = 10.0) -> Any:
        return await self.gitwatch.call(op, args or {}, timeout=timeout)


def _start(home: Path, actor: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, ORCA_HOME=str(home))
    env.pop("ORCA_SUPERVISOR", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    with open(home / f"{actor}.stderr", "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", f"actors.{actor}"], env=env, stdout=log, stderr=log, cwd=ROOT
        )


async def stop(proc: subprocess.Popen[bytes]) -> int:
    """SIGTERM, SIGKILL after a deadline; always reaps (by pid). Returns the exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        with trio.move_on_after(5):
            await trio.to_thread.run_sync(proc.wait)
        if proc.poll() is None:
            proc.kill()
    return await trio.to_thread.run_sync(proc.wait)


@asynccontextmanager
async def running_actors(home: Path, *, with_ptyd: bool = False) -> AsyncIterator[Actors]:
    """Start store, gitwatch (and ptyd), wait until they answer, yield; stop them by pid."""
    await trio.to_thread.run_sync(lambda: home.mkdir(parents=True, exist_ok=True))
    paths = resolve_paths({"ORCA_HOME": str(home)})
    names = ["store", "gitwatch", *(["ptyd"] if with_ptyd else [])]
    procs = [_start(home, name) for name in names]
    clients = {
        name: RpcClient(paths.ipc_endpoint(name, "rpc"), timeout=START_TIMEOUT_S) for name in names
    }
    tap = EventTap(paths.ipc_endpoint("gitwatch", "pub"))
    try:
        async with trio.open_nursery() as nursery:
            for runner in (*(c.run for c in clients.values()), tap.run):
                await nursery.start(runner)
            await clients["store"].call("repo.list", {}, timeout=START_TIMEOUT_S)
            await clients["gitwatch"].call("gitwatch.snapshot", {}, timeout=START_TIMEOUT_S)
            if with_ptyd:
                await clients["ptyd"].call("term.list", {}, timeout=START_TIMEOUT_S)
            for client in clients.values():
                client.timeout = 10.0
            try:
                yield Actors(
                    home, paths, clients["store"], clients["gitwatch"], tap, clients.get("ptyd")
                )
            finally:
                nursery.cancel_scope.cancel()
    finally:
        for client in clients.values():
            client.close()
        tap.close()
        for proc in reversed(procs):
            await stop(proc)
