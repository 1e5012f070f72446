"""The mirror the UI keeps of ptyd's sessions subscribes to its events only
(``Mirror(topics=...)``, ``actors/ui/backend.py``): the publisher's other events (the
output chunks) leave gaps in seq that are not losses, and what a gap used to reveal
(an event lost before the subscription took effect) the first heartbeat still does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio
import trio.lowlevel
from fixture_actors.contracts import COUNTER_CHANGED, COUNTER_SNAPSHOT, CounterChanged
from fixture_actors.contracts import CounterSnapshot as Snap

from orca.actor import EventPublisher, Mirror, RpcServer, open_rpc_client
from orca.contracts.base import NoArgs
from orca.wire.envelope import Event

FLOOD_TOPIC = "flood"  # a topic the mirror does not subscribe to


class Source:
    def __init__(self, base: Path) -> None:
        self.value = 0
        self.rpc = RpcServer("counter")
        self.events = EventPublisher("counter")
        self.rpc_endpoint = f"ipc://{base}/counter.rpc"
        self.pub_endpoint = f"ipc://{base}/counter.pub"
        self.snapshots = 0

        async def snapshot(_: NoArgs) -> Snap:
            self.snapshots += 1
            return Snap(epoch=self.events.epoch, seq=self.events.seq, value=self.value)

        self.rpc.register(COUNTER_SNAPSHOT, snapshot)

    def bump(self) -> None:
        self.value += 1
        self.events.emit(CounterChanged(value=self.value))

    def flood(self, n: int) -> None:
        for _ in range(n):  # seq moves, the state does not
            self.events.publish(FLOOD_TOPIC, None, topic=FLOOD_TOPIC)

    @asynccontextmanager
    async def running(self, heartbeat_s: float | None) -> AsyncIterator[None]:
        self.rpc.bind(self.rpc_endpoint)
        self.events.bind(self.pub_endpoint)
        async with trio.open_nursery() as nursery:
            await nursery.start(self.rpc.serve)
            if heartbeat_s is not None:
                nursery.start_soon(self.events.run_heartbeats, heartbeat_s)
            try:
                yield
            finally:
                nursery.cancel_scope.cancel()
        self.rpc.close()
        self.events.close()


def apply(state: int, _event: Event, changed: CounterChanged) -> int:
    assert changed.value == state + 1, "every change applied, in order"
    return changed.value


@asynccontextmanager
async def narrowed(source: Source) -> AsyncIterator[Mirror[int]]:
    async with open_rpc_client(source.rpc_endpoint) as client, trio.open_nursery() as nursery:
        mirror = Mirror(
            client=client,
            pub_endpoint=source.pub_endpoint,
            snapshot=COUNTER_SNAPSHOT,
            events=[COUNTER_CHANGED],
            load=lambda snap: snap.value,
            apply=apply,
            topics=[COUNTER_CHANGED.type],
        )
        await nursery.start(mirror.run)
        try:
            yield mirror
        finally:
            nursery.cancel_scope.cancel()
            mirror.close()


async def test_a_narrowed_mirror_follows_through_gaps_without_resyncing(tmp_path: Path) -> None:
    with trio.fail_after(10):
        source = Source(tmp_path)
        async with source.running(heartbeat_s=0.05), narrowed(source) as mirror:
            # the first heartbeat proves the subscription live: one more snapshot
            await mirror.wait_until(lambda m: m.snapshots == 2)
            for _ in range(20):
                source.flood(50)
                source.bump()
                await trio.lowlevel.checkpoint()
            await mirror.wait_until(lambda m: m.state == 20)
            await trio.sleep(0.2)  # heartbeats whose seq is ahead (the flood) meanwhile
            assert mirror.applied == 20, "only the subscribed events were received"
            assert mirror.snapshots == 2, "a gap left by the flood made it resync"


async def test_a_change_missed_before_the_subscription_is_caught_by_the_first_heartbeat(
    tmp_path: Path,
) -> None:
    with trio.fail_after(10):
        source = Source(tmp_path)
        async with source.running(heartbeat_s=None), narrowed(source) as mirror:
            assert mirror.state == 0 and mirror.snapshots == 1
            # changed with no event reaching the mirror (as if published before its
            # subscription took effect): only the first heartbeat can reveal it
            source.value = 5
            while mirror.state != 5:  # a heartbeat sent before the SUB is live is lost
                source.events.heartbeat()
                with trio.move_on_after(0.05):
                    await mirror.wait_until(lambda m: m.state == 5)
            assert mirror.snapshots == 2
            source.events.heartbeat()  # later heartbeats of the epoch: no resync
            source.bump()
            await mirror.wait_until(lambda m: m.state == 6)
            assert mirror.snapshots == 2
