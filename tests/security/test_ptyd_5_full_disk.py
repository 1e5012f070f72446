"""Issue 16 item 5 (ptyd part): a full disk must not stop a terminal.

Before: ENOSPC from ``splice`` into the history journal raised out of the session's
reader, so the agent's output stopped (and the agent blocked on a full PTY). Now, on a
real 2 MiB tmpfs ``ORCA_HOME`` filled to the last byte, the journal degrades: the agent
and ptyd keep their pids, output keeps arriving through ``term.read`` and ``term.attach``,
``sys.stats`` reports ``ptyd.history`` degraded with the dropped bytes, and once space
returns the journal resumes (the newest output is on disk again).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import trio
from support.actors import EventTap
from support.ptyd_harness import PtydProcess, running_ptyd
from support.tmpfs import fill, needs_tmpfs

from actors.ptyd.history import history_stem
from orca.client.cursor import StreamCursor
from orca.contracts import ptyd as contract
from orca.contracts import sys as sys_contract
from orca.paths import resolve_paths

WT = "repo1::/w/full-disk"
# An agent that prints continuously (~100 KB/s): numbered lines, flushed one by one.
AGENT = (
    "import itertools, sys, time\n"
    "for i in itertools.count():\n"
    "    sys.stdout.write(f'line {i:08d} ' + 'x' * 90 + '\\n'); sys.stdout.flush()\n"
    "    time.sleep(0.001)\n"
)


class Reader:
    """Follows one session's output: ``term.read`` from the cursor, waking on events."""

    def __init__(self, ptyd: PtydProcess, tap: EventTap, session_id: str) -> None:
        self.ptyd, self.tap, self.session_id = ptyd, tap, session_id
        self.cursor = StreamCursor(0)
        self.received = bytearray()

    async def more(self, count: int) -> bytes:
        """At least ``count`` more bytes of output (each wait is for an event)."""
        start = len(self.received)
        while len(self.received) - start < count:
            reply = await self.ptyd.invoke(
                contract.READ,
                contract.ReadArgs(session_id=self.session_id, since=self.cursor.offset),
            )
            assert not reply.gap, "the scrollback lost output"
            fresh = self.cursor.accept(reply.offset, reply.data)
            if fresh:
                self.received += fresh
            else:
                await self.tap.receive()  # output or heartbeat: look again
        return bytes(self.received[start:])


async def _history(ptyd: PtydProcess) -> dict[str, Any]:
    stats: dict[str, Any] = await ptyd.invoke(sys_contract.STATS)
    history: dict[str, Any] = stats["ptyd"]["history"]
    return history


def _last_line(data: bytes) -> bytes:
    return data.rstrip(b"\r\n").rsplit(b"\r\n", 1)[-1]


@needs_tmpfs
async def test_full_disk_degrades_the_journal_and_the_terminal_keeps_streaming(
    small_home: Path,
) -> None:
    history_dir = resolve_paths({"ORCA_HOME": str(small_home)}).terminal_history_dir
    env = {"ORCA_PTYD_HISTORY_BYTES": str(512 * 1024)}
    with trio.fail_after(60):
        async with running_ptyd(small_home, env) as ptyd:
            ptyd_pid = ptyd.proc.pid
            tap = await ptyd.tap([contract.OUTPUT.type])
            spawned = await ptyd.invoke(
                contract.SPAWN,
                contract.SpawnArgs(argv=[sys.executable, "-c", AGENT], cwd="/", worktree_id=WT),
            )
            sid, agent_pid = spawned.session_id, spawned.pid
            reader = Reader(ptyd, tap, sid)
            await reader.more(20_000)
            assert (await _history(ptyd))["degraded"] == 0

            filler = fill(small_home)
            # The journal is refused within a page of output; the terminal streams on.
            while (history := await _history(ptyd))["degraded"] == 0:
                await reader.more(4096)
            assert history["lastError"].startswith("ENOSPC"), history
            degraded_at = history["droppedBytes"]
            # Output ptyd had when it counted (read by us or not yet): counted already.
            (row,) = (await ptyd.invoke(contract.LIST, contract.ListArgs())).sessions
            seen = await reader.more(100_000)
            history = await _history(ptyd)
            assert history["degraded"] == 1
            produced_since = reader.cursor.offset - row.end_offset
            assert produced_since >= 50_000, "the reader kept up with the agent"
            assert history["droppedBytes"] >= degraded_at + produced_since  # none journaled
            assert seen.count(b"line ") >= 900  # whole lines, in order
            numbers = [int(line.split()[1]) for line in seen.split(b"\r\n")[1:-1]]
            assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))

            attached = await ptyd.invoke(contract.ATTACH, contract.AttachArgs(session_id=sid))
            assert attached.offset == attached.end >= reader.cursor.offset
            assert b"line " in attached.data  # the screen, from the in-memory model

            assert ptyd.proc.poll() is None and ptyd.proc.pid == ptyd_pid
            os.kill(agent_pid, 0)  # the agent lives (raises if it is gone)
            rows = (await ptyd.invoke(contract.LIST, contract.ListArgs())).sessions
            assert [(r.session_id, r.pid, r.running) for r in rows] == [(sid, agent_pid, True)]

            filler.unlink()
            while (history := await _history(ptyd))["degraded"] == 1:
                await reader.more(4096)
            assert history["resumed"] == 1
            after = await reader.more(20_000)
            stem = history_stem(history_dir, sid)
            meta = json.loads(await trio.Path(f"{stem}.meta.json").read_text())
            assert meta["segments"][0]["raw"] > 0  # a fresh layout after the hole
            journaled = await trio.Path(f"{stem}.{meta['segments'][-1]['file']}").read_bytes()
            assert _last_line(after) in journaled  # the newest output is on disk again
            assert ptyd.proc.poll() is None and ptyd.proc.pid == ptyd_pid
            os.kill(agent_pid, 0)
