"""ptyd answers a program's terminal queries exactly once, from the session's model."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
from support.ptyd_harness import PtydProcess as Ptyd
from support.ptyd_harness import collect_output, running_ptyd

from orca.client.cursor import StreamCursor
from orca.contracts import ptyd as contract
from orca.contracts import sys as sys_contract
from orca.model.vt import QueryFilter

WT = "repo1::/tmp/wt-queries"
# Asks DSR, reads the answer, prints it; then asks DA and OSC 11 and prints every
# byte it receives up to "q": anything beyond the answers would be "typed" garbage.
PROGRAM = r"""
import os, sys, termios, tty
tty.setraw(0)
def read_until(end):
    got = b""
    while not got.endswith(end):
        got += os.read(0, 1)
    return got
os.write(1, b"\x1b[6n")
os.write(1, b"DSR:%r\r\n" % read_until(b"R"))
os.write(1, b"\x1b[c\x1b]11;?\x07")
os.write(1, b"REST:%r\r\n" % read_until(b"q"))
"""


@pytest.fixture
async def ptyd(tmp_path: Path) -> AsyncIterator[Ptyd]:
    async with running_ptyd(tmp_path / "home") as p:
        yield p


async def test_queries_are_answered_once_and_never_replayed(ptyd: Ptyd, tmp_path: Path) -> None:
    """With no client attached the program's DSR is answered; re-attaching (twice, as
    two clients) shows a screen with no query in it and types nothing into the program."""
    with trio.fail_after(30):
        # Live before the spawn: the program's first output must not be missed.
        tap = await ptyd.tap([contract.output_topic(""), sys_contract.HEARTBEAT_TYPE])
        spawned = await ptyd.call(
            "term.spawn",
            {"argv": [sys.executable, "-c", PROGRAM], "cwd": str(tmp_path), "worktreeId": WT},
        )
        sid = spawned["sessionId"]
        cursor = StreamCursor(0)
        seen = await collect_output(tap, sid, cursor, ptyd, b"R'\r\n")
        assert b"DSR:b'\\x1b[1;1R'" in seen  # answered with nobody attached
        first = await ptyd.call("term.attach", {"sessionId": sid})
        second = await ptyd.call("term.attach", {"sessionId": sid})
        for attached in (first, second):
            assert QueryFilter().feed(attached["data"]) == attached["data"]
            assert b"\x1b[6n" not in attached["data"] and b"DSR:" in attached["data"]
        await ptyd.call("term.write", {"sessionId": sid, "text": "q"})
        rest = await collect_output(tap, sid, cursor, ptyd, b"q'\r\n")
        # Exactly one DA answer, one OSC 11 answer, then the "q" typed: nothing else.
        typed = rest.split(b"REST:", 1)[1].split(b"\r\n", 1)[0]
        assert typed.startswith(b"b'\\x1b[?") and typed.count(b"c\\x1b]11;rgb:") == 1
        assert typed.endswith(b"\\x07q'") and typed.count(b"R") == 0
