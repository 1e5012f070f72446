"""Mirrors converge to their publisher's state whatever events they lose (zguide Clone)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
import trio.lowlevel
import trio.testing
from fixture_actors.contracts import (
    COUNTER_CHANGED,
    COUNTER_SNAPSHOT,
    CounterChanged,
    CounterSnapshot,
)

from orca.actor import EventPublisher, Mirror, RpcServer, open_rpc_client
from orca.contracts.base import NoArgs
from orca.wire.envelope import Event


class Counter:
    """A publisher of ``counter.changed`` events with a snapshot op, in-process.

    With ``hold``, the snapshot op answers only once that event is set (a publisher slow
    to answer after a restart); ``snapshot_asked`` is set when it is first asked."""

    def __init__(
        self, base: Path, *, sndhwm: int = 100_000, hold: trio.Event | None = None
    ) -> None:
        self.value = 0
        self.rpc = RpcServer("counter")
        self.events = EventPublisher("counter", sndhwm=sndhwm)
        self.rpc_endpoint = f"ipc://{base}/counter.rpc"
        self.pub_endpoint = f"ipc://{base}/counter.pub"
        self.snapshot_asked = trio.Event()

        async def snapshot(_: NoArgs) -> CounterSnapshot:
            self.snapshot_asked.set()
            if hold is not None:
                await hold.wait()
            return CounterSnapshot(epoch=self.events.epoch, seq=self.events.seq, value=self.value)

        self.rpc.register(COUNTER_SNAPSHOT, snapshot)

    def bump(self, n: int = 1) -> None:
        for _ in range(n):
            self.value += 1
            self.events.emit(CounterChanged(value=self.value))

    @asynccontextmanager
    async def running(self, heartbeat_s: float = 0.05) -> AsyncIterator[None]:
        self.rpc.bind(self.rpc_endpoint)
        self.events.bind(self.pub_endpoint)
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self.rpc.serve)
                nursery.start_soon(self.events.run_heartbeats, heartbeat_s)
                try:
                    yield
                finally:
                    nursery.cancel_scope.cancel()
        finally:  # a failed test leaks no socket into the next one
            self.close()

    def close(self) -> None:
        self.rpc.close()
        self.events.close()


def load(snap: CounterSnapshot) -> int:
    return snap.value


def apply(state: int, event: Event, changed: CounterChanged) -> int:
    assert changed.value == state + 1, "events must be applied in order without gaps"
    return changed.value


@asynccontextmanager
async def mirroring(counter: Counter, *, rcvhwm: int = 100_000) -> AsyncIterator[Mirror[int]]:
    async with open_rpc_client(counter.rpc_endpoint) as client, trio.open_nursery() as nursery:
        mirror = Mirror(
            client=client,
            pub_endpoint=counter.pub_endpoint,
            snapshot=COUNTER_SNAPSHOT,
            events=[COUNTER_CHANGED],
            load=load,
            apply=apply,
            rcvhwm=rcvhwm,
        )
        await nursery.start(mirror.run)
        try:
            yield mirror
        finally:
            nursery.cancel_scope.cancel()
            mirror.close()


async def test_mirror_follows_events_after_its_snapshot(tmp_path: Path) -> None:
    """Events after the snapshot are applied one by one; the mirror equals the source."""
    with trio.fail_after(10):
        counter = Counter(tmp_path)
        counter.bump(5)
        async with counter.running(), mirroring(counter) as mirror:
            assert mirror.state == 5
            for _ in range(20):
                counter.bump()
                await trio.lowlevel.checkpoint()
            await mirror.wait_until(lambda m: m.state == 25)
            assert mirror.applied > 0


async def test_mirror_that_overflows_its_hwm_converges(tmp_path: Path) -> None:
    """A burst larger than the queues drops events; the mirror sees the gap and re-snapshots."""
    with trio.fail_after(20):
        counter = Counter(tmp_path, sndhwm=20)
        async with counter.running(), mirroring(counter, rcvhwm=20) as mirror:
            snapshots_before = mirror.snapshots
            for _ in range(5):
                counter.bump(5000)  # no checkpoint inside: the queues must overflow
                await trio.sleep(0.01)
            await mirror.wait_until(lambda m: m.state == counter.value)
            assert mirror.seq == counter.events.seq
            assert mirror.snapshots > snapshots_before


async def test_mirror_that_lost_the_tail_of_a_burst_catches_up_by_heartbeat(tmp_path: Path) -> None:
    """When the last events are lost and nothing follows, the heartbeat reveals the gap."""
    with trio.fail_after(10):
        counter = Counter(tmp_path)
        async with counter.running(heartbeat_s=0.05), mirroring(counter) as mirror:
            counter.value += 3  # state changes whose events never reach anyone
            counter.events.seq += 3
            await mirror.wait_until(lambda m: m.state == 3)
            assert mirror.seq == counter.events.seq


async def test_mirror_resnapshots_when_the_publisher_restarts(tmp_path: Path) -> None:
    """A new epoch (publisher restarted with new state) makes the mirror take a new snapshot."""
    with trio.fail_after(15):
        first = Counter(tmp_path)
        first.bump(4)
        async with open_rpc_client(first.rpc_endpoint) as client, trio.open_nursery() as nursery:
            mirror = Mirror(
                client=client,
                pub_endpoint=first.pub_endpoint,
                snapshot=COUNTER_SNAPSHOT,
                events=[COUNTER_CHANGED],
                load=load,
                apply=apply,
            )
            async with first.running():
                await nursery.start(mirror.run)
                assert mirror.state == 4
            second = Counter(tmp_path)  # same endpoints, new epoch, different history
            second.value = 100
            async with second.running():
                second.bump(2)
                await mirror.wait_until(lambda m: m.state == 102)
                assert mirror.epoch == second.events.epoch
            nursery.cancel_scope.cancel()
        mirror.close()


async def test_mirror_is_not_whole_from_a_new_epoch_until_its_snapshot_loads(
    tmp_path: Path,
) -> None:
    """Across a publisher restart, ``whole`` is False from the moment the new epoch is
    seen until its snapshot is loaded; ``wait_whole`` waits meanwhile (``state`` is
    still the old epoch's copy) and returns once the new copy is in."""
    first = Counter(tmp_path)
    first.bump(4)
    release = trio.Event()
    second = Counter(tmp_path, hold=release)  # same endpoints, new epoch, other history
    second.value = 100
    seen: list[int | None] = []
    with trio.fail_after(15):
        async with open_rpc_client(first.rpc_endpoint) as client, trio.open_nursery() as nursery:
            mirror = Mirror(
                client=client,
                pub_endpoint=first.pub_endpoint,
                snapshot=COUNTER_SNAPSHOT,
                events=[COUNTER_CHANGED],
                load=load,
                apply=apply,
            )

            async def reader() -> None:
                await mirror.wait_whole()
                seen.append(mirror.state)

            try:
                assert not mirror.whole  # nothing loaded yet
                async with first.running():
                    await nursery.start(mirror.run)
                    assert mirror.whole and mirror.state == 4
                    await mirror.wait_whole()  # whole: returns at once
                async with second.running():
                    await second.snapshot_asked.wait()  # its heartbeat started the resync
                    assert not mirror.whole and mirror.state == 4
                    nursery.start_soon(reader)
                    await trio.testing.wait_all_tasks_blocked()
                    assert seen == []  # the reader waits for the new copy
                    release.set()
                    await mirror.wait_whole()
                    assert mirror.state == 100 and mirror.epoch == second.events.epoch
                    await trio.testing.wait_all_tasks_blocked()
                    assert seen == [100]
            finally:
                nursery.cancel_scope.cancel()
                mirror.close()
                first.close()
                second.close()


async def test_mirror_logs_a_malformed_event_once_and_keeps_following(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An event whose data breaks its Struct is logged once, counted, skipped; the next applies."""
    with trio.fail_after(10):
        counter = Counter(tmp_path)
        async with counter.running(), mirroring(counter) as mirror:
            counter.events.publish(COUNTER_CHANGED.type, {"value": "not a number"})
            counter.bump()  # seq 2 follows seq 1 (the bad one): no gap, no resnapshot
            await mirror.wait_until(lambda m: m.state == 1)
            assert mirror.decode_stats.malformed == 1 and mirror.snapshots == 1
        warnings = [r for r in caplog.records if "malformed counter.changed" in r.getMessage()]
        assert len(warnings) == 1 and "$.value" in warnings[0].getMessage()


async def test_a_snapshot_the_projection_cannot_load_is_retried_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A load that raises (a newer publisher's data) is counted and retried; the mirror
    starts once a snapshot loads and no exception leaves its task."""
    from orca.actor import mirror as mirror_module

    monkeypatch.setattr(mirror_module, "UNLOADABLE_BACKOFF_S", 0.01)
    failures = [ValueError("unknown shape"), KeyError("value")]

    def flaky_load(snap: CounterSnapshot) -> int:
        if failures:
            raise failures.pop(0)
        return snap.value

    with trio.fail_after(10):
        counter = Counter(tmp_path)
        counter.bump(3)
        async with counter.running(), open_rpc_client(counter.rpc_endpoint) as client:
            async with trio.open_nursery() as nursery:
                mirror = Mirror(
                    client=client,
                    pub_endpoint=counter.pub_endpoint,
                    snapshot=COUNTER_SNAPSHOT,
                    events=[COUNTER_CHANGED],
                    load=flaky_load,
                    apply=apply,
                )
                await nursery.start(mirror.run)
                assert mirror.state == 3 and mirror.decode_stats.malformed == 2
                nursery.cancel_scope.cancel()
            mirror.close()
