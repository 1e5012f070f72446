"""Helpers for PTY session tests: a recording listener, a harness, event-driven waits."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import trio

from actors.ptyd.scrollback import Chunk
from actors.ptyd.session import Session
from actors.ptyd.sessions import SessionTable, SpawnRequest

WORKTREE = "repo1::/tmp/wt"


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
        req = SpawnRequest(argv=argv, cwd=str(kw.pop("cwd", self.tmp)), worktree_id=WORKTREE, **kw)  # type: ignore[arg-type]
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
