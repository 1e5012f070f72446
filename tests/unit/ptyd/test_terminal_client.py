"""The terminal client decodes ptyd's events by the contract: a malformed one is dropped."""

from __future__ import annotations

import select
import socket
import struct
import threading
from pathlib import Path

import pytest
import zmq

from orca.client.terminal import (
    CONSUMER,
    Attachment,
    LocalTerminalStream,
    TerminalStream,
)
from orca.contracts import ptyd
from orca.contracts.ptyd import LOCAL_STREAM_FILE
from orca.paths import resolve_paths
from orca.wire.codec import encode
from orca.wire.envelope import Event, encode_event

SID = "repo1::/w/a@@0123abcd"
POLL_MS = 5000


def test_a_malformed_output_event_is_logged_once_and_the_next_one_shows(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An output event whose data is not bytes is logged and skipped; the stream goes on."""
    paths = resolve_paths({"ORCA_HOME": str(tmp_path / "home")}).ensure()
    endpoint = paths.ipc_endpoint(ptyd.CONTRACT.actor, "pub")
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    xpub = ctx.socket(zmq.XPUB)
    xpub.setsockopt(zmq.LINGER, 0)
    xpub.bind(endpoint)
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.connect(endpoint)
    attachment = Attachment(SID, paths, sub)
    try:
        attachment._subscribe(SID)
        wanted = {ptyd.output_topic(SID), ptyd.exit_topic(SID)}
        while wanted:  # the client's SUBSCRIBE messages: it is connected
            assert xpub.poll(POLL_MS, zmq.POLLIN)
            wanted.discard(xpub.recv()[1:].decode())

        def send(seq: int, data: object) -> None:
            event = Event(1, ptyd.CONTRACT.actor, "e0", seq, ptyd.OUTPUT.type, data)
            xpub.send_multipart((ptyd.output_topic(SID).encode(), encode_event(event)))

        send(1, {"sessionId": SID, "offset": 0, "data": "not bytes"})
        send(2, {"sessionId": SID, "offset": 0, "data": b"hello"})
        out: list[tuple[bytes, bool]] = []
        while not out:
            out += attachment.poll_output(POLL_MS)
    finally:
        attachment.close()
        xpub.close(linger=0)
    assert out == [(b"hello", False)] and attachment.cursor.offset == 5
    assert attachment.stats.malformed == 1 and attachment.stats.decoded == 1
    warnings = [r.getMessage() for r in caplog.records if CONSUMER in r.getMessage()]
    assert len(warnings) == 1 and "$.data" in warnings[0]


# -- the attach stream's client against a hostile ptyd ----------------------------------
NESTED = b"\x82\xa1t\xa6screen\xa1x" + b"\x91" * 10_000 + b"\xc0"  # 10,000 deep, in a field
HOSTILE_FRAMES = (NESTED, b"\xc1" * 16, b"\x91" * 10_000 + b"\xc0", b"\xdd\xff\xff\xff\xff")


def _screen(data: bytes) -> bytes:
    return encode(
        ptyd.StreamScreen(
            session_id=SID,
            offset=0,
            data=data,
            cols=80,
            rows=24,
            running=True,
            exit_code=None,
            output_ended=False,
        )
    )


def test_a_stream_client_survives_hostile_frames_from_ptyd(tmp_path: Path) -> None:
    """Garbage and 10,000-deep nesting from a fake ptyd are counted and dropped; the
    screen that follows them is shown (the client never raises from ptyd's bytes)."""
    paths = resolve_paths({"ORCA_HOME": str(tmp_path / "home")}).ensure()
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 0)
    router.bind(paths.ipc_endpoint(ptyd.CONTRACT.actor, ptyd.ATTACH_STREAM_KIND))

    def fake_ptyd() -> None:
        assert router.poll(POLL_MS)
        rid, _hello = router.recv_multipart()
        for frame in HOSTILE_FRAMES:
            router.send_multipart([rid, frame])
        router.send_multipart([rid, _screen(b"still here")])

    server = threading.Thread(target=fake_ptyd)
    server.start()
    try:
        stream, screen = TerminalStream.open(SID, paths)
        stream.close()
    finally:
        server.join()
        router.close(linger=0)
    assert (screen, stream.malformed) == (b"still here", len(HOSTILE_FRAMES))


def test_a_local_stream_client_survives_hostile_frames_and_a_huge_length(tmp_path: Path) -> None:
    """On ``ptyd.attach.sock`` too: hostile frames are dropped, the screen after them is
    shown; a length over the frame limit is not buffered toward: the link is dropped
    (the client reconnects later, as after a ptyd restart)."""
    paths = resolve_paths({"ORCA_HOME": str(tmp_path / "home")}).ensure()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(paths.runtime_dir / LOCAL_STREAM_FILE))
    listener.listen(1)
    listener.settimeout(POLL_MS / 1000)
    held: list[socket.socket] = []

    def fake_ptyd() -> None:
        conn, _ = listener.accept()
        held.append(conn)
        conn.settimeout(POLL_MS / 1000)
        conn.recv(65536)  # the hello
        for frame in (*HOSTILE_FRAMES, _screen(b"still here")):
            conn.sendall(struct.pack(">I", len(frame)) + frame)

    server = threading.Thread(target=fake_ptyd)
    server.start()
    try:
        stream, screen = LocalTerminalStream.open(SID, paths)
        server.join()
        assert (screen, stream.malformed) == (b"still here", len(HOSTILE_FRAMES))
        held[0].sendall(struct.pack(">I", 0xFFFF_FFFF) + b"\x80" * 64)
        assert select.select([stream.socket], [], [], POLL_MS / 1000)[0]
        assert stream.poll_output() == []
        assert stream.malformed == len(HOSTILE_FRAMES) + 1 and not stream._connected
        stream.close()
    finally:
        server.join()
        for conn in held:
            conn.close()
        listener.close()
