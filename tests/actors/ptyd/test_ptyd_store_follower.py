"""ptyd's store follower: a malformed store event is logged once, and following goes on.

The real ``Ptyd`` shell runs in-process with its real ``Subscriber`` (``store_follower``);
the store's side is an XPUB socket at the store's PUB endpoint, so the test waits for
the follower's subscriptions (not a sleep) before it sends raw, hand-made events, which
the real store could never publish malformed.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import trio
import zmq
from support.actors import EventTap

from actors.ptyd.actor import STORE_CONSUMER, Ptyd, PtydSettings
from orca.actor import ActorContext, EventPublisher, RpcServer
from orca.actor.zsocket import ZSocket, new_socket
from orca.contracts import ptyd as contract
from orca.contracts import store
from orca.paths import resolve_paths
from orca.wire.envelope import Event, encode_event

OLD = "repo1::/w/old"
NEW = "repo1::/w/new"


class FakeStorePub:
    """An XPUB at the store's PUB endpoint: sees subscriptions, sends raw events."""

    def __init__(self, endpoint: str) -> None:
        self._subs_send, self.subscriptions = trio.open_memory_channel[bytes](16)
        sock = new_socket(zmq.XPUB)
        sock.bind(endpoint)
        self._zs = ZSocket(sock, lambda frames: self._subs_send.send_nowait(frames[0]))
        self.seq = 0

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await self._zs.run(task_status=task_status)

    def send(self, type_: str, data: object) -> None:
        self.seq += 1
        event = Event(1, store.CONTRACT.actor, "e0", self.seq, type_, data)
        self._zs.send_nowait((type_.encode(), encode_event(event)))

    def close(self) -> None:
        self._zs.close()


async def test_a_malformed_store_event_is_logged_once_and_following_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A bad worktree.renamed and a paneRetired with a ':' in its tab are logged and
    dropped; the valid rename after them still re-keys the live session."""
    paths = resolve_paths({"ORCA_HOME": str(tmp_path / "home")}).ensure()
    fake = FakeStorePub(paths.ipc_endpoint(store.CONTRACT.actor, "pub"))
    events = EventPublisher(contract.CONTRACT.actor)
    events.bind(paths.ipc_endpoint(contract.CONTRACT.actor, "pub"))
    tap = EventTap(paths.ipc_endpoint(contract.CONTRACT.actor, "pub"), [contract.REKEYED])
    rpc = RpcServer(contract.CONTRACT.actor)
    with trio.fail_after(15):
        async with trio.open_nursery() as nursery:
            ctx = ActorContext(contract.CONTRACT.actor, paths, rpc, events, nursery)
            ptyd = Ptyd(ctx, PtydSettings())
            follower = ptyd.store_follower()
            await nursery.start(fake.run)
            await nursery.start(follower.run)
            nursery.start_soon(events.run_heartbeats, 0.05)
            session = ptyd.table.spawn(
                contract.SpawnArgs(argv=["sleep", "30"], cwd="/", worktree_id=OLD)
            )
            ptyd.start_session(session)
            try:
                wanted = {store.WORKTREE_RENAMED.type, store.PANE_RETIRED.type}
                while wanted:  # the follower's SUBSCRIBE messages: it is connected
                    wanted.discard((await fake.subscriptions.receive())[1:].decode())
                await tap.start(nursery)  # our tap is connected too (a heartbeat came)

                fake.send(store.WORKTREE_RENAMED.type, {"oldId": OLD, "newId": 7})
                fake.send(
                    store.PANE_RETIRED.type,
                    {"hostId": "local", "tabId": "a:b", "leafId": "l", "revision": 1},
                )
                fake.send(store.WORKTREE_RENAMED.type, {"oldId": OLD, "newId": NEW})
                rekeyed = await tap.next_of(contract.REKEYED)
            finally:
                session.send_signal(signal.SIGKILL)
                await session.exited.wait()
                nursery.cancel_scope.cancel()
    follower.close()
    tap.close()
    fake.close()
    events.close()
    rpc.close()
    assert rekeyed.old == session.info.history_key
    assert ptyd.table.get(rekeyed.new).info.worktree_id == NEW
    assert follower.stats.malformed == 2 and follower.stats.decoded == 1
    warnings = [r.getMessage() for r in caplog.records if STORE_CONSUMER in r.getMessage()]
    assert len(warnings) == 2
    assert "malformed worktree.renamed" in warnings[0] and "$.newId" in warnings[0]
    assert "malformed session.paneRetired" in warnings[1] and "$.tabId" in warnings[1]
