"""A blocking attached client of one ``ptyd`` session (CLI ``attach``, benchmarks, scripts).

Subscribe first, then ``term.attach`` (the screen, redrawn from ptyd's terminal model,
and the offset it corresponds to), then apply output events through a
:class:`~orca.client.cursor.StreamCursor`: duplicates are skipped, a gap is caught up
with ``term.read {since}``, and a gap beyond the scrollback repaints from a new
``term.attach``. Terminal queries in the output are stripped (:class:`QueryFilter`):
ptyd answers them from the model, so the user's terminal must not answer again. A ``term.rekeyed`` event for our session (a worktree rename) moves
the subscription. The attachment is counted in ``term.list``'s ``subscribers``
through a lease on its ``attachment_id`` (``keepalive`` renews it, ``close`` ends it).
Calls and events are typed by ``orca.contracts.ptyd``; a malformed
event is logged once and dropped (``decode_event_data``), never raised to the caller.

:class:`TerminalStream` is the interactive path (issue 14; ``orca term attach``): one
DEALER on ptyd's attach stream carries keys up and output down, with the same offsets
and gap rule, and tells which attached terminal answers the program's queries.

Like ``orca.client.sync`` it imports neither trio nor anything under ``actors/``.
"""

from __future__ import annotations

import errno
import os
import select
import socket
import struct
import time
import uuid
from collections import deque
from typing import Self

import msgspec
import zmq

from orca.client.cursor import StreamCursor
from orca.client.sync import invoke
from orca.contracts import ptyd
from orca.contracts.base import DecodeStats, decode_event_data, specs_by_type
from orca.contracts.ptyd import LOCAL_FRAME_HEADER, LOCAL_MAX_FRAME, LOCAL_STREAM_FILE
from orca.model.vt import QueryFilter
from orca.paths import OrcaPaths, resolve_paths
from orca.wire.codec import ZMQ_MAX_MESSAGE_BYTES, FrameDecoder
from orca.wire.envelope import decode_event
from orca.wire.errors import BadFrame, OrcaError, Timeout, Unavailable, error_from_wire

# Events a subscriber may queue before PUB drops for it (then it catches up by offset).
RCVHWM = 10_000
# ``term.detach`` on close is best effort: a ptyd that is down must not hold up a detach.
DETACH_TIMEOUT_S = 1.0
CONSUMER = "terminal client<-ptyd"
FOLLOWED = specs_by_type((ptyd.OUTPUT, ptyd.EXIT, ptyd.REKEYED))


class Attachment:
    """One attached view of a session: output in order and complete, input out."""

    def __init__(self, session_id: str, paths: OrcaPaths, sub: zmq.Socket[bytes]) -> None:
        self.session_id = session_id
        self.paths = paths
        self.socket = sub
        self.cursor = StreamCursor(0)
        self.initial = b""
        self.queries = QueryFilter()
        self.exit_code: int | None = None
        self.output_ended = False
        self.stats = DecodeStats()
        self.attachment_id = uuid.uuid4().hex  # counted in term.list while leased
        self.lease_s = 0.0
        self._leased_at = 0.0

    @classmethod
    def open(cls, session_id: str, paths: OrcaPaths | None = None) -> Attachment:
        paths = paths or resolve_paths()
        sub: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.SUB)
        sub.setsockopt(zmq.LINGER, 0)
        sub.setsockopt(zmq.RCVHWM, RCVHWM)
        sub.setsockopt(zmq.MAXMSGSIZE, ZMQ_MAX_MESSAGE_BYTES)
        sub.setsockopt(zmq.SUBSCRIBE, ptyd.REKEYED.type.encode())
        sub.connect(paths.ipc_endpoint(ptyd.CONTRACT.actor, "pub"))
        attachment = cls(session_id, paths, sub)
        try:
            attachment._subscribe(session_id)
            args = ptyd.AttachArgs(session_id=session_id, attachment_id=attachment.attachment_id)
            reply = invoke(ptyd.ATTACH, args, paths=paths)
        except BaseException:
            sub.close(linger=0)
            raise
        attachment.lease_s, attachment._leased_at = reply.lease_s, time.monotonic()
        attachment.session_id = reply.session_id
        attachment.cursor.restart_at(reply.end)
        attachment.initial = reply.data  # the screen: generated, no query in it
        return attachment

    def write(self, data: bytes) -> None:
        invoke(ptyd.WRITE, ptyd.WriteArgs(session_id=self.session_id, data=data), paths=self.paths)

    def resize(self, cols: int, rows: int) -> None:
        args = ptyd.ResizeArgs(session_id=self.session_id, cols=cols, rows=rows)
        invoke(ptyd.RESIZE, args, paths=self.paths)

    def poll_output(self, timeout_ms: int = 0) -> list[tuple[bytes, bool]]:
        """New output as (bytes, repaint) pieces; repaint: clear the screen first."""
        out: list[tuple[bytes, bool]] = []
        if timeout_ms and not self.socket.poll(timeout_ms, zmq.POLLIN):
            return out
        while True:
            try:
                frames = self.socket.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return out
            try:
                event = decode_event(frames[-1])
            except BadFrame:
                self.stats.malformed += 1
                continue
            typed = decode_event_data(event, FOLLOWED, consumer=CONSUMER, stats=self.stats)
            if typed is not None:
                self._apply(typed, out)

    def keepalive(self) -> None:
        """Renew the attachment's lease once a third of it has passed (call it often)."""
        now = time.monotonic()
        if self.lease_s and now - self._leased_at >= self.lease_s / 3:
            args = ptyd.LeaseArgs(session_id=self.session_id, attachment_id=self.attachment_id)
            self.lease_s = invoke(ptyd.LEASE, args, paths=self.paths).lease_s
            self._leased_at = now

    def close(self) -> None:
        """Detach: end the lease (best effort) and stop following."""
        try:
            args = ptyd.LeaseArgs(session_id=self.session_id, attachment_id=self.attachment_id)
            invoke(ptyd.DETACH, args, paths=self.paths, timeout=DETACH_TIMEOUT_S)
        except OrcaError:
            pass  # ptyd is down or the session is gone: the lease runs out by itself
        self.socket.close(linger=0)

    def _apply(
        self,
        event: ptyd.OutputChunk | ptyd.SessionExited | ptyd.SessionRekeyed,
        out: list[tuple[bytes, bool]],
    ) -> None:
        if isinstance(event, ptyd.SessionRekeyed):
            if event.old == self.session_id:
                self._subscribe(event.new)
                self.session_id = event.new
                out.extend(self.catch_up())
            return
        if event.session_id != self.session_id:
            return  # topics match by prefix: another session whose id extends ours
        if isinstance(event, ptyd.OutputChunk):
            fresh = self.cursor.accept(event.offset, event.data)
            if fresh is None:
                out.extend(self.catch_up())
                fresh = self.cursor.accept(event.offset, event.data) or b""
            if fresh:
                out.append((self.queries.feed(fresh), False))
        else:
            out.extend(self.catch_up())
            self.exit_code = event.exit_code

    def catch_up(self) -> list[tuple[bytes, bool]]:
        """Fetch everything since our offset (or the snapshot after a gap)."""
        args = ptyd.ReadArgs(session_id=self.session_id, since=self.cursor.offset)
        reply = invoke(ptyd.READ, args, paths=self.paths)
        self.output_ended = reply.output_ended
        if reply.gap:
            # Beyond the scrollback: repaint the screen from the model.
            again = ptyd.AttachArgs(session_id=self.session_id, attachment_id=self.attachment_id)
            screen = invoke(ptyd.ATTACH, again, paths=self.paths)
            self.cursor.restart_at(screen.end)
            self.queries = QueryFilter()
            return [(screen.data, True)]
        fresh = self.cursor.accept(reply.offset, reply.data)
        return [(self.queries.feed(fresh), False)] if fresh else []

    def _subscribe(self, session_id: str) -> None:
        for topic in (ptyd.output_topic(session_id), ptyd.exit_topic(session_id)):
            self.socket.setsockopt(zmq.SUBSCRIBE, topic.encode())


# -- the attach stream (the interactive path; orca/contracts/ptyd.py) ----------------------

# A stream client waits this long for ptyd's first answer (the screen) to a hello. A
# screen is formatted in a worker thread of ptyd's: on a loaded machine (CI: the suite's
# -n 3 on 2 cores, a 4 MB flood beside it) 5 s was not always enough, and a user whose
# machine is that busy is better served by a late screen than by an error.
HELLO_TIMEOUT_S = 15.0
# Messages a stream client may queue towards ptyd before a write waits (a paste).
STREAM_SNDHWM = 1000
# Messages from ptyd queued here before ptyd's sends find the queue full (then this
# client resyncs by offset); with ptyd's own queue, tens of MB of output.
STREAM_RCVHWM = 1000
_NOBLOCK = int(zmq.NOBLOCK)
_EVENTS = int(zmq.EVENTS)
_POLLIN = int(zmq.POLLIN)
# The codec's bounded decoder: a bad or hostile frame from ptyd is counted and dropped
# (``malformed``), never raised into the caller's terminal loop.
_stream_decoder: FrameDecoder[ptyd.FromPtyd] = FrameDecoder(
    ptyd.FromPtyd, what="attach-stream message", max_bytes=None
)
_stream_encoder = msgspec.msgpack.Encoder()


class TerminalStream:
    """One attachment over ptyd's attach stream: a DEALER whose routing id is ours.

    Input goes up and output comes down on the one socket (no RPC per keystroke). The
    offsets are the stream's (:class:`StreamCursor`): a chunk past our offset is a gap
    and is caught up with a ``read`` on the stream; a ``screen`` repaints. Output that
    ptyd marks ``answer`` is shown as is (this terminal answers its queries); any other
    is passed through :class:`QueryFilter`. ``flat``: the caller keeps the user's screen
    in an outer alternate screen, so ptyd never switches screens in what it sends.
    """

    def __init__(self, session_id: str, paths: OrcaPaths, *, flat: bool = False) -> None:
        self.session_id = session_id
        self.paths = paths
        self.flat = flat
        self.cursor = StreamCursor(0)
        self.queries = QueryFilter()
        self.exit_code: int | None = None
        self.end_offset: int | None = None
        self.output_ended = False
        self.cols = self.rows = 0
        self.attachment_id = uuid.uuid4().hex
        self.malformed = 0
        self._reading = False  # a catch-up read is on its way
        self._pinged_at = 0.0
        self._connect()

    def _connect(self) -> None:
        sock: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.MAXMSGSIZE, ZMQ_MAX_MESSAGE_BYTES)
        sock.setsockopt(zmq.SNDHWM, STREAM_SNDHWM)
        sock.setsockopt(zmq.RCVHWM, STREAM_RCVHWM)
        sock.setsockopt(zmq.ROUTING_ID, self.attachment_id.encode())
        sock.setsockopt(zmq.RECONNECT_IVL, 20)
        sock.setsockopt(zmq.RECONNECT_IVL_MAX, 500)
        sock.connect(self.paths.ipc_endpoint(ptyd.CONTRACT.actor, ptyd.ATTACH_STREAM_KIND))
        self.socket = sock

    @classmethod
    def open(
        cls, session_id: str, paths: OrcaPaths | None = None, *, flat: bool = False
    ) -> tuple[Self, bytes]:
        """Attach: (the stream, the screen to draw). Raises NotFound, Timeout..."""
        stream = cls(session_id, paths or resolve_paths(), flat=flat)
        try:
            screen, _repaint = stream._hello(None)
        except BaseException:
            stream._discard()
            raise
        return stream, screen

    def _discard(self) -> None:
        self.socket.close(linger=0)

    def _send(self, message: ptyd.ToPtyd) -> None:
        body = _stream_encoder.encode(message)
        try:
            self.socket.send(body, _NOBLOCK)  # a keystroke: no poll before it
            return
        except zmq.Again:
            pass
        if not self.socket.poll(int(HELLO_TIMEOUT_S * 1000), zmq.POLLOUT):
            raise Timeout("ptyd's attach stream takes no input")
        self.socket.send(body)

    def _send_hello(self, since: int | None) -> None:
        """Ask ptyd to attach this client (or resume it at ``since``)."""
        hello = ptyd.StreamHello(
            session_id=self.session_id,
            attachment_id=self.attachment_id,
            since=since,
            flat=self.flat,
        )
        self._send(hello)
        self._pinged_at = time.monotonic()

    def _hello(self, since: int | None) -> tuple[bytes, bool]:
        """Attach (or resume at ``since``): (what to show, whether it is a repaint)."""
        self._send_hello(since)
        deadline = time.monotonic() + HELLO_TIMEOUT_S
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self.socket.poll(int(left * 1000) + 1, zmq.POLLIN):
                raise Timeout(f"ptyd did not answer the attach of {self.session_id}")
            message = self._decode(self.socket.recv())
            if isinstance(message, ptyd.StreamScreen):
                self._screen(message)
                return message.data, True
            if isinstance(message, ptyd.StreamError) and message.code != ptyd.NOT_ATTACHED:
                raise _stream_error(message)  # (not_attached: to what we sent before)
            if isinstance(message, ptyd.StreamOutput) and since is not None:
                return self._output(message), False  # a resume: what followed our offset

    def _decode(self, body: bytes) -> ptyd.FromPtyd | None:
        try:
            return _stream_decoder.decode(body)
        except BadFrame:
            self.malformed += 1
            return None

    def _screen(self, screen: ptyd.StreamScreen) -> None:
        self.session_id = screen.session_id
        self.cursor.restart_at(screen.offset)
        self.queries = QueryFilter()
        self.cols, self.rows = screen.cols, screen.rows
        self._reading = False
        if screen.output_ended and not screen.running:
            self.exit_code, self.end_offset = screen.exit_code, screen.offset
        self._check_ended()

    def _output(self, out: ptyd.StreamOutput) -> bytes:
        fresh = self.cursor.accept(out.offset, out.data)
        if fresh is None:  # a gap: catch up from our offset (once)
            if not self._reading:
                self._send(ptyd.StreamRead(since=self.cursor.offset))
                self._reading = True  # only once asked: a send that failed is retried
            return b""
        self._reading = False  # in order again (the catch-up came, or none was needed)
        self._check_ended()
        if not fresh:
            return b""
        if out.answer:
            # Our terminal answers these queries: shown whole (what the filter held too).
            held, self.queries = self.queries.flush(), QueryFilter()
            return held + fresh
        return self.queries.feed(fresh)

    def _check_ended(self) -> None:
        if self.end_offset is not None and self.cursor.offset >= self.end_offset:
            self.output_ended = True

    def restart_at(self, offset: int) -> None:
        """The caller replaced its screen with a snapshot of the session up to
        ``offset`` (``term.screen``, fetched apart from this stream): the stream goes
        on from there. Output this stream already handed on past ``offset`` came after
        the snapshot was taken, so the snapshot drew over it: it is read again from
        ``offset`` (``read {since}``), or it would be lost from the caller's screen."""
        ahead = self.cursor.offset > offset
        self.cursor.restart_at(offset)
        self.queries = QueryFilter()
        if ahead:
            self._send(ptyd.StreamRead(since=offset))
            self._reading = True  # (only once asked: a send that failed is asked again)

    # -- the caller's side ---------------------------------------------------------------
    def write(self, data: bytes) -> None:
        """Input for the PTY (this terminal then answers the program's queries)."""
        self._send(ptyd.StreamInput(data=data, session_id=self.session_id))

    def resize(self, cols: int, rows: int) -> None:
        self._send(ptyd.StreamResize(cols=cols, rows=rows))

    def poll_output(self, timeout_ms: int = 0) -> list[tuple[bytes, bool]]:
        """New output as (bytes, repaint) pieces; repaint: clear the screen first."""
        out: list[tuple[bytes, bool]] = []
        sock = self.socket
        if timeout_ms and not sock.poll(timeout_ms, zmq.POLLIN):
            return out
        while int(sock.getsockopt(_EVENTS)) & _POLLIN:
            self._apply_message(self._decode(sock.recv(_NOBLOCK)), out)
        return out

    def _apply_message(self, message: ptyd.FromPtyd | None, out: list[tuple[bytes, bool]]) -> None:
        if isinstance(message, ptyd.StreamOutput):
            fresh = self._output(message)
            if fresh:
                out.append((fresh, False))
        elif isinstance(message, ptyd.StreamScreen):
            self._screen(message)
            out.append((message.data, True))
        elif isinstance(message, ptyd.StreamExit):
            self.exit_code, self.end_offset = message.exit_code, message.end_offset
            if self.cursor.offset < message.end_offset and not self._reading:
                self._send(ptyd.StreamRead(since=self.cursor.offset))
                self._reading = True
            self._check_ended()
        elif isinstance(message, ptyd.StreamError):
            if message.code != ptyd.NOT_ATTACHED:
                raise _stream_error(message)
            # ptyd restarted (or dropped us): resume from our offset.
            data, repaint = self._hello(self.cursor.offset)
            if data or repaint:
                out.append((data, repaint))

    @property
    def ended(self) -> bool:
        """The session exited and everything it printed has been shown."""
        return self.exit_code is not None and self.output_ended

    def keepalive(self) -> None:
        """Ping every ``STREAM_PING_S`` (call it often): keeps us attached and counted."""
        now = time.monotonic()
        if now - self._pinged_at >= ptyd.STREAM_PING_S:
            self._pinged_at = now
            self._send(ptyd.StreamPing())

    def close(self) -> None:
        """Detach (best effort: a ptyd that is down forgets us after the lease)."""
        try:
            if self.socket.poll(0, zmq.POLLOUT):
                self.socket.send(_stream_encoder.encode(ptyd.StreamBye()), zmq.NOBLOCK)
        except zmq.ZMQError:
            pass
        self.socket.close(linger=int(DETACH_TIMEOUT_S * 1000))


def _stream_error(error: ptyd.StreamError) -> OrcaError:
    """The exception an ``error`` message names (as an RPC error reply would)."""
    return error_from_wire({"code": error.code, "message": error.message})


# -- the attach stream on a Unix socket (the fast path of ``orca term attach``) ----------

_LOCAL_HEADER = struct.Struct(LOCAL_FRAME_HEADER)
# While ptyd is away, at most this many messages wait here for it (keys, pings).
LOCAL_PENDING_MAX = STREAM_SNDHWM
# A client whose ptyd went away tries to connect again at most this often.
LOCAL_RECONNECT_S = 0.05
# One recv takes at most this much (ptyd's frames are at most 64 KiB of output).
LOCAL_RECV_SIZE = 256 * 1024
_LOCAL_GONE = (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN, errno.ECONNREFUSED, errno.ENOENT)


class LocalTerminalStream(TerminalStream):
    """:class:`TerminalStream` over ptyd's local socket: the same messages, offsets and
    rules, a kernel hop each way instead of ZeroMQ's I/O threads (measured: see
    actors/ptyd/local_stream.py). ``socket`` is a plain socket (``fileno()`` for a
    poller); its descriptor number stays the same across a reconnect, so a poller that
    registered it keeps working. While ptyd is away the descriptor never reads ready,
    input waits here (bounded), and ``poll_output``/``keepalive``/``write`` connect
    again, resuming from our offset (``hello {since}``).
    """

    socket: socket.socket  # type: ignore[assignment]

    def _connect(self) -> None:
        self._path = str(self.paths.runtime_dir / LOCAL_STREAM_FILE)
        self._rbuf = bytearray()
        self._rpos = 0  # where the next message starts in _rbuf
        self._pending: deque[memoryview] = deque()  # frames not written yet
        self._head_started = False  # part of the first pending frame was written
        self._retry_at = 0.0
        # A descriptor that never reads ready, put under our number while ptyd is away.
        self._idle_r, self._idle_w = os.pipe()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(self._path)
        except OSError as exc:
            sock.close()
            os.close(self._idle_r)
            os.close(self._idle_w)
            raise Unavailable(f"ptyd's attach stream is not there ({exc.strerror})") from None
        sock.setblocking(False)
        self.socket = sock
        self._connected = True

    def _discard(self) -> None:
        self.socket.close()
        for fd in (self._idle_r, self._idle_w):
            os.close(fd)

    # -- the connection ---------------------------------------------------------------
    def _lost(self) -> None:
        """ptyd went away: our descriptor number now holds one that never reads ready."""
        self._connected = False
        self._rbuf.clear()
        self._rpos = 0
        if self._head_started:  # the rest of a frame must not reach the next ptyd
            self._pending.popleft()
            self._head_started = False
        os.dup2(self._idle_r, self.socket.fileno(), inheritable=False)
        self._retry_at = 0.0

    def _reconnect(self) -> bool:
        if self._connected:
            return True
        now = time.monotonic()
        if now < self._retry_at:
            return False
        self._retry_at = now + LOCAL_RECONNECT_S
        fresh = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            fresh.connect(self._path)
        except OSError:
            fresh.close()
            return False
        fresh.setblocking(False)  # (O_NONBLOCK is the description's: the dup shares it)
        os.dup2(fresh.fileno(), self.socket.fileno(), inheritable=False)
        fresh.close()
        self._connected = True
        hello = ptyd.StreamHello(
            session_id=self.session_id,
            attachment_id=self.attachment_id,
            since=self.cursor.offset,
            flat=self.flat,
        )
        self._reading = False
        self._queue(hello, first=True)  # a resume: what followed our offset, or a screen
        self._flush(block=False)
        return self._connected

    def _queue(self, message: ptyd.ToPtyd, *, first: bool = False) -> None:
        body = _stream_encoder.encode(message)
        frame = memoryview(_LOCAL_HEADER.pack(len(body)) + body)
        if len(self._pending) >= LOCAL_PENDING_MAX and not first:
            raise Timeout("ptyd's attach stream takes no input")
        if first:
            assert not self._head_started, "only while disconnected"
            self._pending.appendleft(frame)
        else:
            self._pending.append(frame)

    def _flush(self, *, block: bool) -> None:
        """Write the pending frames; ``block``: wait for room (a paste), up to a bound."""
        deadline = time.monotonic() + HELLO_TIMEOUT_S
        while self._pending and self._connected:
            head = self._pending[0]
            try:
                sent = self.socket.send(head)
            except BlockingIOError:
                if not block:
                    return
                left = deadline - time.monotonic()
                if left <= 0 or not _wait_fd(self.socket.fileno(), select.POLLOUT, left):
                    raise Timeout("ptyd's attach stream takes no input") from None
                continue
            except OSError as exc:
                if exc.errno not in _LOCAL_GONE:
                    raise
                self._lost()
                return
            if sent == len(head):
                self._pending.popleft()
                self._head_started = False
            else:
                self._pending[0] = head[sent:]
                self._head_started = True

    def _send(self, message: ptyd.ToPtyd) -> None:
        if self._connected and not self._pending:
            # The common case (a keystroke): one send, nothing queued.
            body = _stream_encoder.encode(message)
            frame = _LOCAL_HEADER.pack(len(body)) + body
            try:
                sent = self.socket.send(frame)
            except BlockingIOError:
                sent = 0
            except OSError as exc:
                if exc.errno not in _LOCAL_GONE:
                    raise
                self._lost()
                sent = 0
            if sent == len(frame):
                return
            self._pending.append(memoryview(frame)[sent:])
            self._head_started = sent > 0
            if self._connected or self._reconnect():
                self._flush(block=True)
            return
        self._queue(message)
        if self._connected or self._reconnect():
            self._flush(block=True)

    def _receive(self) -> None:
        """Read what the socket has (never waits); a closed connection is lost."""
        while self._connected:
            try:
                data = self.socket.recv(LOCAL_RECV_SIZE)
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno not in _LOCAL_GONE:
                    raise
                data = b""
            if not data:
                self._lost()
                return
            self._rbuf += data
            if len(data) < LOCAL_RECV_SIZE:
                return  # the socket had no more (saves a recv that would fail)

    def _next_message(self) -> tuple[bool, ptyd.FromPtyd | None]:
        """(whether the buffer held a whole message, the message or None if malformed).

        Messages are taken from a read position; the buffer is compacted once it is
        consumed (or by :meth:`_compact`), not per message.
        """
        buf, start = self._rbuf, self._rpos
        if len(buf) - start < _LOCAL_HEADER.size:
            return False, None
        (size,) = _LOCAL_HEADER.unpack_from(buf, start)
        if size > LOCAL_MAX_FRAME:  # not ptyd's: never buffer toward it, drop the link
            self.malformed += 1
            self._lost()
            return False, None
        body_at = start + _LOCAL_HEADER.size
        end = body_at + size
        if len(buf) < end:
            return False, None
        with memoryview(buf) as view:
            body = bytes(view[body_at:end])  # one copy (slicing the bytearray is another)
        if end == len(buf):
            buf.clear()
            self._rpos = 0
        else:
            self._rpos = end
        return True, self._decode(body)

    def _compact(self) -> None:
        if self._rpos:
            del self._rbuf[: self._rpos]
            self._rpos = 0

    def _hello(self, since: int | None) -> tuple[bytes, bool]:
        self._send_hello(since)
        deadline = time.monotonic() + HELLO_TIMEOUT_S
        while True:
            whole, message = self._next_message()
            if not whole:
                left = deadline - time.monotonic()
                if not self._connected or left <= 0:
                    raise Timeout(f"ptyd did not answer the attach of {self.session_id}")
                if _wait_fd(self.socket.fileno(), select.POLLIN, left):
                    self._receive()
                continue
            if isinstance(message, ptyd.StreamScreen):
                self._screen(message)
                return message.data, True
            if isinstance(message, ptyd.StreamError) and message.code != ptyd.NOT_ATTACHED:
                raise _stream_error(message)
            if isinstance(message, ptyd.StreamOutput) and since is not None:
                return self._output(message), False

    # -- the caller's side ---------------------------------------------------------------
    def poll_output(self, timeout_ms: int = 0) -> list[tuple[bytes, bool]]:
        out: list[tuple[bytes, bool]] = []
        if not self._reconnect():
            if timeout_ms:
                time.sleep(min(timeout_ms / 1000, LOCAL_RECONNECT_S))
            return out
        if self._pending:
            self._flush(block=False)
        idle = len(self._rbuf) - self._rpos < _LOCAL_HEADER.size
        if (
            idle
            and timeout_ms
            and not _wait_fd(self.socket.fileno(), select.POLLIN, timeout_ms / 1e3)
        ):
            return out
        self._receive()
        while True:
            whole, message = self._next_message()
            if not whole:
                self._compact()
                return out
            self._apply_message(message, out)

    def fileno(self) -> int:
        """The descriptor to poll for output: the same number across reconnects (while
        ptyd is away it never reads ready; call :meth:`poll_output` now and then)."""
        return self.socket.fileno()

    def keepalive(self) -> None:
        if self._reconnect():
            super().keepalive()

    def close(self) -> None:
        """Detach (best effort): a ``bye``, then the socket is closed."""
        if self._connected:
            try:
                body = _stream_encoder.encode(ptyd.StreamBye())
                self.socket.send(_LOCAL_HEADER.pack(len(body)) + body)
            except OSError:
                pass
        self._discard()


def _wait_fd(fd: int, event: int, timeout_s: float) -> bool:
    poller = select.poll()
    poller.register(fd, event)
    return bool(poller.poll(max(0, int(timeout_s * 1000)) + 1))
