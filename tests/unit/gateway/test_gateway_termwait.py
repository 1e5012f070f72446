"""``gateway.termWait``'s waiter: woken by a session's output event, never by another
session's, bounded, and a session ptyd does not know is never watched."""

from __future__ import annotations

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


async def test_a_waiter_sleeps_until_its_session_prints(endpoint: str) -> None:
    pub = EventPublisher(ptyd.CONTRACT.actor)
    pub.bind(endpoint)
    pty = FakePty()
    waits = OutputWaits(endpoint)
    with trio.fail_after(15):
        async with trio.open_nursery() as nursery:
            await nursery.start(waits.run)
            nursery.start_soon(pub.run_heartbeats, 0.05)
            args = gw.TermWaitArgs(session_id="s1", since=0, wait_s=8.0)
            got: list[ptyd.ReadResult] = []
            answered = trio.Event()

            async def waiter() -> None:
                got.append(await waits.wait(args, pty.read))
                answered.set()

            nursery.start_soon(waiter)
            await trio.testing.wait_all_tasks_blocked()  # the waiter made its watch
            await waits.watches["s1"].became_live.wait()  # a heartbeat came: it is live
            await trio.sleep(termwait.NOT_LIVE_STEP_S + 0.1)  # its last re-read before live
            reads = pty.reads
            # Another session's output wakes nobody.
            pub.emit(ptyd.OutputChunk(session_id="s2", offset=0, data=b"other"))
            await trio.sleep(0.3)
            assert pty.reads == reads and not got
            pty.data = b"hello"
            pub.emit(ptyd.OutputChunk(session_id="s1", offset=0, data=b"hello"))
            await answered.wait()
            assert got[0].data == b"hello" and got[0].end == 5
            assert pty.reads == reads + 1  # one read per wake, no polling meanwhile
            nursery.cancel_scope.cancel()
    pub.close()


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
