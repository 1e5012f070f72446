"""Hostile frames to every socket of the real tree restart nothing (issue 16 item 4, issue 23).

Issue 16: one 2 KB frame nested ~1,000 deep killed any actor, and orcad with it. Issue 23:
the same frame on ptyd's attach stream (ROUTER or Unix socket) still killed ptyd, and a
nested keeper packet killed the fd keeper: their decoders were not the codec's bounded
one. Here every endpoint a local process (or, through the gateway, an authorized key)
can reach gets garbage, truncated frames, 10,000-deep nesting, huge declared lengths and
wrong types: each actor's RPC ROUTER (orcad's and the gateway's included), the gateway's
CURVE socket, ptyd's attach ROUTER and its Unix stream socket, the fd keeper's socket
and the hooks HTTP endpoint. Every offending peer gets an error (or, for a frame over a
stream's limit, its connection closed); afterwards each endpoint answers a normal
request on the same tree, and no pid changed, nothing restarted.
"""

from __future__ import annotations

import array
import json
import os
import select
import socket
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import zmq
from support.hooks_harness import PANE, WT
from support.procs import wake_every_actor
from support.remote import Tree, free_port, start_tree, stop_tree

from actors.hooks.endpoint_file import read_endpoint_env
from orca import keys
from orca.client.sync import invoke
from orca.contracts import fd_keeper, hooks, ptyd
from orca.contracts import gateway as gw
from orca.contracts import sys as sys_contract
from orca.contracts.ptyd import LOCAL_STREAM_FILE
from orca.keys import KeyPair
from orca.remote import access
from orca.wire.codec import MAX_FRAME_BYTES, encode
from orca.wire.envelope import decode_reply

ACTORS = ("store", "ptyd", "hooks", "gitwatch", "orch", "gateway", "vault", "supervisor")
DEEP = 10_000


def deep_in(message: dict[str, Any]) -> bytes:
    """``message`` with one more field whose value is nested DEEP arrays."""
    body = encode(message)
    assert 0x80 < body[0] < 0x8F, "a fixmap with room for one more key"
    return bytes([body[0] + 1]) + body[1:] + b"\xa1x" + b"\x91" * DEEP + b"\xc0"


def hostile_msgpack(valid: dict[str, Any]) -> dict[str, bytes]:
    """Frames around one valid message of the socket's own protocol."""
    whole = encode(valid)
    return {
        "garbage": b"\xc1" * 64,  # 0xc1: never used by MessagePack
        "empty": b"",
        "truncated": whole[: len(whole) // 2],
        "deep-array": b"\x91" * DEEP + b"\xc0",
        "deep-map": b"\x81\xa1a" * DEEP + b"\xc0",
        "deep-field": deep_in(valid),
        "huge-array": b"\xdd\xff\xff\xff\xff",  # array32 announcing 4 G items
        "huge-bin": b"\x81\xa1x\xc6\xff\xff\xff\xff",
        "huge-map": b"\xdf\xff\xff\xff\xff",
        "not-a-map": encode([1, 2, 3]),
        "wrong-types": encode({k: [v] for k, v in valid.items()}),
        "int-keys": b"\x81\x01\x02",
    }


RPC_FRAMES = hostile_msgpack({"v": 1, "id": "deep", "op": "sys.ping", "args": {}})
STREAM_FRAMES = hostile_msgpack({"t": "ping"}) | {
    "unknown-tag": encode({"t": "nope"}),
    "bad-input": encode({"t": "input", "data": 5}),
    "bad-resize": encode({"t": "resize", "cols": "x", "rows": -1}),
    "too-large": encode({"t": "input", "data": b"x" * (MAX_FRAME_BYTES + 1)}),
}
KEEPER_PACKETS = {
    "garbage": b"\xff\xfe not json",
    "truncated": b'{"op": "hel',
    "deep-array": b"[" * DEEP + b"]" * DEEP,
    "deep-info": b'{"op":"update","key":"k","info":{"a":' + b"[" * DEEP + b"]" * DEEP + b"}}",
    "deep-field": b'{"x":' + b"[" * DEEP + b"]" * DEEP + b',"op":"hello"}',
    "unknown-op": b'{"op":"nope"}',
    "wrong-types": b'{"op":"withdraw","key":5}',
    "not-an-object": b"[1,2,3]",
}
HTTP_BODIES = {
    "garbage": b"\xff\xfe not json",
    "truncated": b'{"hook_event_name": "St',
    "deep-array": b"[" * DEEP + b"]" * DEEP,
    "deep-object": b'{"a":' * DEEP + b"1" + b"}" * DEEP,
    "deep-field": b'{"hook_event_name":"Stop","x":' + b"[" * DEEP + b"]" * DEEP + b"}",
    "not-an-object": b"[1,2,3]",
}
# A JSON object whose fields have the wrong types is a hook event without a status:
# answered 200 ``ignored`` (the hook script never breaks the agent), and nothing changes.
WRONG_TYPES = b'{"hook_event_name": 5, "session_id": [], "orca": "x"}'


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tree]:
    """The real tree, its gateway listening on loopback, with one live terminal."""
    home = tmp_path_factory.mktemp("hostile") / "home"
    serving = start_tree(home, listen=f"tcp://127.0.0.1:{free_port()}")
    try:
        wake_every_actor(serving.paths)
        yield serving
    finally:
        stop_tree(serving)


@pytest.fixture(scope="module")
def session(tree: Tree) -> str:
    args = ptyd.SpawnArgs(
        argv=["/bin/sh", "-c", "echo READY; exec sleep 600"], cwd="/", worktree_id="r::/w/h"
    )
    return invoke(ptyd.SPAWN, args, paths=tree.paths).session_id


def _pids(tree: Tree) -> dict[str, tuple[int | None, int]]:
    """Every actor's (pid, restarts), and the fd keeper's pid."""
    keeper = fd_keeper.read_keeper_lock(tree.paths.runtime_dir / fd_keeper.KEEPER_LOCK_NAME)
    assert keeper is not None and keeper.pid is not None
    return tree.restarts() | {"keeper": (keeper.pid, 0)}


def _dealer(endpoint: str, **curve: bytes) -> zmq.Socket[bytes]:
    sock: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    for option, value in curve.items():
        setattr(sock, option, value)
    sock.connect(endpoint)
    return sock


def _exchange(sock: zmq.Socket[bytes], frames: list[bytes]) -> list[bytes]:
    """Send one message (of ``frames``) and collect what comes back."""
    sock.send_multipart(frames)
    replies = []
    while sock.poll(5000 if not replies else 100):
        replies.append(sock.recv())
    return replies


def _rpc_codes(sock: zmq.Socket[bytes], frames: list[bytes]) -> set[str]:
    codes = set()
    for raw in _exchange(sock, frames):
        reply = decode_reply(raw)
        assert not reply.ok and reply.error is not None, reply
        codes.add(reply.error["code"])
    return codes


def _check_rpc_socket(
    sock: zmq.Socket[bytes], who: str, *, multi_frame: bool = True, unknown: str = "unknown_op"
) -> None:
    """Every hostile frame gets an error reply; so does a message of three frames, where
    ``multi_frame`` (the gateway drops one unanswered: no DEALER sends it), and an
    unknown op (``forbidden`` at the gateway: not among what a key may call)."""
    messages = {name: [frame] for name, frame in RPC_FRAMES.items()}
    if multi_frame:
        messages["three-frames"] = [b"a", b"b", b"c"]
    for name, frames in messages.items():
        codes = _rpc_codes(sock, frames)
        assert codes and codes <= {"bad_frame", "bad_request", "too_large"}, (who, name, codes)
    assert _rpc_codes(sock, [encode({"v": 1, "id": "o", "op": "no.such", "args": {}})]) == {unknown}


def test_every_rpc_router_answers_hostile_frames_with_errors(tree: Tree) -> None:
    """Each actor's ROUTER and orcad's: error replies, then ``sys.hello`` on the same tree."""
    before = _pids(tree)
    for actor in ACTORS:
        endpoint = tree.paths.ipc_endpoint(actor, "rpc")
        sock = _dealer(endpoint)
        try:
            _check_rpc_socket(sock, actor)
        finally:
            sock.close()
        assert invoke(sys_contract.HELLO, endpoint=endpoint).name == actor
    assert _pids(tree) == before


def test_the_gateway_curve_socket_answers_hostile_frames_with_errors(tree: Tree) -> None:
    """An authorized key's garbage is refused frame by frame; the key is served after."""
    before = _pids(tree)
    pair = KeyPair.generate()
    access.authorize(tree.paths, pair.public, "hostile", "full")
    endpoint = invoke(gw.STATUS, paths=tree.paths).listening
    assert endpoint is not None and endpoint.startswith("tcp://")
    sock = _dealer(
        endpoint,
        curve_publickey=pair.public,
        curve_secretkey=pair.secret,
        curve_serverkey=keys.host_public_key(tree.paths),
    )
    try:
        _check_rpc_socket(sock, "gateway (CURVE)", multi_frame=False, unknown="forbidden")
        assert _exchange(sock, [b"a", b"b", b"c"]) == []
        [pong] = _exchange(sock, [encode({"v": 1, "id": "p", "op": "sys.ping", "args": {}})])
        assert decode_reply(pong).ok
    finally:
        sock.close()
    assert _pids(tree) == before


def _stream_replies(replies: list[bytes]) -> list[dict[str, Any]]:
    return [msgspec.msgpack.decode(r) for r in replies]


def _assert_refused(replies: list[dict[str, Any]], name: str) -> None:
    assert replies, f"{name}: no answer"
    assert all(r["t"] == "error" and r["code"] == "bad_request" for r in replies), (name, replies)


def test_ptyd_attach_router_refuses_hostile_messages_and_keeps_attaching(
    tree: Tree, session: str
) -> None:
    """The attach ROUTER: an error per hostile message; a ``hello`` then gets the screen."""
    before = _pids(tree)
    sock = _dealer(tree.paths.ipc_endpoint(ptyd.CONTRACT.actor, ptyd.ATTACH_STREAM_KIND))
    try:
        for name, frame in STREAM_FRAMES.items():
            _assert_refused(_stream_replies(_exchange(sock, [frame])), name)
        hello = encode({"t": "hello", "sessionId": session})
        replies = _stream_replies(_exchange(sock, [hello]))
        screen = next(r for r in replies if r["t"] == "screen")
        assert b"READY" in screen["data"]
    finally:
        sock.close()
    assert _pids(tree) == before


def _frame(body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + body


def _local_replies(conn: socket.socket, body: bytes) -> tuple[list[dict[str, Any]], bool]:
    """Send one framed message; (the messages that came back, whether ptyd closed us)."""
    conn.settimeout(30.0)  # the previous exchange left 0.1 s: a 16 MiB frame needs ptyd to read
    conn.sendall(_frame(body))
    buf = b""
    conn.settimeout(5.0)
    replies: list[dict[str, Any]] = []
    while True:
        try:
            data = conn.recv(1 << 20)
        except TimeoutError:
            return replies, False
        if not data:
            return replies, True
        buf += data
        while len(buf) >= 4 and len(buf) >= 4 + struct.unpack_from(">I", buf)[0]:
            size = struct.unpack_from(">I", buf)[0]
            replies.append(msgspec.msgpack.decode(buf[4 : 4 + size]))
            buf = buf[4 + size :]
        if replies:
            conn.settimeout(0.1)


def test_ptyd_unix_stream_refuses_hostile_frames_and_keeps_attaching(
    tree: Tree, session: str
) -> None:
    """``ptyd.attach.sock``: an error per hostile frame on the same connection; a length
    over the limit closes that connection only; a new one attaches."""
    before = _pids(tree)
    path = str(tree.paths.runtime_dir / LOCAL_STREAM_FILE)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(path)
        for name, frame in STREAM_FRAMES.items():
            replies, closed = _local_replies(conn, frame)
            assert not closed, name
            _assert_refused(replies, name)
        conn.sendall(struct.pack(">I", 0xFFFF_FFFF) + b"\x80")  # a 4 GiB frame announced
        conn.settimeout(10.0)
        assert conn.recv(1) == b"", "a frame over the limit ends the connection"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(path)
        replies, _ = _local_replies(conn, encode({"t": "hello", "sessionId": session}))
        screen = next(r for r in replies if r["t"] == "screen")
        assert b"READY" in screen["data"]
    assert _pids(tree) == before


def _send_with_fds(conn: socket.socket, body: bytes, fds: list[int]) -> None:
    conn.sendmsg([_frame(body)], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])


def _closed_by_peer(read_end: int) -> bool:
    """Whether every other copy of the pipe's write end is closed (a read sees EOF)."""
    ready, _, _ = select.select([read_end], [], [], 10.0)
    return bool(ready) and os.read(read_end, 1) == b""


def test_ptyd_unix_stream_closes_descriptors_it_did_not_ask_for(tree: Tree, session: str) -> None:
    """Issue 24: descriptors passed with a ping, with a ``hand`` of non-terminals, and a
    flood of them in one message are closed by ptyd (a pipe's write end sent to it reads
    EOF once ours is closed), each ``hand`` gets ``bad_request``, and ptyd still attaches."""
    before = _pids(tree)
    path = str(tree.paths.runtime_dir / LOCAL_STREAM_FILE)
    hand = encode({"t": "hand", "sessionId": session})
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(path)
        for body, count in ((encode({"t": "ping"}), 1), (hand, 2), (hand, 200)):
            read_end, write_end = os.pipe()
            try:
                _send_with_fds(conn, body, [write_end] * count)
                os.close(write_end)
                assert _closed_by_peer(read_end), (body, count)
            finally:
                os.close(read_end)
            if body is hand:
                replies, closed = _local_replies(conn, encode({"t": "ping"}))
                assert not closed
        replies, _ = _local_replies(conn, hand)  # no descriptors at all
        assert [r["code"] for r in replies if r["t"] == "error"] == ["bad_request"]
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(path)
        replies, _ = _local_replies(conn, encode({"t": "hello", "sessionId": session}))
        assert any(r["t"] == "screen" for r in replies)
    assert _pids(tree) == before


def test_the_fd_keeper_drops_hostile_packets_and_keeps_serving(tree: Tree, session: str) -> None:
    """The keeper's SEQPACKET socket: each hostile packet is dropped (logged), the same
    connection then gets its ``hello`` answered, and the keeper still holds the session."""
    before = _pids(tree)
    keeper = fd_keeper.read_keeper_lock(tree.paths.runtime_dir / fd_keeper.KEEPER_LOCK_NAME)
    assert keeper is not None and keeper.socket is not None
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as conn:
        conn.settimeout(10.0)
        conn.connect(keeper.socket)
        for packet in KEEPER_PACKETS.values():
            conn.send(packet)
        fd_keeper.send_packet(conn, fd_keeper.Hello())
        hello, fds = fd_keeper.recv_packet(conn, fd_keeper.REPLIES)
        assert fds == [] and isinstance(hello, fd_keeper.KeeperHello), hello
        assert hello.pid == keeper.pid and hello.sessions >= 1
    assert _pids(tree) == before


def _http(port: int, request: bytes) -> tuple[int, bytes]:
    """One raw HTTP exchange: (status code or 0 without a status line, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10.0) as conn:
        conn.sendall(request)
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    return (int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/1.1 ") else 0), body


def _post(port: int, secret: str, body: bytes, *, length: int | None = None) -> tuple[int, bytes]:
    head = (
        "POST /hook/claude HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        f"X-Orca-Hook-Secret: {secret}\r\nX-Orca-Pane-Key: {PANE}\r\n"
        f"X-Orca-Worktree-Id: {WT}\r\n"
        f"Content-Length: {len(body) if length is None else length}\r\n\r\n"
    )
    return _http(port, head.encode() + body)


def test_the_hooks_http_endpoint_refuses_hostile_bodies(tree: Tree) -> None:
    """Authenticated hostile bodies get 4xx; a normal hook POST is applied afterwards."""
    before = _pids(tree)
    endpoint = invoke(hooks.ENDPOINT, paths=tree.paths)
    fields = read_endpoint_env(Path(endpoint.endpoint_file))
    port, secret = endpoint.port, fields["ORCA_HOOK_SECRET"]
    for name, body in HTTP_BODIES.items():
        status, reply = _post(port, secret, body)
        assert 400 <= status < 500, (name, status, reply)
    status, reply = _post(port, secret, WRONG_TYPES)
    assert (status, json.loads(reply)) == (200, {"outcome": "ignored"})
    assert _post(port, secret, b"{}", length=2**40)[0] == 413  # a huge declared length
    assert 400 <= _http(port, b"\x16\x03\x01garbage\r\n\r\n")[0] < 500  # not HTTP at all
    normal = {"hook_event_name": "UserPromptSubmit", "session_id": "s"}
    status, reply = _post(port, secret, json.dumps(normal).encode())
    assert (status, json.loads(reply)) == (200, {"outcome": "applied"})
    assert _pids(tree) == before
