"""A blocking ZMTP 3.1 DEALER for one request/reply over a local ``ipc://`` socket.

Why this exists: a CLI command is a fresh process, and its start-up is most of what a
user waits for (``orca term ls`` in a shell loop, completion on every Tab). Importing
pyzmq costs about 15-20 ms on the 2-core reference box, as much as the whole bare
interpreter start (``bench/cli.py`` prints both), while one request/reply over a Unix
socket needs only the standard library. So ``orca.client.sync`` speaks the wire itself
for ``ipc://`` endpoints (NULL security: the socket file's 0700 directory is the access
control) and keeps pyzmq for everything else (``tcp://`` with CURVE, subscriptions).
The actors are unchanged: they are pyzmq ROUTER sockets and see an ordinary DEALER.

The protocol (ZMTP 3.1, https://rfc.zeromq.org/spec/37/, NULL mechanism
https://rfc.zeromq.org/spec/23/):

- greeting, 64 bytes each way: signature ``FF 00*8 7F``, version ``3 1``, the
  mechanism name padded to 20 bytes (``NULL``), ``as-server`` (0), 31 bytes filler;
- each side sends a READY command with its properties (``Socket-Type``: ours
  ``DEALER``; the peer must be a type a DEALER may talk to: ROUTER, DEALER or REP) or
  an ERROR command with a reason;
- then frames: a flags byte (bit 0 MORE, bit 1 LONG, bit 2 COMMAND), the size in one
  byte, or in eight (network order) when LONG, then the body. A message is the frames
  up to the first one without MORE. PING commands are answered with PONG.

The framing is sans-I/O (:class:`FrameReader` is fed bytes and yields frames), so it is
tested without sockets (hypothesis round trip); :class:`Connection` is the thin shell.

What a hostile or broken peer can do to us, bounded:

- memory: a frame header is checked against ``max_message`` (the whole message) before
  any body is read, and bodies are buffered only as their bytes arrive, so a peer that
  announces 2**63 bytes costs a header; commands are capped at ``MAX_COMMAND_BYTES``
  and a message at ``MAX_PARTS`` frames;
- time: every read and write runs against the caller's deadline (socket timeouts);
- anything that is not ZMTP 3 NULL (a bad signature, version 2, CURVE, a command
  frame with MORE, unknown flags) is :class:`ProtocolViolation`, never a hang.

Exceptions (``orca.client.sync`` maps them to the ``OrcaError`` classes the pyzmq
client raises; it only fails sooner where pyzmq waits out the deadline: a stale socket
file nobody accepts on, a peer that hangs up, a peer that breaks the protocol):

    ZmtpError
    ├── NotListening        the socket file is missing or nobody accepts on it
    ├── ConnectFailed       connecting failed otherwise (EACCES, path too long)
    ├── HandshakeTimeout    the peer did not complete the handshake by the deadline
    ├── ReceiveTimeout      no (whole) message by the deadline
    ├── PeerClosed          the peer closed the connection
    └── ProtocolViolation   the peer does not speak ZMTP 3 NULL as a ROUTER does
"""

from __future__ import annotations

# The C socket type itself: ``socket.py`` adds only enum wrappers of the constants and
# the file-object helpers, and building those enums is 2-3 ms of start-up.
import _socket
import time
from collections.abc import Iterator

SIGNATURE = b"\xff" + b"\x00" * 8 + b"\x7f"
GREETING_BYTES = 64
MECHANISM = b"NULL"
# Our greeting: ZMTP 3.1, NULL, not the server side.
GREETING = SIGNATURE + b"\x03\x01" + MECHANISM.ljust(20, b"\x00") + b"\x00" + b"\x00" * 31

FLAG_MORE = 0x01
FLAG_LONG = 0x02
FLAG_COMMAND = 0x04
_FLAGS_KNOWN = FLAG_MORE | FLAG_LONG | FLAG_COMMAND

SOCKET_TYPE = "DEALER"
# The socket types a DEALER may be connected to (ZMTP 3.1, "Socket types").
PEER_TYPES = frozenset({"ROUTER", "DEALER", "REP"})
# READY carries a few short properties; a command larger than this is not one we know.
MAX_COMMAND_BYTES = 64 * 1024
# A reply is one frame; a peer sending endless empty MORE frames is cut off here.
MAX_PARTS = 64
# Bytes read per recv: large enough that a ~100 KB listing arrives in a few calls.
READ_CHUNK = 256 * 1024


class ZmtpError(Exception):
    """Base of everything this module raises."""


class NotListening(ZmtpError):
    """The socket file is missing, or nothing accepts connections on it."""


class ConnectFailed(ZmtpError):
    """The socket exists but cannot be connected to (permissions, path length)."""


class HandshakeTimeout(ZmtpError):
    """The peer did not complete the ZMTP handshake before the deadline."""


class ReceiveTimeout(ZmtpError):
    """No whole message arrived before the deadline."""


class PeerClosed(ZmtpError):
    """The peer closed the connection (an actor restarting, or one that refused us)."""


class ProtocolViolation(ZmtpError):
    """The peer sent something ZMTP 3 NULL does not allow (or more than our limits)."""


def encode_frame(body: bytes, *, more: bool = False, command: bool = False) -> bytes:
    """One frame: flags, size (short or long form), body."""
    flags = (FLAG_MORE if more else 0) | (FLAG_COMMAND if command else 0)
    if len(body) <= 255:
        return bytes((flags, len(body))) + body
    return bytes((flags | FLAG_LONG,)) + len(body).to_bytes(8, "big") + body


def encode_message(parts: list[bytes]) -> bytes:
    """A message: every part but the last carries MORE."""
    last = len(parts) - 1
    return b"".join(encode_frame(p, more=i < last) for i, p in enumerate(parts))


def encode_command(name: str, data: bytes = b"") -> bytes:
    raw = name.encode("ascii")
    return encode_frame(bytes((len(raw),)) + raw + data, command=True)


def encode_properties(properties: dict[str, bytes]) -> bytes:
    """READY's metadata: name (1-byte size, ASCII), value (4-byte size)."""
    out = bytearray()
    for name, value in properties.items():
        raw = name.encode("ascii")
        out += bytes((len(raw),)) + raw + len(value).to_bytes(4, "big") + value
    return bytes(out)


def ready_command(socket_type: str = SOCKET_TYPE) -> bytes:
    return encode_command("READY", encode_properties({"Socket-Type": socket_type.encode()}))


def parse_properties(data: bytes) -> dict[str, bytes]:
    """The metadata of a READY command; a truncated or overlong entry is a violation."""
    props: dict[str, bytes] = {}
    i = 0
    while i < len(data):
        size = data[i]
        name = data[i + 1 : i + 1 + size]
        i += 1 + size
        if len(name) != size or size == 0 or i + 4 > len(data):
            raise ProtocolViolation("truncated property in READY")
        value_size = int.from_bytes(data[i : i + 4], "big")
        i += 4
        if i + value_size > len(data):
            raise ProtocolViolation("property value runs past the end of READY")
        props[name.decode("ascii", "replace").lower()] = data[i : i + value_size]
        i += value_size
    return props


def split_command(body: bytes) -> tuple[str, bytes]:
    """A command frame's name and data."""
    if not body or len(body) < 1 + body[0]:
        raise ProtocolViolation("truncated command name")
    size = body[0]
    return body[1 : 1 + size].decode("ascii", "replace"), body[1 + size :]


def check_greeting(greeting: bytes) -> None:
    """Raise ProtocolViolation unless ``greeting`` is a ZMTP 3 NULL one."""
    if greeting[0] != 0xFF or not greeting[9] & 0x01:
        raise ProtocolViolation("not a ZMTP peer (bad greeting signature)")
    if greeting[10] < 3:
        raise ProtocolViolation(f"peer speaks ZMTP {greeting[10]}, not 3")
    mechanism = greeting[12:32].rstrip(b"\x00")
    if mechanism != MECHANISM:
        shown = mechanism.decode("ascii", "replace")
        raise ProtocolViolation(f"peer wants the {shown!r} security mechanism, not NULL")


class FrameReader:
    """Incremental ZMTP 3 decoder: ``feed`` bytes, then take greeting, frames, messages.

    Invariant: ``self._buf`` never holds more than one frame's header plus the bytes of
    the message being assembled (at most ``max_message`` + one read chunk), because a
    header announcing more than the limit is refused before its body is awaited.
    """

    def __init__(self, max_message: int) -> None:
        self.max_message = max_message
        self._buf = bytearray()
        self._greeting: bytes | None = None
        self._parts: list[bytes] = []
        self._message_bytes = 0

    def feed(self, data: bytes) -> None:
        self._buf += data

    def greeting(self) -> bytes | None:
        """The peer's 64-byte greeting (checked) once it is complete, else None."""
        if self._greeting is None:
            # Check the signature as soon as it is in: a non-ZMTP peer is refused
            # without waiting for 64 bytes it may never send.
            if len(self._buf) >= 10 and (self._buf[0] != 0xFF or not self._buf[9] & 1):
                raise ProtocolViolation("not a ZMTP peer (bad greeting signature)")
            if len(self._buf) < GREETING_BYTES:
                return None
            greeting = bytes(self._buf[:GREETING_BYTES])
            check_greeting(greeting)
            del self._buf[:GREETING_BYTES]
            self._greeting = greeting
        return self._greeting

    def frame(self) -> tuple[int, bytes] | None:
        """The next whole frame as (flags, body), or None until more bytes are fed."""
        buf = self._buf
        if len(buf) < 2:
            return None
        flags = buf[0]
        if flags & ~_FLAGS_KNOWN:
            raise ProtocolViolation(f"unknown frame flags 0x{flags:02x}")
        if flags & FLAG_LONG:
            if len(buf) < 9:
                return None
            size, start = int.from_bytes(buf[1:9], "big"), 9
        else:
            size, start = buf[1], 2
        if flags & FLAG_COMMAND:
            if flags & FLAG_MORE:
                raise ProtocolViolation("a command frame with MORE set")
            if size > MAX_COMMAND_BYTES:
                raise ProtocolViolation(f"a command of {size} bytes (limit {MAX_COMMAND_BYTES})")
        elif self._message_bytes + size > self.max_message:
            raise ProtocolViolation(
                f"a message of more than {self.max_message} bytes"
                f" (a frame of {size} bytes announced)"
            )
        if len(buf) < start + size:
            return None
        body = bytes(buf[start : start + size])
        del buf[: start + size]
        return flags, body

    def frames(self) -> Iterator[tuple[int, bytes]]:
        while (found := self.frame()) is not None:
            yield found

    def add_part(self, flags: int, body: bytes) -> list[bytes] | None:
        """Add a message frame; the whole message once its last frame is in."""
        self._parts.append(body)
        self._message_bytes += len(body)
        if flags & FLAG_MORE:
            if len(self._parts) >= MAX_PARTS:
                raise ProtocolViolation(f"a message of more than {MAX_PARTS} frames")
            return None
        parts, self._parts, self._message_bytes = self._parts, [], 0
        return parts


class Connection:
    """One DEALER connection to a Unix socket: handshake, send messages, receive them.

    ``connect`` sends our greeting and READY at once and waits for the peer's READY:
    libzmq refuses a message that arrives before its own READY has gone out (it fails
    the handshake with "unexpected command"), so the request waits for the handshake.
    """

    def __init__(self, sock: _socket.socket, max_message: int) -> None:
        self._sock = sock
        self._reader = FrameReader(max_message)
        self.peer_ready = False
        self.peer_properties: dict[str, bytes] = {}

    @classmethod
    def connect(cls, path: str, deadline: float, max_message: int) -> Connection:
        """Connect to ``path`` and complete the handshake before ``deadline``.

        Raises NotListening at once for a missing socket file or a refused connection,
        HandshakeTimeout when the peer does not complete the handshake in time.
        """
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        conn = cls(sock, max_message)
        try:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            try:
                sock.connect(path)
            except (FileNotFoundError, ConnectionRefusedError) as exc:
                raise NotListening(str(exc.strerror or exc)) from exc
            except TimeoutError as exc:
                raise HandshakeTimeout("connect timed out") from exc
            except OSError as exc:  # EACCES, a path too long for sun_path ...
                raise ConnectFailed(str(exc.strerror or exc)) from exc
            conn._send(GREETING + ready_command(), deadline)
            conn._handshake(deadline)
        except BaseException:
            sock.close()
            raise
        return conn

    def _handshake(self, deadline: float) -> None:
        """Read up to the peer's READY (commands only); what follows stays buffered."""
        reader = self._reader
        while not self.peer_ready:
            found = reader.frame() if reader.greeting() is not None else None
            if found is None:
                self._read(deadline)
                continue
            flags, body = found
            if not flags & FLAG_COMMAND:
                raise ProtocolViolation("a message before the peer's READY")
            self._on_command(body, deadline)

    def send(self, parts: list[bytes], deadline: float) -> None:
        self._send(encode_message(parts), deadline)

    def _send(self, data: bytes, deadline: float) -> None:
        try:
            self._sock.settimeout(max(deadline - time.monotonic(), 0.001))
            self._sock.sendall(data)
        except TimeoutError as exc:
            raise (ReceiveTimeout if self.peer_ready else HandshakeTimeout)(
                "the peer does not read"
            ) from exc
        except OSError as exc:  # EPIPE, ECONNRESET: never the caller's BrokenPipeError
            raise PeerClosed(str(exc.strerror or exc)) from exc

    def receive(self, deadline: float) -> list[bytes]:
        """The next whole message (its frames); commands are handled on the way."""
        while (message := self._take_frames(deadline)) is None:
            self._read(deadline)
        return message

    def _take_frames(self, deadline: float) -> list[bytes] | None:
        """Handle the buffered frames up to the first whole message (returned)."""
        reader = self._reader
        if reader.greeting() is None:
            return None
        for flags, body in reader.frames():
            if flags & FLAG_COMMAND:
                self._on_command(body, deadline)
                continue
            if not self.peer_ready:
                raise ProtocolViolation("a message before the peer's READY")
            message = reader.add_part(flags, body)
            if message is not None:
                return message
        return None

    def _on_command(self, body: bytes, deadline: float) -> None:
        name, data = split_command(body)
        if name == "READY":
            if self.peer_ready:
                raise ProtocolViolation("a second READY")
            props = parse_properties(data)
            peer_type = props.get("socket-type", b"").decode("ascii", "replace")
            if peer_type not in PEER_TYPES:
                raise ProtocolViolation(f"a {peer_type or 'typeless'} peer cannot serve a DEALER")
            self.peer_properties = props
            self.peer_ready = True
        elif name == "ERROR":
            reason = data[1 : 1 + data[0]] if data else b""
            raise ProtocolViolation(
                f"the peer refused the handshake: {reason.decode('utf-8', 'replace')}"
            )
        elif name == "PING":
            # PING: TTL (2 bytes) then up to 16 bytes of context, echoed in PONG.
            self._send(encode_command("PONG", data[2:18]), deadline)
        # Any other command (PONG, SUBSCRIBE ...) means nothing to a DEALER: ignored.

    def _read(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise (ReceiveTimeout if self.peer_ready else HandshakeTimeout)("deadline passed")
        try:
            self._sock.settimeout(remaining)
            data = self._sock.recv(READ_CHUNK)
        except TimeoutError as exc:
            raise (ReceiveTimeout if self.peer_ready else HandshakeTimeout)(
                "deadline passed"
            ) from exc
        except OSError as exc:
            raise PeerClosed(str(exc.strerror or exc)) from exc
        if not data:
            raise PeerClosed("connection closed")
        self._reader.feed(data)

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
