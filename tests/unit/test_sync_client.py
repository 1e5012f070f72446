"""``orca.client.sync``: typed blocking calls (records keep unknown fields) and the
blocking typed subscription the CLI follows events with (``worktree create``'s progress)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
import zmq

from orca.cli.worktree import PROGRESS_CONSUMER
from orca.client.sync import Subscription, invoke
from orca.contracts import gitwatch, store
from orca.contracts.sys import HEARTBEAT_TYPE
from orca.model.codec import to_builtins
from orca.wire.envelope import Event, decode_request, encode_event, encode_ok
from orca.wire.errors import BadFrame

REQUEST = "0123456789abcdef"
POLL_MS = 5000
WAIT_S = 5.0


class FakePublisher:
    """An XPUB socket: it sees each SUBSCRIBE, so a test knows the subscriber is live."""

    def __init__(self, endpoint: str) -> None:
        ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
        self.sock = ctx.socket(zmq.XPUB)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.bind(endpoint)
        self.seq = 0

    def wait_subscribed(self, topic: str) -> None:
        while True:
            assert self.sock.poll(POLL_MS, zmq.POLLIN), f"no subscription to {topic}"
            if self.sock.recv()[1:].decode() == topic:
                return

    def send(self, topic: str, type_: str, data: object) -> None:
        self.seq += 1
        event = Event(1, gitwatch.CONTRACT.actor, "e0", self.seq, type_, data)
        self.sock.send_multipart((topic.encode(), encode_event(event)))

    def close(self) -> None:
        self.sock.close(linger=0)


def _progress(stage: object, text: str) -> dict[str, object]:
    return {"requestId": REQUEST, "repoId": "r1", "stage": stage, "text": text}


def test_a_malformed_progress_event_is_logged_once_and_the_next_one_arrives(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A progress event with an unknown stage is counted, logged once and skipped;
    the following events arrive typed, in order."""
    endpoint = f"ipc://{tmp_path}/gitwatch.pub"
    topic = gitwatch.progress_topic(REQUEST)
    publisher = FakePublisher(endpoint)
    sub = Subscription(
        endpoint, [gitwatch.CREATE_PROGRESS], consumer=PROGRESS_CONSUMER, topics=[topic]
    )
    try:
        publisher.wait_subscribed(topic)
        publisher.send(topic, gitwatch.CREATE_PROGRESS.type, _progress("unpacking", "?"))
        publisher.send(topic, gitwatch.CREATE_PROGRESS.type, {"requestId": REQUEST})
        publisher.send(topic, gitwatch.CREATE_PROGRESS.type, _progress("setup", "installing"))
        publisher.send(topic, gitwatch.CREATE_PROGRESS.type, _progress("done", ""))
        received = [sub.receive(WAIT_S), sub.receive(WAIT_S)]
    finally:
        sub.close()
        publisher.close()
    steps = [found[1] for found in received if found is not None]
    assert [(s.stage, s.text) for s in steps] == [("setup", "installing"), ("done", "")]
    assert all(isinstance(s, gitwatch.CreateProgress) for s in steps)
    assert sub.stats.malformed == 2 and sub.stats.decoded == 2
    warnings = [r.getMessage() for r in caplog.records if PROGRESS_CONSUMER in r.getMessage()]
    assert len(warnings) == 2 and "$.stage" in warnings[0] and "repoId" in warnings[1]


def test_undecodable_frames_and_other_types_are_skipped(tmp_path: Path) -> None:
    """Garbage bytes are counted as malformed; events of types not followed are ignored."""
    endpoint = f"ipc://{tmp_path}/gitwatch.pub"
    topic = gitwatch.progress_topic(REQUEST)
    publisher = FakePublisher(endpoint)
    sub = Subscription(endpoint, [gitwatch.CREATE_PROGRESS], consumer="test", topics=[topic])
    try:
        publisher.wait_subscribed(topic)
        publisher.sock.send_multipart((topic.encode(), b"\xc1 not msgpack"))
        publisher.send(topic, gitwatch.REPO_UNAVAILABLE.type, {"repoId": "r1"})
        publisher.send(topic, gitwatch.CREATE_PROGRESS.type, _progress("git", "checking out"))
        found = sub.receive(WAIT_S)
        assert sub.receive(0.05) is None  # nothing else is pending
    finally:
        sub.close()
        publisher.close()
    assert found is not None and found[0].seq == 2 and found[1].text == "checking out"
    assert sub.stats.malformed == 1 and sub.stats.decoded == 1


def test_wait_live_returns_on_a_heartbeat_and_keeps_events_that_came_first(
    tmp_path: Path,
) -> None:
    """An event that arrives before the heartbeat is not lost to ``wait_live``."""
    endpoint = f"ipc://{tmp_path}/gitwatch.pub"
    topic = gitwatch.progress_topic(REQUEST)
    publisher = FakePublisher(endpoint)
    sub = Subscription(endpoint, [gitwatch.CREATE_PROGRESS], consumer="test", topics=[topic])
    try:
        publisher.wait_subscribed(topic)
        assert not sub.wait_live(0.05)  # no heartbeat yet
        publisher.wait_subscribed(HEARTBEAT_TYPE)
        publisher.send(topic, gitwatch.CREATE_PROGRESS.type, _progress("git", "early"))
        publisher.send(HEARTBEAT_TYPE, HEARTBEAT_TYPE, None)
        assert sub.wait_live(WAIT_S)
        early = sub.receive(0)
        deadline = time.monotonic() + 0.05
        assert list(sub.until(deadline)) == []
    finally:
        sub.close()
        publisher.close()
    assert early is not None and early[1].text == "early"


def _serve_one(endpoint: str, result: Any) -> threading.Thread:
    """A ROUTER that answers one request with ``result`` (as an actor would encode it)."""
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    router = ctx.socket(zmq.ROUTER)
    router.bind(endpoint)

    def serve() -> None:
        try:
            if router.poll(POLL_MS, zmq.POLLIN):
                ident, frame = router.recv_multipart()
                router.send_multipart((ident, encode_ok(decode_request(frame).id, result)))
        finally:
            router.close(linger=1000)  # time for the reply to leave before the socket goes

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def test_invoke_returns_records_with_the_fields_this_build_does_not_know(tmp_path: Path) -> None:
    """A repo field from a newer store survives the typed decode and prints as it came."""
    endpoint = f"ipc://{tmp_path}/store.rpc"
    sent = {"id": "r1", "path": "/src/p", "displayName": "p", "fromTheFuture": [1, 2]}
    server = _serve_one(endpoint, {"repos": [sent]})
    listing = invoke(store.REPO_LIST, endpoint=endpoint, timeout=WAIT_S)
    server.join()
    (repo,) = listing.repos
    assert (repo.id, repo.display_name) == ("r1", "p")
    assert to_builtins(repo) == sent


def test_invoke_refuses_a_reply_that_does_not_match_the_result_type(tmp_path: Path) -> None:
    """A reply missing a required field is the peer's fault: BadFrame, naming the op."""
    endpoint = f"ipc://{tmp_path}/store.rpc"
    server = _serve_one(endpoint, {"repos": [{"id": "r1"}]})
    with pytest.raises(BadFrame, match=store.REPO_LIST.name):
        invoke(store.REPO_LIST, endpoint=endpoint, timeout=WAIT_S)
    server.join()
