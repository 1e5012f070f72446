"""The loopback hook endpoint: h11 framing over trio sockets (thin shell).

Listens on 127.0.0.1 on a kernel-chosen port. h11 does all HTTP parsing; this module
only moves bytes, enforces deadlines and sizes, and hands a framed request to
:mod:`actors.hooks.http_request` and then to the ``ingest`` callback.

Hostile or broken clients (architecture §2: bad input gets a clear error and the
actor keeps running):

* a request must arrive whole within ``REQUEST_TIMEOUT_S`` of its first byte
  (slowloris); otherwise 408 and close. An idle keep-alive connection is closed after
  ``IDLE_TIMEOUT_S``;
* headers are capped by h11 (``MAX_HEADER_BYTES``, 431 / 400); a declared or actual
  body above ``MAX_BODY_BYTES`` gets 413 and close, without reading the rest;
* a protocol error gets h11's status hint; a peer reset just ends the connection;
* at most ``MAX_CONNECTIONS`` are served at once; more wait for a slot.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass

import h11
import trio

from actors.hooks.http_request import (
    MAX_BODY_BYTES,
    HookReply,
    HookSubmission,
    HttpRejection,
    check_secret,
    parse_submission,
    route_agent,
)

log = logging.getLogger(__name__)

# Hook scripts post a few KB at once; five seconds is generous for any honest local
# client and bounds what a stalled one can hold.
REQUEST_TIMEOUT_S = 5.0
IDLE_TIMEOUT_S = 30.0
MAX_HEADER_BYTES = 16 * 1024
# Fifty agents firing a hook at once is the design load (ARCHITECTURE); 128 slots
# leave headroom and cap file descriptors spent on stuck clients.
MAX_CONNECTIONS = 128
RECEIVE_CHUNK = 64 * 1024
# After refusing a request mid-body we half-close and drain briefly: closing with
# unread input makes the kernel send RST, and the client would lose our 413/408.
LINGER_S = 0.5
LINGER_MAX_BYTES = 4 * MAX_BODY_BYTES


IngestFn = Callable[[HookSubmission], HookReply]


@dataclass(frozen=True)
class _Framed:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes


class _Reject(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class HookHttpServer:
    """Serve ``POST /hook/<agent>`` with ``secret`` until cancelled."""

    def __init__(
        self,
        secret: str,
        ingest: IngestFn,
        *,
        request_timeout_s: float = REQUEST_TIMEOUT_S,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
    ) -> None:
        self._secret = secret
        self._ingest = ingest
        self._request_timeout_s = request_timeout_s
        self._idle_timeout_s = idle_timeout_s
        self._slots = trio.CapacityLimiter(MAX_CONNECTIONS)
        self.port = 0

    async def run(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners, self._serve_connection, listeners)
            task_status.started(self.port)

    async def _serve_connection(self, stream: trio.SocketStream) -> None:
        async with self._slots, stream:
            conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEADER_BYTES)
            try:
                while await self._serve_one(stream, conn):
                    conn.start_next_cycle()
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return  # the client went away; nothing to answer
            except Exception:
                # A bug of ours costs this connection, never the server's nursery.
                log.exception("hook connection failed")

    async def _serve_one(self, stream: trio.SocketStream, conn: h11.Connection) -> bool:
        """Serve one request; return whether the connection may carry another."""
        if not await self._await_first_bytes(stream, conn):
            return False
        framed: _Framed | None = None
        try:
            with trio.move_on_after(self._request_timeout_s) as deadline:
                first = await self._next_event(stream, conn)
                if first is None or isinstance(first, h11.ConnectionClosed):
                    return False
                framed = await self._frame(stream, conn, first)
        except _Reject as reject:
            await self._respond(stream, conn, reject.status, {"error": reject.reason}, True)
            return False
        except h11.RemoteProtocolError as exc:
            await self._respond(stream, conn, exc.error_status_hint, {"error": "bad_http"}, True)
            return False
        if deadline.cancelled_caught:
            await self._respond(stream, conn, 408, {"error": "request_timeout"}, True)
            return False
        if framed is None:
            return False
        reply = self._handle(framed)
        await self._respond(stream, conn, reply.status, reply.body, False)
        return conn.our_state is h11.DONE and conn.their_state is h11.DONE

    async def _await_first_bytes(self, stream: trio.SocketStream, conn: h11.Connection) -> bool:
        """Wait (idle timeout) for the next request's first byte; ``False`` on EOF/idle.

        From that byte on, headers and body share the request deadline (slowloris).
        """
        if conn.trailing_data[0]:
            return True
        with trio.move_on_after(self._idle_timeout_s):
            opening = await stream.receive_some(RECEIVE_CHUNK)
            conn.receive_data(opening)
            return bool(opening)
        return False

    async def _next_event(
        self, stream: trio.SocketStream, conn: h11.Connection
    ) -> h11.Event | None:
        while True:
            event = conn.next_event()
            if event is h11.PAUSED:  # a pipelined request waits for the next cycle
                return None
            if event is not h11.NEED_DATA:
                assert not isinstance(event, type)
                return event
            data = await stream.receive_some(RECEIVE_CHUNK)
            conn.receive_data(data)
            if not data and conn.their_state is h11.IDLE:
                return None

    async def _frame(
        self, stream: trio.SocketStream, conn: h11.Connection, first: h11.Event
    ) -> _Framed | None:
        if not isinstance(first, h11.Request):
            raise _Reject(400, "expected_request")
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in first.headers}
        method, target = first.method.decode("latin-1"), first.target.decode("latin-1")
        declared = headers.get("content-length", "0")
        if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            raise _Reject(413, "body_too_large")
        if conn.they_are_waiting_for_100_continue:
            # curl asks before sending bodies over 1 KiB; answering at once saves it
            # its one-second expect timeout on every large hook payload.
            data = conn.send(h11.InformationalResponse(status_code=100, headers=[]))
            if data:
                await stream.send_all(data)
        body = bytearray()
        while True:
            event = await self._next_event(stream, conn)
            if event is None or isinstance(event, h11.ConnectionClosed):
                return None
            if isinstance(event, h11.Data):
                body += event.data
                if len(body) > MAX_BODY_BYTES:
                    raise _Reject(413, "body_too_large")
            elif isinstance(event, h11.EndOfMessage):
                return _Framed(method, target, headers, bytes(body))

    def _handle(self, framed: _Framed) -> HookReply:
        try:
            return self._handle_framed(framed)
        except Exception:
            # A bug of ours must cost one request, never the endpoint (and never the
            # actor: this runs inside the server's nursery).
            log.exception("hook request failed: %s %s", framed.method, framed.target)
            return HookReply(500, {"error": "internal"})

    def _handle_framed(self, framed: _Framed) -> HookReply:
        agent = route_agent(framed.method, framed.target)
        if isinstance(agent, HttpRejection):
            return HookReply(agent.status, {"error": agent.reason})
        refused = check_secret(framed.headers, self._secret)
        if refused is not None:
            return HookReply(refused.status, {"error": refused.reason})
        submission = parse_submission(agent, framed.headers, framed.body)
        if isinstance(submission, HttpRejection):
            return HookReply(submission.status, {"error": submission.reason})
        return self._ingest(submission)

    async def _respond(
        self,
        stream: trio.SocketStream,
        conn: h11.Connection,
        status: int,
        body: dict[str, object],
        close: bool,
    ) -> None:
        if conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        payload = json.dumps(body).encode()
        headers = [("content-type", "application/json"), ("content-length", str(len(payload)))]
        if close:
            headers.append(("connection", "close"))
        try:
            data = conn.send(h11.Response(status_code=status, headers=headers)) or b""
            data += conn.send(h11.Data(data=payload)) or b""
            data += conn.send(h11.EndOfMessage()) or b""
        except h11.LocalProtocolError:
            return
        if data:
            await stream.send_all(data)
        if close:
            await _linger(stream)


async def _linger(stream: trio.SocketStream) -> None:
    await stream.send_eof()
    drained = 0
    with trio.move_on_after(LINGER_S):
        while drained < LINGER_MAX_BYTES:
            chunk = await stream.receive_some(RECEIVE_CHUNK)
            if not chunk:
                return
            drained += len(chunk)
