"""The publisher encodes only what someone subscribed to, and a subscriber misses nothing.

The socket is an XPUB (orca/actor/publisher.py): an event no subscription's prefix
matches is never encoded (``skipped``), its seq consumed all the same. These tests
drive it with real SUB sockets over ipc, as every actor's subscribers connect.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq

from orca.actor import EventPublisher
from orca.contracts.sys import HEARTBEAT_TYPE
from orca.wire.envelope import Event, decode_event

TIMEOUT_MS = 10_000


@pytest.fixture
def publisher(tmp_path: Path) -> Iterator[tuple[EventPublisher, str]]:
    pub = EventPublisher("test")
    endpoint = pub.bind(f"ipc://{tmp_path}/test.pub")
    try:
        yield pub, endpoint
    finally:
        pub.close()


def subscriber(endpoint: str, *topics: str) -> zmq.Socket[bytes]:
    sock: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.SUB)
    sock.setsockopt(zmq.LINGER, 0)
    for topic in topics:
        sock.setsockopt(zmq.SUBSCRIBE, topic.encode())
    sock.connect(endpoint)
    return sock


def receive(sock: zmq.Socket[bytes]) -> Event:
    assert sock.poll(TIMEOUT_MS), "nothing arrived"
    return decode_event(sock.recv_multipart()[-1])


def receive_event(sock: zmq.Socket[bytes]) -> Event:
    """The next event that is no heartbeat: ``wait_live`` sends heartbeats until one
    arrives, and the publisher beats for each new subscription (two topics: two), so
    one may still be on its way after ``wait_live`` drained what had come (a loaded
    run: test_a_prefix_subscription_gets_every_topic_under_it got one for its first)."""
    while (event := receive(sock)).type == HEARTBEAT_TYPE:
        pass
    return event


def wait_live(pub: EventPublisher, sock: zmq.Socket[bytes]) -> None:
    """Until the subscriber gets a heartbeat: its subscriptions reached the publisher
    (the proof every Orca subscriber waits for before it trusts the stream)."""
    while not sock.poll(10):
        pub.heartbeat()
    assert receive(sock).type == HEARTBEAT_TYPE
    while sock.poll(0):  # heartbeats sent meanwhile
        sock.recv_multipart()


def wait_subscriptions_changed(pub: EventPublisher) -> None:
    """Until the XPUB socket has a subscription message queued (a real event: poll)."""
    assert pub.socket.poll(TIMEOUT_MS, zmq.POLLIN), "no subscription message came"


def test_an_event_nobody_subscribed_to_is_not_sent_and_still_counts(
    publisher: tuple[EventPublisher, str],
) -> None:
    pub, endpoint = publisher
    assert pub.publish("term.output", {"n": 1}, topic="term.output.a") == 1
    assert pub.skipped == 1
    sock = subscriber(endpoint, "term.output.a", HEARTBEAT_TYPE)
    try:
        wait_live(pub, sock)
        skipped = pub.skipped
        pub.publish("term.output", {"n": 2}, topic="term.output.b")  # nobody's
        pub.publish("term.output", {"n": 3}, topic="term.output.a")
        assert pub.skipped == skipped + 1
        got = receive_event(sock)
        assert (got.data, got.seq) == ({"n": 3}, pub.seq)  # seq 2 was consumed, unsent
    finally:
        sock.close()


def test_a_prefix_subscription_gets_every_topic_under_it(
    publisher: tuple[EventPublisher, str],
) -> None:
    pub, endpoint = publisher
    sock = subscriber(endpoint, "term.output", HEARTBEAT_TYPE)
    try:
        wait_live(pub, sock)
        for name in ("a", "b", "é\u202e"):
            pub.publish("term.output", {"s": name}, topic=f"term.output.{name}")
        assert [receive_event(sock).data["s"] for _ in range(3)] == ["a", "b", "é\u202e"]
        assert pub.wants("term.output.zzz") and not pub.wants("term.exit.a")
    finally:
        sock.close()


def test_a_subscriber_that_leaves_stops_the_encoding_and_another_keeps_it(
    publisher: tuple[EventPublisher, str],
) -> None:
    pub, endpoint = publisher
    first = subscriber(endpoint, "x.", HEARTBEAT_TYPE)
    second = subscriber(endpoint, "x.", HEARTBEAT_TYPE)
    try:
        wait_live(pub, first)
        wait_live(pub, second)
        assert pub.wants("x.1")
        first.close()  # x. is still subscribed by the second: no unsubscribe comes
        pub.publish("x", {"n": 1}, topic="x.1")
        assert receive_event(second).data == {"n": 1}
        second.close()
        wait_subscriptions_changed(pub)
        while pub.wants("x.1"):  # the last one's unsubscriptions, one message each
            wait_subscriptions_changed(pub)
        skipped = pub.skipped
        pub.publish("x", {"n": 2}, topic="x.1")
        assert pub.skipped == skipped + 1
    finally:
        first.close()
        second.close()


def test_garbage_on_the_publisher_socket_is_ignored(
    publisher: tuple[EventPublisher, str],
) -> None:
    """A peer that speaks XPUB's upstream direction with frames that are no subscription
    message (an XSUB sending anything) changes nothing and breaks nothing."""
    pub, endpoint = publisher
    rogue: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.XSUB)
    rogue.setsockopt(zmq.LINGER, 0)
    rogue.connect(endpoint)
    sock = subscriber(endpoint, "y.", HEARTBEAT_TYPE)
    try:
        for frame in (b"", b"\x02junk", b"\xff" * 4096, b"\x01"):
            rogue.send(frame)
        wait_live(pub, sock)
        pub.publish("y", {"ok": True}, topic="y.1")
        assert receive_event(sock).data == {"ok": True}
    finally:
        rogue.close()
        sock.close()


# -- heartbeats: when they are owed, and none while nothing happens (issue 36) ---------
async def _receive_async(sock: zmq.Socket[bytes]) -> Event:
    import trio

    return await trio.to_thread.run_sync(receive, sock)


async def test_each_new_subscriber_gets_a_heartbeat_at_once(
    publisher: tuple[EventPublisher, str],
) -> None:
    """No periodic beat runs (an hour apart): the subscription itself is answered, for a
    second subscriber to the same topics too (XPUB_VERBOSE), so `wait_live` never waits
    out a period."""
    import trio

    pub, endpoint = publisher
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pub.run_heartbeats, 3600.0)
            first = subscriber(endpoint, "z.", HEARTBEAT_TYPE)
            second = subscriber(endpoint, "z.", HEARTBEAT_TYPE)
            try:
                assert (await _receive_async(first)).type == HEARTBEAT_TYPE
                assert (await _receive_async(second)).type == HEARTBEAT_TYPE
                late = subscriber(endpoint, HEARTBEAT_TYPE)  # after both: its own beat
                try:
                    assert (await _receive_async(late)).type == HEARTBEAT_TYPE
                finally:
                    late.close()
            finally:
                first.close()
                second.close()
            nursery.cancel_scope.cancel()


async def test_a_trailing_heartbeat_follows_events_and_then_nothing_wakes(
    publisher: tuple[EventPublisher, str],
) -> None:
    """After a burst, one heartbeat restates the seq (a lost tail is noticed); with
    nothing published after it, no further message is sent at all."""
    import trio

    pub, endpoint = publisher
    sock = subscriber(endpoint, "w.", HEARTBEAT_TYPE)
    try:
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(functools.partial(pub.run_heartbeats, 3600.0, trailing=0.05))
                assert (await _receive_async(sock)).type == HEARTBEAT_TYPE  # live
                for n in range(3):
                    pub.publish("w", {"n": n}, topic="w.1")
                got = [await _receive_async(sock) for _ in range(4)]
                assert [e.type for e in got] == ["w", "w", "w", HEARTBEAT_TYPE]
                assert got[-1].seq == pub.seq
                await trio.sleep(0.5)  # ten trailing periods of nothing
                assert not sock.poll(0), "a heartbeat with nothing to say"
                nursery.cancel_scope.cancel()
    finally:
        sock.close()


async def test_events_nobody_beats_for_leave_no_trailing_heartbeat_looping(
    publisher: tuple[EventPublisher, str],
) -> None:
    """A subscriber of a topic that did not subscribe to heartbeats (a terminal's output,
    say): the trailing heartbeat after its events is wanted by no one. The loop woke for
    it once a second from then on, for good (gitwatch of an idle tree of 50 worktrees
    and 100 terminals, issue 36): it is due once, and then nothing wakes."""
    import trio

    pub, endpoint = publisher
    beats: list[float] = []
    real = pub.heartbeat

    def counted() -> None:
        beats.append(trio.current_time())
        real()

    pub.heartbeat = counted  # type: ignore[method-assign]
    sock = subscriber(endpoint, "w.")
    try:
        with trio.fail_after(30):
            await trio.to_thread.run_sync(wait_subscriptions_changed, pub)
            assert pub.wants("w.1") and not pub.wants(HEARTBEAT_TYPE)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(functools.partial(pub.run_heartbeats, 3600.0, trailing=0.02))
                pub.publish("w", {"n": 1}, topic="w.1")
                assert (await _receive_async(sock)).type == "w"
                await trio.sleep(0.5)  # 25 trailing periods of nothing
                nursery.cancel_scope.cancel()
        assert len(beats) == 1, f"{len(beats)} heartbeats due for one event"
    finally:
        sock.close()
