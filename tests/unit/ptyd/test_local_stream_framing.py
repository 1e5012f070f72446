"""``LocalTerminalStream``'s framing against a plain Unix socket (no ptyd): frames cut at
any byte and several per read give the same output in order, and keys sent faster than
the peer reads arrive whole and in order (the one-``send`` fast path, then the queue)."""

from __future__ import annotations

import random
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from orca.client.terminal import LocalTerminalStream
from orca.contracts import ptyd
from orca.contracts.ptyd import LOCAL_FRAME_HEADER, LOCAL_STREAM_FILE
from orca.paths import resolve_paths

SID = "repo1::/w/a@@0123abcd"
POLL_MS = 5000
HEADER = struct.Struct(LOCAL_FRAME_HEADER)


def frame(message: ptyd.FromPtyd) -> bytes:
    body = msgspec.msgpack.encode(message)
    return HEADER.pack(len(body)) + body


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[LocalTerminalStream, socket.socket]]:
    """A stream connected to a listening socket of ours, and our end of it."""
    paths = resolve_paths({"ORCA_HOME": str(tmp_path / "home")}).ensure()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(paths.runtime_dir / LOCAL_STREAM_FILE))
    listener.listen(1)
    stream = LocalTerminalStream(SID, paths)
    server, _ = listener.accept()
    listener.close()
    try:
        yield stream, server
    finally:
        stream.close()
        server.close()


def test_frames_cut_anywhere_give_the_same_output_in_order(
    pair: tuple[LocalTerminalStream, socket.socket],
) -> None:
    stream, server = pair
    rng = random.Random(14)
    chunks = [
        bytes(rng.randrange(32, 127) for _ in range(rng.randrange(1, 3000))) for _ in range(60)
    ]
    wire, offset = b"", 0
    for data in chunks:
        wire += frame(ptyd.StreamOutput(offset=offset, data=data, answer=True))
        offset += len(data)
    shown: list[bytes] = []
    at = 0
    while at < len(wire):  # cuts inside headers and bodies, several frames per cut too
        cut = min(len(wire), at + rng.choice((1, 3, 4, 5, 700, 9000)))
        server.sendall(wire[at:cut])
        at = cut
        shown += [data for data, repaint in stream.poll_output(1) if not repaint]
    deadline = time.monotonic() + POLL_MS / 1000
    while stream.cursor.offset < offset and time.monotonic() < deadline:
        shown += [data for data, _repaint in stream.poll_output(POLL_MS)]
    assert b"".join(shown) == b"".join(chunks)
    assert stream.cursor.offset == offset and stream.malformed == 0


def test_keys_faster_than_the_peer_reads_arrive_whole_and_in_order(
    pair: tuple[LocalTerminalStream, socket.socket],
) -> None:
    stream, server = pair
    stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    # Up to 6 kB (a paste): a send then takes part of a frame, the rest is queued.
    keys = [b"k%05d-" % i + b"x" * (i * 37 % 6000) for i in range(2000)]
    received = bytearray()
    total = sum(
        len(HEADER.pack(0)) + len(msgspec.msgpack.encode(ptyd.StreamInput(data=k, session_id=SID)))
        for k in keys
    )

    def read_slowly() -> None:
        while len(received) < total:
            data = server.recv(1000)
            if not data:
                return
            received.extend(data)

    reader = threading.Thread(target=read_slowly)
    reader.start()
    try:
        for key in keys:
            stream.write(key)  # blocks (bounded) only while the socket is full
    finally:
        reader.join(timeout=30)
    assert not reader.is_alive()
    decoder = msgspec.msgpack.Decoder(ptyd.ToPtyd)
    got, at = [], 0
    while at < len(received):
        (size,) = HEADER.unpack_from(received, at)
        message = decoder.decode(bytes(received[at + HEADER.size : at + HEADER.size + size]))
        assert isinstance(message, ptyd.StreamInput)
        got.append(message.data)
        at += HEADER.size + size
    assert got == keys


def _messages(server: socket.socket, want: int) -> list[ptyd.ToPtyd]:
    """The next ``want`` messages the stream sent to its peer."""
    decoder = msgspec.msgpack.Decoder(ptyd.ToPtyd)
    server.settimeout(POLL_MS / 1000)
    data, out = b"", []
    while len(out) < want:
        data += server.recv(4096)
        while len(data) >= HEADER.size:
            (size,) = HEADER.unpack_from(data, 0)
            if len(data) < HEADER.size + size:
                break
            out.append(decoder.decode(data[HEADER.size : HEADER.size + size]))
            data = data[HEADER.size + size :]
    return out


def test_a_snapshot_older_than_the_stream_has_the_rest_read_again(
    pair: tuple[LocalTerminalStream, socket.socket],
) -> None:
    """``restart_at`` behind what the stream already handed on (a resize's screen, an
    RPC, came after output the stream brought): ptyd is asked for the output from the
    snapshot's offset once more, and it is handed on again, once; a live chunk that
    comes before that catch-up is not asked for a second time."""
    stream, server = pair
    server.sendall(frame(ptyd.StreamOutput(offset=0, data=b"0123456789", answer=True)))
    deadline = time.monotonic() + POLL_MS / 1000
    while stream.cursor.offset < 10 and time.monotonic() < deadline:
        stream.poll_output(POLL_MS)
    stream.restart_at(4)
    assert _messages(server, 1) == [ptyd.StreamRead(since=4)]
    server.sendall(
        frame(ptyd.StreamOutput(offset=10, data=b"ab", answer=True))  # live, past us
        + frame(ptyd.StreamOutput(offset=4, data=b"456789ab", answer=True))  # the read
    )
    shown: list[bytes] = []
    deadline = time.monotonic() + POLL_MS / 1000
    while stream.cursor.offset < 12 and time.monotonic() < deadline:
        shown += [data for data, _repaint in stream.poll_output(POLL_MS)]
    assert b"".join(shown) == b"456789ab"
    stream.keepalive()  # the next thing sent is a ping, not a second read
    assert [type(m) for m in _messages(server, 1)] == [ptyd.StreamPing]
