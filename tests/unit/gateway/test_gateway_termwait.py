"""``gateway.termWait``'s waiter: woken by a session's output event, never by another
session's, bounded, and a session ptyd does not know is never watched."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import trio
import trio.testing

from actors.gateway import termwait
from actors.gateway.termwait import OutputWaits
from orca.actor.publisher import EventPublisher
from orca.contracts import gateway as gw
from orca.contracts import ptyd
from orca.wire.errors import NotFound


class FakePty:
    """``term.read`` over a growing buffer (what ptyd answers), counting reads."""

    def __init__(self) -> None:
        self.data = b""
        self.reads = 0

    async def read(self, args: ptyd.ReadArgs) -> ptyd.ReadResult:
        self.reads += 1
        if args.session_id != "s1":
            raise NotFound(f"no session {args.session_id}")
        since = len(self.data) if args.since is None else args.since
        return ptyd.ReadResult(
            session_id="s1",
            offset=since,
            data=self.data[since:],
            end=len(self.data),
            gap=False,
            running=True,
            exit_code=None,
            output_ended=False,
        )


@pytest.fixture
def endpoint(tmp_path: Path) -> str:
    return f"ipc://{tmp_path}/ptyd.pub"


@asynccontextmanager
async def serving(endpoint: str) -> AsyncIterator[tuple[EventPublisher, OutputWaits, trio.Nursery]]:
    """ptyd's publisher (heartbeats every 50 ms) and the waiters following it."""
    pub = EventPublisher(ptyd.CONTRACT.actor)
    pub.bind(endpoint)
    waits = OutputWaits(endpoint)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(waits.run)
            nursery.start_soon(pub.run_heartbeats, 0.05)
            yield pub, waits, nursery
            nursery.cancel_scope.cancel()
    finally:
        pub.close()


@dataclass
class Waiter:
    got: list[ptyd.ReadResult] = field(default_factory=list)
    answered: trio.Event = field(default_factory=trio.Event)


async def live_waiter(
    waits: OutputWaits, pty: FakePty, nursery: trio.Nursery, since: int
) -> Waiter:
    """A termWait of s1 from ``since``, waiting with its watch live (past its last
    re-read from before the first heartbeat)."""
    waiter = Waiter()

    async def wait() -> None:
        args = gw.TermWaitArgs(session_id="s1", since=since, wait_s=8.0)
        waiter.got.append(await waits.wait(args, pty.read))
        waiter.answered.set()

    nursery.start_soon(wait)
    await trio.testing.wait_all_tasks_blocked()  # the waiter made its watch
    await waits.watches["s1"].became_live.wait()  # a heartbeat came: it is live
    await trio.sleep(termwait.NOT_LIVE_STEP_S + 0.1)  # its last re-read before live
    return waiter


async def test_a_waiter_sleeps_until_its_session_prints(endpoint: str) -> None:
    pty = FakePty()
    with trio.fail_after(15):
        async with serving(endpoint) as (pub, waits, nursery):
            waiter = await live_waiter(waits, pty, nursery, 0)
            reads = pty.reads
            # Another session's output wakes nobody.
            pub.emit(ptyd.OutputChunk(session_id="s2", offset=0, data=b"other"))
            await trio.sleep(0.3)
            assert pty.reads == reads and not waiter.got
            pty.data = b"hello"
            pub.emit(ptyd.OutputChunk(session_id="s1", offset=0, data=b"hello"))
            await waiter.answered.wait()
            got = waiter.got
            assert got[0].data == b"hello" and got[0].end == 5
            # answered from the event's own bytes: no read after the wake, no polling
            assert pty.reads == reads and waits.served_from_events == 1


async def test_a_gap_in_the_events_is_read_from_ptyd(endpoint: str) -> None:
    """A waiter is answered from the events only when they run on from its offset: an
    event dropped before (here: never sent) makes it ask ptyd, which has every byte."""
    pty = FakePty()
    pty.data = b"abc"
    with trio.fail_after(15):
        async with serving(endpoint) as (pub, waits, nursery):
            waiter = await live_waiter(waits, pty, nursery, 3)
            reads = pty.reads
            # "def" (3..6) was printed but its event lost; "ghi" (6..9) arrives
            pty.data = b"abcdefghi"
            pub.emit(ptyd.OutputChunk(session_id="s1", offset=6, data=b"ghi"))
            await waiter.answered.wait()
            got = waiter.got
            assert got[0].data == b"defghi" and got[0].offset == 3 and got[0].end == 9
            assert pty.reads == reads + 1 and waits.served_from_events == 0


async def test_unknown_sessions_are_never_watched_and_watches_are_bounded(
    endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pty = FakePty()
    waits = OutputWaits(endpoint)
    monkeypatch.setattr(termwait, "MAX_WATCHES", 1)
    monkeypatch.setattr(termwait, "NOT_LIVE_STEP_S", 0.05)
    with trio.fail_after(15):
        async with trio.open_nursery() as nursery:
            await nursery.start(waits.run)
            with pytest.raises(NotFound):
                await waits.wait(gw.TermWaitArgs(session_id="bogus", since=0, wait_s=5.0), pty.read)
            assert waits.watches == {}
            waits._watch("other")  # the one watch allowed
            # Past the bound the waiter still answers: it re-reads every NOT_LIVE_STEP_S.
            got = await waits.wait(gw.TermWaitArgs(session_id="s1", since=0, wait_s=0.3), pty.read)
            assert got.data == b"" and set(waits.watches) == {"other"}
            nursery.cancel_scope.cancel()
