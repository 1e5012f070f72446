"""The upgrade's hand-over (orca/client/keeper.py take_over) against a served keeper:
``hello`` decides between ``hand_over`` and, for a keeper that predates it, ``stop``."""

from __future__ import annotations

import os
from pathlib import Path

import trio
from support.keeper import serving

from actors.keeper.service import FdKeeper
from actors.keeper.table import KeeperState
from orca.client.keeper import TakenOver, keeper_hello, take_over
from orca.contracts.fd_keeper import (
    BASE_CAPABILITIES,
    Deposit,
    HandedOver,
    HandOver,
    Hello,
    KeeperHello,
    KeeperProtocolError,
    Request,
    close_fds,
)


class KeeperBeforeHello(KeeperState):
    """The table of a keeper built before ``hello``: its decoder refused the new ops."""

    def handle(self, message: Request, fds: list[int]) -> list:  # type: ignore[type-arg]
        if isinstance(message, Hello | HandOver):
            close_fds(fds)
            raise KeeperProtocolError("not a keeper message")
        return super().handle(message, fds)


async def run_take_over(tmp_path: Path, state: KeeperState) -> tuple[TakenOver | None, list[int]]:
    """Serve ``state`` with three deposited pipes, take it over; returns what the taker
    got and the pipes' read ends (the depositor's own copies)."""
    path = str(tmp_path / "k.sock")
    readers: list[int] = []
    for n in range(3):
        r, w = os.pipe()
        readers.append(r)
        state.handle(Deposit(key=f"k{n}", info={"pid": 100 + n}), [w])
    keeper = FdKeeper(path, state)
    with trio.fail_after(10):
        with serving(keeper) as thread:
            taken = await trio.to_thread.run_sync(take_over, path)
            await trio.to_thread.run_sync(thread.join)  # it exits after the hand-over
    assert len(keeper.state) == 0, "the old keeper closed its copies on the way out"
    return taken, readers


def check_taken(taken: TakenOver | None, readers: list[int]) -> None:
    assert taken is not None
    assert [(row.key, row.info["pid"]) for row, _ in taken.sessions] == [
        (f"k{n}", 100 + n) for n in range(3)
    ]
    for (_, fds), r in zip(taken.sessions, readers, strict=True):
        os.write(fds[0], b"alive")  # the taker's duplicate reaches the same pipe
        assert os.read(r, 5) == b"alive"
        close_fds([*fds, r])


async def test_a_current_keeper_hands_every_session_over_and_exits(tmp_path: Path) -> None:
    taken, readers = await run_take_over(tmp_path, KeeperState())
    assert taken is not None and taken.ended_with == "hand_over"
    assert taken.previous is not None and "hand_over" in taken.previous.capabilities
    assert taken.previous.sessions == 3
    check_taken(taken, readers)


async def test_a_keeper_before_hello_falls_back_to_reclaim_and_stop(tmp_path: Path) -> None:
    """No answer to ``hello`` within its timeout: base capabilities, so the sessions are
    reclaimed and the old keeper is stopped (the CLI does it only with no ptyd up)."""
    taken, readers = await run_take_over(tmp_path, KeeperBeforeHello())
    assert taken is not None and taken.ended_with == "stop" and taken.previous is None
    assert "hand_over" not in BASE_CAPABILITIES
    check_taken(taken, readers)


def test_take_over_with_no_keeper_there_is_none(tmp_path: Path) -> None:
    assert take_over(tmp_path / "nobody.sock") is None
    assert keeper_hello(tmp_path / "nobody.sock") is None


def test_hand_over_is_refused_while_the_taker_misses_a_key() -> None:
    """A session deposited after the taker's reclaim keeps the old keeper in charge."""
    state = KeeperState()
    pipes = [os.pipe() for _ in range(2)]
    for n, (_, w) in enumerate(pipes):
        state.handle(Deposit(key=f"k{n}", info={}), [os.dup(w)])
    [refused] = state.handle(HandOver(keys=["k0"]), [])
    assert refused.message == HandedOver(ok=False, missing=["k1"]) and not state.handed_over
    [hello] = state.handle(Hello(), [])
    assert isinstance(hello.message, KeeperHello) and hello.message.sessions == 2
    [accepted] = state.handle(HandOver(keys=["k0", "k1"]), [])
    assert accepted.message == HandedOver(ok=True) and state.handed_over
    state.close_all()
    close_fds([fd for pair in pipes for fd in pair])


async def test_ptyd_link_confirms_a_live_keeper_at_once_and_not_a_gone_one(
    tmp_path: Path,
) -> None:
    """``KeeperLink.confirm`` (ptyd's check before it stops): a ``hello`` round trip,
    True while the keeper serves, False once it is gone."""
    from actors.ptyd.handoff import KeeperLink

    path = str(tmp_path / "k.sock")
    keeper = FdKeeper(path)
    with trio.fail_after(10):
        with serving(keeper):
            link = await trio.to_thread.run_sync(KeeperLink, path)
            # Twice: nothing waiting on the link must not read as a hang-up.
            assert await trio.to_thread.run_sync(link.confirm)
            assert await trio.to_thread.run_sync(link.confirm)
        assert not await trio.to_thread.run_sync(link.confirm)
        link.close()
