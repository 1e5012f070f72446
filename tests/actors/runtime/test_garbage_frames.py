"""Garbage on the wire never kills an actor: every frame gets an error reply or is dropped."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import msgpack
import pytest
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.procs import child_env, kill_all

from orca.paths import resolve_paths
from orca.wire.codec import encode
from orca.wire.envelope import decode_reply, encode_request

# Frames an attacker or a buggy peer might send: random bytes, valid MessagePack of
# the wrong shape, near-miss envelopes, and several frames at once.
json_like = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.text(max_size=20)
    | st.binary(max_size=20),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
    max_leaves=15,
)
near_miss = st.fixed_dictionaries(
    {},
    optional={
        "v": st.integers(-2, 3) | st.text(max_size=3),
        "id": json_like,
        "op": st.sampled_from(["sys.ping", "counter.bump", "nope", ""]) | json_like,
        "args": json_like,
        "idem": json_like,
    },
)
frames = st.lists(
    st.binary(max_size=200) | json_like.map(encode) | near_miss.map(encode),
    min_size=1,
    max_size=3,
)


@pytest.fixture(scope="module")
def actor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[zmq.Socket[bytes], str]]:
    home = tmp_path_factory.mktemp("garbage") / "home"
    env = child_env(Path(home), {"ORCA_ACTOR_NAME": "steady"})
    paths = resolve_paths({"ORCA_HOME": str(home)})
    proc = subprocess.Popen(
        [sys.executable, "-m", "fixture_actors.steady"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    endpoint = paths.ipc_endpoint("steady", "rpc")
    sock.connect(endpoint)
    try:
        sock.send(encode_request("warmup", "sys.ping", {}))
        assert sock.poll(30_000), "the actor did not come up"
        sock.recv()
        yield sock, endpoint
    finally:
        sock.close()
        assert proc.poll() is None, "the actor died during the garbage run"
        kill_all([proc.pid])
        proc.wait()


def drain(sock: zmq.Socket[bytes], timeout_ms: int) -> list[bytes]:
    out = []
    while sock.poll(timeout_ms):
        out.append(sock.recv())
        timeout_ms = 20
    return out


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(garbage=frames)
def test_garbage_frames_get_error_replies_and_never_kill_the_actor(
    actor: tuple[zmq.Socket[bytes], str], garbage: list[bytes]
) -> None:
    """Any garbage gets at most error replies with a stable code; a real ping still works."""
    sock, _ = actor
    sock.send_multipart(garbage)
    for raw in drain(sock, 200):
        reply = decode_reply(raw)
        if not reply.ok:
            assert reply.error is not None
            assert reply.error["code"] in {
                "bad_request",
                "bad_frame",
                "too_large",
                "unknown_op",
                "bad_version",
                "not_found",
                "conflict",
                "internal",
            }
    sock.send(encode_request("alive", "sys.ping", {}))
    replies = [decode_reply(r) for r in drain(sock, 5000)]
    assert any(r.id == "alive" and r.ok for r in replies)


def test_ill_typed_args_name_the_field(actor: tuple[zmq.Socket[bytes], str]) -> None:
    """A wrong type in args is refused with bad_request naming the field path."""
    sock, _ = actor
    sock.send(msgpack.packb({"v": 1, "id": "t", "op": "counter.bump", "args": {"by": "x"}}))
    (raw,) = drain(sock, 5000)
    reply = decode_reply(raw)
    assert reply.error is not None
    assert reply.error["code"] == "bad_request" and "$.by" in reply.error["message"]


@pytest.mark.parametrize(
    "frame",
    [
        b"\x91" * 2000 + b"\x00",  # an array nested 2,000 deep (2 KB)
        b"\x81\xa1a" * 2000 + b"\x00",  # maps nested 2,000 deep
        msgpack.packb({"v": 1, "id": "deep", "op": "counter.bump", "args": {}})[:-1]
        + b"\x81\xa2by"
        + b"\x91" * 3000
        + b"\x00",  # a valid envelope whose args nest 3,000 deep
    ],
    ids=["array", "map", "args"],
)
def test_deeply_nested_frames_are_bad_frames_not_a_crash(
    actor: tuple[zmq.Socket[bytes], str], frame: bytes
) -> None:
    """Nesting deeper than the decoder's recursion gets bad_frame; the actor keeps serving."""
    sock, _ = actor
    sock.send(frame)
    replies = [decode_reply(r) for r in drain(sock, 5000)]
    assert [r.error["code"] for r in replies if r.error is not None] == ["bad_frame"]
    sock.send(encode_request("alive", "sys.ping", {}))
    assert any(decode_reply(r).id == "alive" for r in drain(sock, 5000))


def test_a_flood_of_refused_requests_is_answered_in_full(
    actor: tuple[zmq.Socket[bytes], str],
) -> None:
    """3,000 malformed and unknown requests sent before the actor reads any: each gets
    its refusal (replies sent from inside the receive path must not recurse into it)."""
    _, endpoint = actor
    # Its own socket, its queues unbounded before it connects (a high-water mark set after
    # connect does not apply): the actor's ROUTER drops what a full peer queue cannot take,
    # and this client reads only after it has sent all 3,000.
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.SNDHWM, 0)
    sock.setsockopt(zmq.RCVHWM, 0)
    sock.connect(endpoint)
    try:
        _flood(sock)
    finally:
        sock.close()


def _flood(sock: zmq.Socket[bytes]) -> None:
    count = 3000
    for i in range(count):
        if i % 2:
            sock.send_multipart([b"extra", encode_request(f"x{i}", "sys.ping", {})])
        else:
            sock.send(encode_request(f"u{i}", "no.such.op", {}))
    sock.send(encode_request("alive", "sys.ping", {}))
    # Read up to the ping sent last (answered after the others): a quiet gap under load
    # is not the end of the replies.
    replies = []
    while sock.poll(30_000):
        replies.append(decode_reply(sock.recv()))
        if replies[-1].id == "alive":
            break
    assert sum(1 for r in replies if not r.ok) == count
    assert replies and replies[-1].id == "alive" and replies[-1].ok
