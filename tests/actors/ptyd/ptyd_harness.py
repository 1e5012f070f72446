"""Helpers for PTY session tests: a recording listener, a harness, event-driven waits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import trio
import zmq

from actors.ptyd.scrollback import Chunk
from actors.ptyd.session import Session
from actors.ptyd.sessions import SessionTable
from orca.actor.zsocket import ZSocket, new_socket
from orca.contracts.ptyd import SpawnArgs
from orca.wire.envelope import Event, decode_event

WORKTREE = "repo1::/tmp/wt"
ROOT = Path(__file__).resolve().parents[3]


@dataclass
class RecordingListener:
    """Collects what sessions report (a sink, not a stand-in for a component)."""

    payloads: list[bytes] = field(default_factory=list)
    exits: list[str] = field(default_factory=list)
    output_events: int = 0

    def on_output(self, session: Session, chunk: Chunk) -> None:
        self.output_events += 1

    def on_osc(self, session: Session, payload: bytes) -> None:
        self.payloads.append(payload)

    def on_exit(self, session: Session) -> None:
        self.exits.append(session.session_id)


@dataclass
class Harness:
    table: SessionTable
    listener: RecordingListener
    nursery: trio.Nursery
    tmp: Path

    def start(self, argv: list[str], **kw: object) -> Session:
        req = SpawnArgs(argv=argv, cwd=str(kw.pop("cwd", self.tmp)), worktree_id=WORKTREE, **kw)  # type: ignore[arg-type]
        session = self.table.spawn(req)
        self.nursery.start_soon(session.run)
        return session


async def read_until(session: Session, needle: bytes, start: int = 0) -> bytes:
    """Wait (event-driven) until the session's output since ``start`` contains ``needle``."""
    snapshot, sub = session.subscribe()
    try:
        seen = snapshot.data[max(0, start - snapshot.offset) :]
        while needle not in seen:
            chunk = await sub.receive.receive()
            seen += chunk.data
        return seen
    finally:
        session.unsubscribe(sub)


# -- actor processes -----------------------------------------------------------------

ACTOR_START_TIMEOUT_S = 15.0


def start_actor_process(
    name: str, home: Path, extra_env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``python -m actors.<name>`` on ``home`` (ORCA_HOME); the caller stops it by pid."""
    env = dict(os.environ, ORCA_HOME=str(home), **(extra_env or {}))
    env.pop("ORCA_SUPERVISOR", None)
    with open(home / f"{name}.stderr", "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", f"actors.{name}"], env=env, stdout=log, stderr=log, cwd=ROOT
        )


async def stop_actor_process(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after a deadline; always reaps."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        with trio.move_on_after(5):
            await trio.to_thread.run_sync(proc.wait)
        if proc.poll() is None:
            proc.kill()
    await trio.to_thread.run_sync(proc.wait)


class EventTap:
    """Subscribe to an actor's PUB socket; events arrive in ``receive`` (unbounded test tap)."""

    def __init__(self, endpoint: str, prefixes: list[str]) -> None:
        self._send, self.receive = trio.open_memory_channel[Event](10_000)
        sock = new_socket(zmq.SUB)
        for prefix in prefixes:
            sock.setsockopt(zmq.SUBSCRIBE, prefix.encode())
        sock.connect(endpoint)
        self._zs = ZSocket(sock, self._on_message)

    def _on_message(self, frames: list[bytes]) -> None:
        self._send.send_nowait(decode_event(frames[-1]))

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await self._zs.run(task_status=task_status)

    def close(self) -> None:
        self._zs.close()

    async def next_of(self, type_: str) -> Event:
        while True:
            event = await self.receive.receive()
            if event.type == type_:
                return event
