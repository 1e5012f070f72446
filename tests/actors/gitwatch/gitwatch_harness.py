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

from orca.actor import RpcClient
from orca.actor.subscriber import Subscriber
from orca.contracts import Contract, store
from orca.contracts import gitwatch as gw
from orca.contracts.sys import HEARTBEAT_TYPE
from orca.paths import OrcaPaths, resolve_paths
from orca.wire.envelope import Event

ROOT = Path(__file__).resolve().parents[3]
START_TIMEOUT_S = 15.0


class EventTap:
    """Every event an actor publishes, decoded by its contract, in order.

    Events are followed through the shared ``Subscriber`` (the way actors follow each
    other), on every topic. An event type the contract does not declare lands in
    ``undeclared``, a malformed one in ``stats.malformed``: :meth:`check` fails on
    either, so every test run also checks the actor publishes only its contract.
    """

    def __init__(self, endpoint: str, contract: Contract) -> None:
        self._send, self.receive = trio.open_memory_channel[Any](100_000)
        self.undeclared: list[Event] = []
        self._sub = Subscriber(
            endpoint,
            contract.events.values(),
            lambda _envelope, typed: self._send.send_nowait(typed),
            consumer=f"test<-{contract.actor}",
            topics=[""],
            on_other=self._other,
        )

    def _other(self, event: Event) -> None:
        if event.type != HEARTBEAT_TYPE:
            self.undeclared.append(event)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await self._sub.run(task_status=task_status)

    async def next_matching(self, predicate: Callable[[Any], bool]) -> Any:
        """The next typed event (a contract Struct) for which ``predicate`` holds."""
        while True:
            event = await self.receive.receive()
            if predicate(event):
                return event

    def check(self) -> None:
        assert self.undeclared == [], f"events outside the contract: {self.undeclared}"
        assert self._sub.stats.malformed == 0, "an event did not match its declared Struct"

    def close(self) -> None:
        self._sub.close()


@dataclass
class Actors:
    home: Path
    paths: OrcaPaths
    store: RpcClient
    gitwatch: RpcClient
    events: EventTap  # gitwatch's events
    ptyd: RpcClient | None = None


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
    tap = EventTap(paths.ipc_endpoint("gitwatch", "pub"), gw.CONTRACT)
    try:
        async with trio.open_nursery() as nursery:
            for runner in (*(c.run for c in clients.values()), tap.run):
                await nursery.start(runner)
            await clients["store"].invoke(store.REPO_LIST, timeout=START_TIMEOUT_S)
            await clients["gitwatch"].invoke(gw.SNAPSHOT, timeout=START_TIMEOUT_S)
            if with_ptyd:
                await clients["ptyd"].call("term.list", {}, timeout=START_TIMEOUT_S)
            for client in clients.values():
                client.timeout = 10.0
            try:
                yield Actors(
                    home, paths, clients["store"], clients["gitwatch"], tap, clients.get("ptyd")
                )
                tap.check()
            finally:
                nursery.cancel_scope.cancel()
    finally:
        for client in clients.values():
            client.close()
        tap.close()
        for proc in reversed(procs):
            await stop(proc)
