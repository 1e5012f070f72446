"""A mirror of one publisher's state: subscribe, snapshot, apply seq > snapshot.

The zguide "Clone" pattern. The SUB socket connects *before* the snapshot is asked for,
so no event can fall between the two; events with ``seq <= snapshot.seq`` are already
in the snapshot and are dropped. A gap in ``seq``, a new ``epoch`` (the publisher
restarted) or a heartbeat announcing a seq we have not seen (we lost the tail of a
burst) all mean the same thing: our copy may be wrong, so we take a new snapshot.

The snapshot op (a contract ``Op``) must return a result with ``epoch`` and ``seq``
(the publisher's values at the moment the snapshot was taken) next to whatever state it
carries; ``load`` turns that result into the mirror's state and ``apply`` folds one
typed event (decoded with the contract's specs; a malformed one is logged and skipped,
its seq still counted) into it. Both are pure, which is what lets every reader share
one projection.

``topics`` narrows the subscription to the events the projection reads (prefixes), for
a publisher whose other events are a flood that cannot change the state (ptyd's output
chunks, thousands a second, next to a sessions table). Its seq then also counts events
this mirror never sees, so a gap is no loss. What still resyncs: a new epoch (the
publisher restarted), an overflowing inbox, and the first heartbeat of each epoch (it
proves the subscription live, so an event published between the snapshot and the
subscription taking effect cannot stay missed).

Whole or not: between deciding to resync and loading the new snapshot, ``state`` still
holds the previous copy, which is known to be stale (a restarted publisher's state may
differ from its last events) or wrong (the events whose loss started the resync are
missing from it). A reader that answers questions from the copy ("is there a worktree
W?") must not answer from that: :meth:`Mirror.wait_whole` waits on an event set when a
snapshot is loaded (bound it: a publisher that is down keeps a resync open), and
:attr:`Mirror.whole` says whether the copy is whole now. Followers that only hand each
new state on (:meth:`Mirror.follow`) need neither: they see the new snapshot when it
loads.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import trio
import zmq

from orca.actor.client import RpcClient
from orca.actor.zsocket import ZSocket, new_socket
from orca.contracts.base import (
    Contract,
    DecodeStats,
    EventSpec,
    Op,
    decode_event_data,
    specs_by_type,
)
from orca.contracts.sys import HEARTBEAT_TYPE
from orca.wire.envelope import Event, decode_event
from orca.wire.errors import BadFrame, OrcaError

log = logging.getLogger(__name__)


class Snapshot(Protocol):
    """What a snapshot op's result must carry besides the state."""

    @property
    def epoch(self) -> str: ...

    @property
    def seq(self) -> int: ...


S = TypeVar("S")
R = TypeVar("R", bound=Snapshot)

# How long to wait before asking again for a snapshot the publisher could not give.
RESNAPSHOT_BACKOFF_S = 0.1
# ... and for one it gave but this reader cannot load (it will not change soon).
UNLOADABLE_BACKOFF_S = 2.0
# What a pure load/apply projection raises on data it cannot take (msgspec's errors and
# orca.model.codec.ModelDecodeError are ValueErrors; a missing key is a KeyError).
PROJECTION_ERRORS = (ValueError, KeyError, TypeError)
# Events buffered between the SUB socket and the apply loop; beyond this we drop and
# resync, which is always correct and bounds memory when the applier falls behind.
MAX_BUFFERED_EVENTS = 100_000


@dataclass(frozen=True)
class MirrorSpec:
    """One projection of a publisher's state, as its readers follow it: what
    :meth:`Mirror.of` needs besides the sockets."""

    contract: Contract
    snapshot: Op[Any, Any]
    load: Callable[[Any], Any]
    apply: Callable[[Any, Event, Any], Any]
    # The events whose data the projection reads (default: all of the contract's). The
    # mirror still sees every event (it needs every seq), but only these are decoded.
    events: tuple[EventSpec[Any], ...] | None = None
    # Subscribe to ``events`` only (their topics start with their type), not to every
    # event: for a publisher whose other events are a flood the projection ignores
    # (``Mirror``'s ``topics``; gaps in seq are then expected).
    narrow: bool = False


class Mirror(Generic[S]):
    """Hold a copy of a publisher's state that converges whatever events are lost."""

    def __init__(
        self,
        *,
        client: RpcClient,
        pub_endpoint: str,
        snapshot: Op[Any, R],
        events: Iterable[EventSpec[Any]],
        load: Callable[[R], S],
        apply: Callable[[S, Event, Any], S],
        snapshot_args: Any = None,
        consumer: str = "mirror",
        rcvhwm: int = 100_000,
        topics: Iterable[str] | None = None,
    ) -> None:
        self._client = client
        self._snapshot_op: Op[Any, Any] = snapshot
        self._snapshot_args = snapshot_args
        self._specs = specs_by_type(events)
        self._consumer = consumer
        self.decode_stats = DecodeStats()
        self._load: Callable[[Any], S] = load
        self._apply = apply
        sock = new_socket(zmq.SUB)
        sock.setsockopt(zmq.RCVHWM, rcvhwm)
        self._narrowed = topics is not None
        wanted = [""] if topics is None else [*topics, HEARTBEAT_TYPE]
        for topic in wanted:
            sock.setsockopt(zmq.SUBSCRIBE, topic.encode())
        self._confirmed_epoch: str | None = None  # narrowed: a heartbeat seen since its snapshot
        sock.connect(pub_endpoint)
        self._zs = ZSocket(sock, self._on_message)
        self._inbox: deque[Event] = deque()
        self._overflowed = False
        self._arrived = trio.lowlevel.ParkingLot()
        self._changed = trio.Condition()
        # Invariant: set iff ``state`` is a loaded snapshot plus every event since it that
        # arrived. A resync (or an overflow, which drops events) swaps in a fresh, unset
        # Event at once, so a reader never waits on one that was set for an older copy.
        self._whole = trio.Event()
        self.state: S | None = None
        self.epoch: str | None = None
        self.seq = 0
        self.snapshots = 0
        self.applied = 0
        self._retired_epochs: set[str] = set()

    @classmethod
    def of(
        cls, spec: MirrorSpec, *, client: RpcClient, pub_endpoint: str, consumer: str
    ) -> Mirror[Any]:
        """The mirror ``spec`` describes, on these sockets."""
        return cls(
            client=client,
            pub_endpoint=pub_endpoint,
            snapshot=spec.snapshot,
            events=spec.events or spec.contract.events.values(),
            load=spec.load,
            apply=spec.apply,
            consumer=consumer,
            topics=[e.type for e in spec.events or ()] if spec.narrow else None,
        )

    def _on_message(self, frames: list[bytes]) -> None:
        if len(frames) != 2:
            return
        try:
            event = decode_event(frames[1])
        except BadFrame:
            return
        if len(self._inbox) >= MAX_BUFFERED_EVENTS:
            self._overflowed = True
            self._inbox.clear()
            self._lose_wholeness()  # events were dropped: the copy misses them
        self._inbox.append(event)
        self._arrived.unpark_all()

    async def _next_event(self) -> Event:
        while not self._inbox:
            await self._arrived.park()
        return self._inbox.popleft()

    def _lose_wholeness(self) -> None:
        if self._whole.is_set():
            self._whole = trio.Event()

    async def _snapshot(self) -> None:
        self._lose_wholeness()
        while True:
            try:
                snap = await self._client.invoke(self._snapshot_op, self._snapshot_args)
                state = self._load(snap)
                break
            except OrcaError:
                await trio.sleep(RESNAPSHOT_BACKOFF_S)
            except PROJECTION_ERRORS as exc:
                # A snapshot this reader's projection cannot take (a newer publisher's
                # data): the peer's fault; never an exception out of the reader's loop.
                self.decode_stats.malformed += 1
                log.warning("%s: cannot load a snapshot (%s); retrying", self._consumer, exc)
                await trio.sleep(UNLOADABLE_BACKOFF_S)
        if self.epoch is not None and snap.epoch != self.epoch:
            self._retired_epochs.add(self.epoch)
        self.state = state
        self.epoch = snap.epoch
        self.seq = snap.seq
        self.snapshots += 1
        self._overflowed = False
        self._whole.set()
        await self._notify()

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def _needs_resync(self, event: Event) -> bool | None:
        """True: resync; False: apply; None: drop (already reflected)."""
        if event.epoch != self.epoch:
            return None if event.epoch in self._retired_epochs else True
        if event.type == HEARTBEAT_TYPE:
            if self._narrowed:
                confirmed, self._confirmed_epoch = self._confirmed_epoch, event.epoch
                return True if confirmed != event.epoch else None
            return True if event.seq > self.seq else None
        if event.seq <= self.seq:
            return None
        return not self._narrowed and event.seq != self.seq + 1

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(self._zs.run)
            await self._snapshot()
            task_status.started()
            while True:
                event = await self._next_event()
                if self._overflowed:
                    await self._snapshot()
                    continue
                verdict = self._needs_resync(event)
                if verdict is None:
                    continue
                if verdict:
                    await self._snapshot()
                    continue
                assert self.state is not None
                data = decode_event_data(
                    event, self._specs, consumer=self._consumer, stats=self.decode_stats
                )
                if data is not None:
                    try:
                        self.state = self._apply(self.state, event, data)
                    except PROJECTION_ERRORS as exc:
                        self.decode_stats.malformed += 1
                        log.warning("%s: cannot apply %s (%s)", self._consumer, event.type, exc)
                        await self._snapshot()  # the copy may be wrong: take a fresh one
                        continue
                self.seq = event.seq
                self.applied += 1
                await self._notify()

    async def follow(self, take: Callable[[S], Awaitable[None]]) -> None:
        """Run the mirror and hand every new state of it to ``take``, one at a time
        (states that arrive while ``take`` runs are folded into the next one it sees)."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.run)
            seen = -1

            def changed(m: Mirror[S]) -> bool:
                return m.state is not None and m.snapshots + m.applied != seen

            while True:
                await self.wait_until(changed)
                seen = self.snapshots + self.applied
                assert self.state is not None
                await take(self.state)

    @property
    def whole(self) -> bool:
        """Whether ``state`` is a loaded snapshot plus every event since it: False before
        the first snapshot and from the moment a resync is decided (a gap, a new epoch,
        an overflow, an event the projection could not apply) until the new snapshot is
        loaded, while ``state`` still holds the previous copy."""
        return self._whole.is_set()

    async def wait_whole(self) -> None:
        """Until the mirror is whole (at once if it is). Callers bound it
        (``trio.move_on_after``): a resync lasts as long as the publisher is down."""
        while not self._whole.is_set():
            # The Event is swapped when a resync starts: wait on the current one again.
            await self._whole.wait()

    async def wait_until(self, predicate: Callable[[Mirror[S]], bool]) -> None:
        """Wait until ``predicate(self)`` holds (checked after every change)."""
        async with self._changed:
            while not predicate(self):
                await self._changed.wait()

    def close(self) -> None:
        self._zs.close()
