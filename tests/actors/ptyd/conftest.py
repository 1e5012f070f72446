"""Real PTY sessions on temp dirs, with every child killed by pid at the end."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
from support.ptyd_harness import Harness, RecordingListener

from actors.ptyd.sessions import SessionTable, TableConfig


@pytest.fixture
async def harness(tmp_path: Path) -> AsyncIterator[Harness]:
    listener = RecordingListener()
    config = TableConfig(
        history_dir=tmp_path / "history",
        hook_endpoint_file=tmp_path / "agent-hooks" / "endpoint.env",
        scrollback_bytes=64 * 1024,
        history_bytes=256 * 1024,
    )
    table = SessionTable(config, listener)
    async with trio.open_nursery() as nursery:
        yield Harness(table, listener, nursery, tmp_path)
        for session in table.sessions():
            session.send_signal(signal.SIGKILL)
        with trio.fail_after(5):
            for session in table.sessions():
                await session.exited.wait()
        nursery.cancel_scope.cancel()
