"""``orca.client.zmtp``: the framing round trip, and what a broken or hostile peer gets.

The peers here are scripted Unix-socket servers (a thread each), so every misbehaviour
is exact; the same client against real pyzmq ROUTER actors is in
tests/actors/runtime/test_zmtp_client.py.
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orca.client import sync, zmtp
from orca.contracts import store
from orca.contracts import sys as sys_contract
from orca.wire.codec import decode_any
from orca.wire.envelope import decode_request, encode_error, encode_ok
from orca.wire.errors import BadRequest, NotFound, Timeout, Unavailable

WAIT_S = 5.0
# A call that must end by a peer's doing, not by its deadline: the deadline is far.
LONG_S = 30.0
MAX = 1024 * 1024


@pytest.fixture
def sock_dir() -> Iterator[Path]:
    """A short private directory: pytest's tmp paths overflow sun_path (107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="zmtp-", dir="/tmp"))
    os.chmod(path, 0o700)
    yield path
    shutil.rmtree(path, ignore_errors=True)


Script = Callable[[socket.socket], None]


class ScriptedPeer:
    """A Unix-socket server that plays ``script`` on its first connection, in a thread."""

    def __init__(self, path: Path, script: Script) -> None:
        self.path = path
        self.endpoint = f"ipc://{path}"
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        os.chmod(path, 0o600)
        self.listener.listen(1)
        self.listener.settimeout(WAIT_S)
        self.error: BaseException | None = None
        self.script = script
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            conn, _ = self.listener.accept()
            with conn:
                conn.settimeout(LONG_S)
                self.script(conn)
        except BaseException as exc:  # reported by close(), in the test's thread
            self.error = exc

    def close(self) -> None:
        self.thread.join(LONG_S)
        self.listener.close()
        assert not self.thread.is_alive(), "the scripted peer did not finish"
        if self.error is not None:
            raise self.error


@pytest.fixture
def peer(sock_dir: Path) -> Iterator[Callable[[Script], ScriptedPeer]]:
    started: list[ScriptedPeer] = []

    def start(script: Script) -> ScriptedPeer:
        started.append(ScriptedPeer(sock_dir / "actor.rpc", script))
        return started[-1]

    yield start
    for p in started:
        p.close()


def wait_closed(conn: socket.socket) -> None:
    """Read (and drop) until the client hangs up."""
    while conn.recv(65536):
        pass


def accept_handshake(conn: socket.socket, socket_type: str = "ROUTER") -> zmtp.FrameReader:
    """Read the client's greeting and READY, answer with ours; the reader holds the rest."""
    reader = zmtp.FrameReader(MAX)
    while reader.greeting() is None or (found := reader.frame()) is None:
        reader.feed(conn.recv(65536))
    flags, body = found
    name, data = zmtp.split_command(body)
    assert flags & zmtp.FLAG_COMMAND and name == "READY"
    assert zmtp.parse_properties(data)["socket-type"] == b"DEALER"
    conn.sendall(zmtp.GREETING + zmtp.ready_command(socket_type))
    return reader


def read_request(conn: socket.socket, reader: zmtp.FrameReader) -> str:
    """The id of the client's next request (one frame)."""
    while (found := reader.frame()) is None:
        reader.feed(conn.recv(65536))
    flags, body = found
    assert flags == 0
    return decode_request(body).id


def ping(endpoint: str, timeout: float = LONG_S) -> object:
    return sync.invoke(sys_contract.PING, endpoint=endpoint, timeout=timeout)


# -- framing (no sockets) ---------------------------------------------------------------


@given(
    parts=st.lists(st.binary(max_size=600), min_size=1, max_size=5),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=8),
)
def test_messages_round_trip_through_any_chunking(parts: list[bytes], cuts: list[int]) -> None:
    """Greeting, READY and a message (short and long frames) decode back to the same
    parts however the stream is cut into reads."""
    stream = zmtp.GREETING + zmtp.ready_command("ROUTER") + zmtp.encode_message(parts)
    reader = zmtp.FrameReader(MAX)
    got: list[bytes] | None = None
    commands: list[tuple[str, bytes]] = []
    bounds = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    for start, end in itertools.pairwise(bounds):
        reader.feed(stream[start:end])
        if reader.greeting() is None:
            continue
        for flags, body in reader.frames():
            if flags & zmtp.FLAG_COMMAND:
                commands.append(zmtp.split_command(body))
            else:
                assert got is None
                got = reader.add_part(flags, body)
    assert got == parts
    ((name, data),) = commands
    assert name == "READY" and zmtp.parse_properties(data) == {"socket-type": b"ROUTER"}


@given(st.dictionaries(st.text("abcXYZ-", min_size=1, max_size=20), st.binary(max_size=300)))
def test_ready_properties_round_trip(props: dict[str, bytes]) -> None:
    """READY metadata decodes to what was encoded (names case-folded, as ZMTP says)."""
    reader = zmtp.FrameReader(MAX)
    reader.feed(zmtp.GREETING + zmtp.encode_command("READY", zmtp.encode_properties(props)))
    assert reader.greeting() is not None
    flags, body = reader.frame() or (0, b"")
    assert flags & zmtp.FLAG_COMMAND
    name, data = zmtp.split_command(body)
    assert name == "READY"
    assert zmtp.parse_properties(data) == {k.lower(): v for k, v in props.items()}


def test_a_frame_larger_than_the_limit_is_refused_from_its_header() -> None:
    """A header announcing 1 TiB is refused before any body byte is awaited or buffered."""
    reader = zmtp.FrameReader(MAX)
    reader.feed(zmtp.GREETING + zmtp.ready_command("ROUTER"))
    assert reader.greeting() is not None and reader.frame() is not None
    reader.feed(bytes((zmtp.FLAG_LONG,)) + (2**40).to_bytes(8, "big"))
    with pytest.raises(zmtp.ProtocolViolation, match="more than 1048576 bytes"):
        reader.frame()


def test_a_message_is_limited_across_its_frames() -> None:
    """Frames under the limit that add up past it are refused as one message."""
    reader = zmtp.FrameReader(1000)
    reader.feed(zmtp.GREETING + zmtp.encode_frame(b"x" * 600, more=True))
    assert reader.greeting() is not None
    flags, body = reader.frame() or (0, b"")
    assert reader.add_part(flags, body) is None
    reader.feed(zmtp.encode_frame(b"y" * 600))
    with pytest.raises(zmtp.ProtocolViolation, match="more than 1000 bytes"):
        reader.frame()


@pytest.mark.parametrize(
    ("greeting", "why"),
    [
        (b"HTTP/1.1 400 Bad Request\r\n\r\n" + b"\0" * 40, "bad greeting signature"),
        (zmtp.SIGNATURE + b"\x02\x00" + b"\0" * 52, "ZMTP 2"),
        (zmtp.SIGNATURE + b"\x03\x01" + b"CURVE".ljust(20, b"\0") + b"\0" * 32, "'CURVE'"),
    ],
)
def test_a_greeting_that_is_not_zmtp3_null_is_refused(greeting: bytes, why: str) -> None:
    reader = zmtp.FrameReader(MAX)
    reader.feed(greeting)
    with pytest.raises(zmtp.ProtocolViolation, match=why):
        reader.greeting()


@pytest.mark.parametrize(
    "body",
    [b"", b"\x09READ", b"\x05READY\x0bSocket-Type\x00\x00\x00\x09ROU", b"\x05READY\x00"],
)
def test_truncated_commands_are_violations(body: bytes) -> None:
    with pytest.raises(zmtp.ProtocolViolation):
        _, data = zmtp.split_command(body)
        zmtp.parse_properties(data)


# -- hostile and broken peers, through orca.client.sync ------------------------------------


def test_a_missing_socket_is_not_running(sock_dir: Path) -> None:
    with pytest.raises(Unavailable, match="orca is not running"):
        ping(f"ipc://{sock_dir}/gone.rpc")


def test_a_stale_socket_file_is_not_running(sock_dir: Path) -> None:
    """A socket file left by a dead actor (nobody accepts) fails at once, not at the
    deadline (pyzmq would wait it out)."""
    path = sock_dir / "stale.rpc"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))
    os.chmod(path, 0o600)
    dead.close()
    with pytest.raises(Unavailable, match="orca is not running"):
        ping(f"ipc://{path}")


def test_a_silent_peer_is_unavailable_at_the_deadline(
    peer: Callable[[Script], ScriptedPeer],
) -> None:
    """A peer that accepts and says nothing fails the handshake: unavailable, not a hang."""
    p = peer(wait_closed)
    with pytest.raises(Unavailable, match="cannot connect") as info:
        ping(p.endpoint, timeout=0.2)
    assert not isinstance(info.value, Timeout)


def test_garbage_from_the_peer_is_a_clear_error(peer: Callable[[Script], ScriptedPeer]) -> None:
    def script(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
        wait_closed(conn)

    p = peer(script)
    with pytest.raises(Unavailable, match=r"not an Orca actor socket.*signature"):
        ping(p.endpoint)


def test_a_curve_server_is_refused_with_its_mechanism(
    peer: Callable[[Script], ScriptedPeer],
) -> None:
    def script(conn: socket.socket) -> None:
        conn.sendall(zmtp.SIGNATURE + b"\x03\x01" + b"CURVE".ljust(20, b"\0") + b"\0" * 32)
        wait_closed(conn)

    p = peer(script)
    with pytest.raises(Unavailable, match="CURVE"):
        ping(p.endpoint)


def test_a_peer_of_the_wrong_type_is_refused(peer: Callable[[Script], ScriptedPeer]) -> None:
    def script(conn: socket.socket) -> None:
        accept_handshake(conn, socket_type="PUB")
        wait_closed(conn)

    p = peer(script)
    with pytest.raises(Unavailable, match="PUB peer cannot serve a DEALER"):
        ping(p.endpoint)


def test_an_error_command_is_shown_with_its_reason(peer: Callable[[Script], ScriptedPeer]) -> None:
    def script(conn: socket.socket) -> None:
        zmtp_reader = zmtp.FrameReader(MAX)
        while zmtp_reader.greeting() is None:
            zmtp_reader.feed(conn.recv(65536))
        reason = b"access denied"
        conn.sendall(zmtp.GREETING + zmtp.encode_command("ERROR", bytes((len(reason),)) + reason))
        wait_closed(conn)

    p = peer(script)
    with pytest.raises(Unavailable, match="refused the handshake: access denied"):
        ping(p.endpoint)


def test_an_oversized_reply_is_refused_from_its_header(
    peer: Callable[[Script], ScriptedPeer],
) -> None:
    """A peer announcing a 2**62-byte reply gets a clear error at once (no allocation,
    no wait for bytes that never come); the limit is pyzmq's MAXMSGSIZE."""

    def script(conn: socket.socket) -> None:
        reader = accept_handshake(conn)
        read_request(conn, reader)
        conn.sendall(bytes((zmtp.FLAG_LONG,)) + (2**62).to_bytes(8, "big") + b"\x81")
        wait_closed(conn)

    p = peer(script)
    with pytest.raises(Unavailable, match="more than 67108864 bytes"):
        ping(p.endpoint)


def test_endless_frames_of_one_message_are_cut_off(peer: Callable[[Script], ScriptedPeer]) -> None:
    def script(conn: socket.socket) -> None:
        reader = accept_handshake(conn)
        read_request(conn, reader)
        conn.sendall(zmtp.encode_frame(b"", more=True) * (zmtp.MAX_PARTS + 1))
        wait_closed(conn)

    p = peer(script)
    with pytest.raises(Unavailable, match=f"more than {zmtp.MAX_PARTS} frames"):
        ping(p.endpoint)


def test_no_reply_is_a_timeout_naming_the_op(peer: Callable[[Script], ScriptedPeer]) -> None:
    def script(conn: socket.socket) -> None:
        reader = accept_handshake(conn)
        read_request(conn, reader)
        wait_closed(conn)

    p = peer(script)
    with pytest.raises(Timeout, match=f"no reply to {sys_contract.PING.name}"):
        ping(p.endpoint, timeout=0.3)


def test_a_reply_trickled_forever_ends_at_the_deadline(
    peer: Callable[[Script], ScriptedPeer],
) -> None:
    """A slow-loris peer (a byte at a time of a frame it never finishes) cannot extend
    the call past its deadline."""

    def script(conn: socket.socket) -> None:
        reader = accept_handshake(conn)
        read_request(conn, reader)
        conn.sendall(bytes((zmtp.FLAG_LONG,)) + (1000).to_bytes(8, "big"))
        conn.settimeout(0.02)
        while True:
            try:
                if not conn.recv(1):
                    return  # the client hung up
            except TimeoutError:
                conn.sendall(b"\x00")
            except OSError:
                return

    p = peer(script)
    with pytest.raises(Timeout):
        ping(p.endpoint, timeout=0.3)


def test_a_peer_hanging_up_is_unavailable(peer: Callable[[Script], ScriptedPeer]) -> None:
    def script(conn: socket.socket) -> None:
        reader = accept_handshake(conn)
        read_request(conn, reader)

    p = peer(script)
    with pytest.raises(Unavailable, match="closed the connection before replying"):
        ping(p.endpoint)


def test_pings_stale_and_malformed_replies_are_handled_until_the_reply(
    peer: Callable[[Script], ScriptedPeer],
) -> None:
    """PING gets its PONG with the context echoed; a reply with another id, a two-frame
    message and an undecodable frame are skipped; the reply itself is returned."""
    pongs: list[bytes] = []

    def script(conn: socket.socket) -> None:
        reader = accept_handshake(conn)
        rid = read_request(conn, reader)
        conn.sendall(zmtp.encode_command("PING", b"\x00\x0actx-42"))
        while (found := reader.frame()) is None:
            reader.feed(conn.recv(65536))
        pongs.append(found[1])
        conn.sendall(
            zmtp.encode_message([encode_ok("someone-else", {"repos": []})])
            + zmtp.encode_message([b"a", encode_ok(rid, {"repos": []})])
            + zmtp.encode_message([b"\xc1 not msgpack"])
            + zmtp.encode_message(
                [encode_ok(rid, {"repos": [{"id": "r1", "path": "/p", "displayName": "p"}]})]
            )
        )
        wait_closed(conn)

    p = peer(script)
    listing = sync.invoke(store.REPO_LIST, endpoint=p.endpoint, timeout=LONG_S)
    assert [r.id for r in listing.repos] == ["r1"]
    assert pongs == [zmtp.encode_command("PONG", b"ctx-42")[2:]]


def test_an_error_reply_raises_its_class(peer: Callable[[Script], ScriptedPeer]) -> None:
    def script(conn: socket.socket) -> None:
        reader = accept_handshake(conn)
        rid = read_request(conn, reader)
        conn.sendall(zmtp.encode_message([encode_error(rid, NotFound("no repo r9"))]))
        wait_closed(conn)

    p = peer(script)
    with pytest.raises(NotFound, match="no repo r9"):
        sync.invoke(store.REPO_LIST, endpoint=p.endpoint, timeout=LONG_S)


def test_a_non_utf8_argument_is_refused_before_any_io(sock_dir: Path) -> None:
    """The request is encoded before connecting: bad input is the caller's error even
    when a (scripted) peer would accept it."""
    path = sock_dir / "actor.rpc"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    os.chmod(path, 0o600)
    listener.listen(1)
    try:
        with pytest.raises(BadRequest, match="not valid UTF-8"):
            sync.call_endpoint(f"ipc://{path}", "x.y", {"path": "/tmp/\udcff"}, timeout=LONG_S)
    finally:
        listener.close()


def test_a_local_call_does_not_import_pyzmq(peer: Callable[[Script], ScriptedPeer]) -> None:
    """A process that only calls over ipc:// never loads pyzmq (the CLI's start-up)."""

    def script(conn: socket.socket) -> None:
        reader = accept_handshake(conn)
        rid = read_request(conn, reader)
        conn.sendall(zmtp.encode_message([encode_ok(rid, {"pong": True, "t": 1.0})]))
        wait_closed(conn)

    p = peer(script)
    code = (
        "import sys\n"
        "from orca.client.sync import call_endpoint\n"
        f"print(call_endpoint({p.endpoint!r}, 'sys.ping', timeout={LONG_S}))\n"
        "print('zmq' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=LONG_S, check=True
    ).stdout.split("\n")
    assert out[:2] == [str({"pong": True, "t": 1.0}), "False"]


def test_requests_are_sent_as_one_frame_of_the_envelope(
    peer: Callable[[Script], ScriptedPeer],
) -> None:
    """The bytes on the wire are exactly ``encode_request``'s (long frame above 255)."""
    seen: list[bytes] = []
    big = {"pad": "x" * 5000}

    def script(conn: socket.socket) -> None:
        reader = accept_handshake(conn)
        while (found := reader.frame()) is None:
            reader.feed(conn.recv(65536))
        seen.append(found[1])
        rid = decode_request(found[1]).id
        conn.sendall(zmtp.encode_message([encode_ok(rid, None)]))
        wait_closed(conn)

    p = peer(script)
    assert sync.call_endpoint(p.endpoint, "x.y", big, timeout=LONG_S) is None
    request = decode_request(seen[0])
    assert (request.op, decode_any(bytes(request.args))) == ("x.y", big)


def test_a_socket_path_too_long_for_the_kernel_is_a_clear_error(sock_dir: Path) -> None:
    """An existing path longer than sun_path cannot be connected to: said, not "not
    running"."""
    deep = sock_dir / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True, mode=0o700)
    (deep / "actor.rpc").touch(mode=0o600)
    with pytest.raises(Unavailable, match=r"cannot connect to .*too long"):
        ping(f"ipc://{deep}/actor.rpc")


def test_a_message_before_ready_is_a_violation(peer: Callable[[Script], ScriptedPeer]) -> None:
    def script(conn: socket.socket) -> None:
        reader = zmtp.FrameReader(MAX)
        while reader.greeting() is None:
            reader.feed(conn.recv(65536))
        conn.sendall(zmtp.GREETING + zmtp.encode_message([b"early"]))
        wait_closed(conn)

    p = peer(script)
    with pytest.raises(Unavailable, match="a message before the peer's READY"):
        ping(p.endpoint)


# -- begin: several calls at once ------------------------------------------------------


def test_begun_calls_are_all_on_the_wire_before_any_result_is_read(sock_dir: Path) -> None:
    """Each peer replies only once the other has its request: a client that waited for
    the first reply before sending the second request would never get either."""
    received = {name: threading.Event() for name in ("ptyd", "hooks")}

    def serving(name: str, other: str) -> Script:
        def script(conn: socket.socket) -> None:
            reader = accept_handshake(conn)
            rid = read_request(conn, reader)
            received[name].set()
            assert received[other].wait(WAIT_S), f"{other}'s request never came"
            conn.sendall(zmtp.encode_message([encode_ok(rid, {"pong": True, "t": 1.0})]))
            wait_closed(conn)

        return script

    peers = [
        ScriptedPeer(sock_dir / "ptyd.rpc", serving("ptyd", "hooks")),
        ScriptedPeer(sock_dir / "hooks.rpc", serving("hooks", "ptyd")),
    ]
    try:
        first, second = (
            sync.begin(sys_contract.PING, endpoint=p.endpoint, timeout=LONG_S) for p in peers
        )
        with first, second:
            assert second.result().pong and first.result().pong
            with pytest.raises(RuntimeError, match="taken already"):
                first.result()
    finally:
        for p in peers:
            p.close()


def test_a_begun_call_fails_on_its_own_when_it_is_read(sock_dir: Path) -> None:
    """Nothing listening is raised by ``result()``, as ``invoke`` raises it; a call
    dropped unread closes its connection (the peer sees the client hang up)."""
    missing = sync.begin(sys_contract.PING, endpoint=f"ipc://{sock_dir}/gone.rpc")
    hung_up = threading.Event()

    def script(conn: socket.socket) -> None:
        reader = accept_handshake(conn)
        read_request(conn, reader)
        wait_closed(conn)
        hung_up.set()

    p = ScriptedPeer(sock_dir / "store.rpc", script)
    try:
        with sync.begin(sys_contract.PING, endpoint=p.endpoint, timeout=LONG_S):
            pass
        assert hung_up.wait(WAIT_S)
    finally:
        p.close()
    with pytest.raises(Unavailable, match="orca is not running"):
        missing.result()
