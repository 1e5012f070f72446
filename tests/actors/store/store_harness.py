"""Real store processes for tests: started standalone, readiness read from their log.

``running_store`` runs ``python -m actors.store`` exactly as the supervisor would (minus
the supervisor link). ``StoreZygote`` is for the crash loop: a process that has already
imported the store forks one fresh store process per request, so 200 kill -9 / restart
cycles fit in a minute; each child runs the same ``run_actor("store", setup)`` as
``python -m actors.store`` and is killed by pid. Readiness is the "<pid>] ... ready on"
log line (an event on a pipe, not a sleep); death is awaited on a pidfd.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import trio

from orca.actor.client import RpcClient
from orca.contracts.base import Op
from orca.paths import resolve_paths

REPO = Path(__file__).resolve().parents[3]
ZYGOTE = Path(__file__).with_name("store_zygote.py")
R = TypeVar("R")
_READY = re.compile(rb"store\[(\d+)\] INFO orca\.actor\.app: store ready on")


def store_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["ORCA_HOME"] = str(home)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    for name in ("ORCA_TCP_HOST", "ORCA_SUPERVISOR", "ORCA_SUPERVISOR_PID"):
        env.pop(name, None)
    return env


class LogWatcher:
    """Reads a stderr pipe line by line; wakes waiters when a store reports ready."""

    def __init__(self) -> None:
        self.text = bytearray()
        self.ready_pids: set[int] = set()
        self._changed = trio.Event()

    async def run(self, stream: trio.abc.ReceiveStream) -> None:
        async for chunk in stream:
            self.text += chunk
            self.ready_pids.update(int(m.group(1)) for m in _READY.finditer(self.text))
            self._changed.set()
            self._changed = trio.Event()
        self._changed.set()

    async def wait_ready(self, pid: int) -> None:
        while pid not in self.ready_pids:
            await self._changed.wait()


async def wait_dead(pid: int) -> None:
    """Wait for ``pid`` to exit (pidfd becomes readable); immediate if already gone."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        await trio.lowlevel.wait_readable(fd)
    finally:
        os.close(fd)


class StoreClient:
    def __init__(self, home: Path, nursery: trio.Nursery, timeout: float = 5.0) -> None:
        endpoint = resolve_paths({"ORCA_HOME": str(home)}).ipc_endpoint("store", "rpc")
        self.rpc = RpcClient(endpoint, timeout=timeout)
        self._nursery = nursery

    async def start(self) -> None:
        await self._nursery.start(self.rpc.run)

    async def invoke(self, op: Op[Any, R], args: Any = None) -> R:
        """The typed call (the contract's args Struct in, its typed result out)."""
        return await self.rpc.invoke(op, args)

    async def call(self, op: str, args: dict[str, Any] | None = None) -> Any:
        """The untyped primitive: raw builtins of the reply (wire-shape checks)."""
        return await self.rpc.call(op, args or {})

    def close(self) -> None:
        self.rpc.close()


class RunningStore:
    def __init__(self, process: trio.Process, log: LogWatcher, client: StoreClient) -> None:
        self.process = process
        self.log = log
        self.client = client
        self.pid = process.pid

    async def invoke(self, op: Op[Any, R], args: Any = None) -> R:
        return await self.client.invoke(op, args)

    async def call(self, op: str, args: dict[str, Any] | None = None) -> Any:
        return await self.client.call(op, args)

    async def stop(self) -> int:
        """SIGTERM (graceful: the store flushes) and wait for the exit code."""
        self.process.send_signal(signal.SIGTERM)
        return await self.process.wait()


@asynccontextmanager
async def running_store(home: Path) -> AsyncIterator[RunningStore]:
    """``python -m actors.store`` in ``home``; killed by pid when the block ends."""
    async with trio.open_nursery() as nursery:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "actors.store"],
            env=store_env(home),
            stdin=None,
            stdout=None,
            stderr=-1,
        )
        log = LogWatcher()
        assert process.stderr is not None
        nursery.start_soon(log.run, process.stderr)
        client = StoreClient(home, nursery)
        try:
            with trio.fail_after(30):
                await log.wait_ready(process.pid)
            await client.start()
            yield RunningStore(process, log, client)
        finally:
            if process.returncode is None:
                process.kill()
            await process.wait()
            nursery.cancel_scope.cancel()
    client.close()


class StoreZygote:
    """A pre-imported store that forks fresh store processes on request."""

    def __init__(self, process: trio.Process, log: LogWatcher) -> None:
        self.process = process
        self.log = log
        self._pids = bytearray()

    async def spawn(self) -> int:
        assert self.process.stdin is not None and self.process.stdout is not None
        await self.process.stdin.send_all(b"spawn\n")
        while b"\n" not in self._pids:
            chunk = await self.process.stdout.receive_some()
            if not chunk:
                raise RuntimeError(f"zygote exited: {self.log.text.decode(errors='replace')}")
            self._pids += chunk
        line, _, rest = bytes(self._pids).partition(b"\n")
        self._pids = bytearray(rest)
        pid = int(line)
        await self.log.wait_ready(pid)
        return pid


@asynccontextmanager
async def store_zygote(home: Path) -> AsyncIterator[StoreZygote]:
    async with trio.open_nursery() as nursery:
        process = await trio.lowlevel.open_process(
            [sys.executable, str(ZYGOTE)], env=store_env(home), stdin=-1, stdout=-1, stderr=-1
        )
        log = LogWatcher()
        assert process.stderr is not None
        nursery.start_soon(log.run, process.stderr)
        try:
            yield StoreZygote(process, log)
        finally:
            process.kill()
            await process.wait()
            nursery.cancel_scope.cancel()
