"""The loopback hook endpoint: h11 framing over trio sockets (thin shell).

Listens on 127.0.0.1 on a kernel-chosen port. h11 does all HTTP parsing; this module
only moves bytes, enforces deadlines and sizes, and hands a framed request to
:mod:`actors.hooks.http_request` and then to the ``ingest`` callback.

Hostile or broken clients (architecture §2: bad input gets a clear error and the
actor keeps running):

* a request must arrive whole within ``REQUEST_TIMEOUT_S`` of its first byte
  (slowloris); otherwise 408 and close. A new connection must send its first byte
  within ``FIRST_BYTE_TIMEOUT_S``, an idle keep-alive one within ``IDLE_TIMEOUT_S``;
* headers are capped by h11 (``MAX_HEADER_BYTES``, 431 / 400); a declared or actual
  body above ``MAX_BODY_BYTES`` gets 413 and close, without reading the rest;
* a protocol error gets h11's status hint; a peer reset just ends the connection;
  a request without the secret is answered and its connection closed.

Held requests (issue 27): ``POST /permission/<agent>`` is answered only when its
permission request is settled (``hold``, :mod:`actors.hooks.permission_hold`); the
deadlines above bound reading it, not the hold, and its connection closes after the
reply. While held, the connection is watched: its closing withdraws the request.

Connection flood (issue 16 item 7: 1,500 idle connections exhausted the fds and libzmq
aborted the actor; 128 idle ones stalled every agent's hook to its timeout):

* Invariant: at most ``MAX_CONNECTIONS`` accepted sockets exist at once. The slot is
  taken *before* ``accept``: at the cap the acceptor stops accepting (the kernel's
  backlog holds the rest) and resumes when a slot frees;
* a connection is *unproven* until it presents the secret (checked as soon as its
  headers arrive). When a newcomer waits in the backlog and every slot is taken, the
  oldest unproven connection is evicted to make room. Unauthenticated clients thus
  compete only with each other: an agent's hook, which sends its request at once,
  is accepted, proves itself and is answered however many idle sockets a flood opens;
* the process's fd soft limit is raised to its hard limit at start, so the cap, not
  the default 1,024, bounds the endpoint and ZeroMQ keeps fds for its own sockets.

Counters are in :meth:`HookHttpServer.statistics` (``sys.stats`` of hooks).
"""

from __future__ import annotations

import errno
import itertools
import json
import logging
import resource
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass

import h11
import trio

from actors.hooks.http_request import (
    MAX_BODY_BYTES,
    HookReply,
    HookSubmission,
    HttpRejection,
    admit,
    check_secret,
    route_agent,
)
from actors.hooks.permission_http import hold_seconds, is_permission_route, route_permission
from actors.hooks.refusals import RefusalLog

log = logging.getLogger(__name__)

# Hook scripts post a few KB at once; five seconds is generous for any honest local
# client and bounds what a stalled one can hold.
REQUEST_TIMEOUT_S = 5.0
# The hook script sends its request right after connecting and gives up after 2 s
# (orca.hook_script.TOTAL_TIMEOUT_S): a connection silent that long serves no agent.
FIRST_BYTE_TIMEOUT_S = 2.0
# Between requests on a kept-alive (authenticated) connection.
IDLE_TIMEOUT_S = 5.0
MAX_HEADER_BYTES = 16 * 1024
# Fifty agents firing a hook at once is the design load (docs/architecture.md); 128 slots
# leave headroom and bound the fds the endpoint can ever hold.
MAX_CONNECTIONS = 128
RECEIVE_CHUNK = 64 * 1024
# After refusing a request mid-body we half-close and drain briefly: closing with
# unread input makes the kernel send RST, and the client would lose our 413/408.
LINGER_S = 0.5
LINGER_MAX_BYTES = 4 * MAX_BODY_BYTES
# accept() failing for lack of fds or memory (the process or system table is full):
# back off briefly instead of spinning; serve_listeners does the same.
ACCEPT_CAPACITY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
ACCEPT_BACKOFF_S = 0.1
# RLIMIT_NOFILE may be "unlimited" as a hard limit, which the kernel refuses as a soft
# one above fs.nr_open (1,048,576 by default).
FD_SOFT_LIMIT_CEILING = 1 << 20


def raise_fd_limit() -> tuple[int, int]:
    """Raise this process's fd soft limit to its hard limit; returns (soft, hard) after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = FD_SOFT_LIMIT_CEILING if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as exc:
            log.warning("cannot raise the fd soft limit from %d to %d: %s", soft, target, exc)
    return resource.getrlimit(resource.RLIMIT_NOFILE)


@dataclass(frozen=True)
class HttpStatistics:
    """The endpoint's counters since start (``sys.stats`` → ``hooks.http``)."""

    open_connections: int
    unproven_connections: int
    max_connections: int
    accepted: int
    evicted: int
    timed_out: int
    at_cap: int
    accept_errors: int
    fd_soft_limit: int
    fd_hard_limit: int

    def to_dict(self) -> dict[str, int]:
        return {_camel(k): v for k, v in asdict(self).items()}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


IngestFn = Callable[[HookSubmission], HookReply]
# (submission, hold in seconds, "returns when the client went away") -> the reply.
HoldFn = Callable[[HookSubmission, float, Callable[[], Awaitable[None]]], Awaitable[HookReply]]


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
        first_byte_timeout_s: float = FIRST_BYTE_TIMEOUT_S,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
        hold: HoldFn | None = None,
        settled: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._secret = secret
        self._ingest = ingest
        # Awaited before a request is applied: the start-up catch-up of what the store
        # retired while hooks was down (bounded by its owner).
        self._settled = settled
        self._hold = hold
        self._request_timeout_s = request_timeout_s
        self._first_byte_timeout_s = first_byte_timeout_s
        self._idle_timeout_s = idle_timeout_s
        self._max_connections = max_connections
        self._slots = trio.Semaphore(max_connections)
        # Insertion order = accept order: the first entry is the oldest unproven one.
        self._unproven: dict[int, trio.CancelScope] = {}
        self._ids = itertools.count()
        self._refusals = RefusalLog()
        self._counts = dict.fromkeys(
            ("accepted", "evicted", "timed_out", "at_cap", "accept_errors"), 0
        )
        self._fd_limits = resource.getrlimit(resource.RLIMIT_NOFILE)
        self.port = 0

    def statistics(self) -> HttpStatistics:
        return HttpStatistics(
            open_connections=self._max_connections - self._slots.value,
            unproven_connections=len(self._unproven),
            max_connections=self._max_connections,
            fd_soft_limit=self._fd_limits[0],
            fd_hard_limit=self._fd_limits[1],
            **self._counts,
        )

    async def run(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        self._fd_limits = raise_fd_limit()
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        async with trio.open_nursery() as nursery:
            for listener in listeners:
                nursery.start_soon(self._accept_loop, listener, nursery)
            task_status.started(self.port)

    async def _accept_loop(self, listener: trio.SocketListener, nursery: trio.Nursery) -> None:
        async with listener:
            while True:
                # A newcomer waits in the backlog: make room for it if every slot is
                # taken, then take a slot, and only then accept (the cap is pre-accept).
                await trio.lowlevel.wait_readable(listener.socket)
                if self._slots.value == 0:
                    self._counts["at_cap"] += 1
                    self._evict_oldest_unproven()
                await self._slots.acquire()
                try:
                    stream = await listener.accept()
                except OSError as exc:
                    self._slots.release()
                    if exc.errno not in ACCEPT_CAPACITY_ERRNOS:
                        raise
                    self._counts["accept_errors"] += 1
                    log.warning("hook endpoint cannot accept: %s", exc)
                    self._evict_oldest_unproven()
                    await trio.sleep(ACCEPT_BACKOFF_S)
                    continue
                except BaseException:
                    self._slots.release()
                    raise
                self._counts["accepted"] += 1
                nursery.start_soon(self._serve_connection, stream, next(self._ids))

    def _evict_oldest_unproven(self) -> None:
        if self._unproven:
            oldest = next(iter(self._unproven))
            self._unproven.pop(oldest).cancel()
            self._counts["evicted"] += 1

    def _prove(self, cid: int) -> None:
        """The connection presented the secret: it can no longer be evicted."""
        self._unproven.pop(cid, None)

    async def _serve_connection(self, stream: trio.SocketStream, cid: int) -> None:
        try:
            async with stream:
                with trio.CancelScope() as scope:
                    self._unproven[cid] = scope
                    await self._converse(stream, cid)
        finally:
            self._unproven.pop(cid, None)
            self._slots.release()

    async def _converse(self, stream: trio.SocketStream, cid: int) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEADER_BYTES)
        try:
            wait_s = self._first_byte_timeout_s
            while await self._serve_one(stream, conn, cid, wait_s):
                conn.start_next_cycle()
                wait_s = self._idle_timeout_s
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return  # the client went away; nothing to answer
        except Exception:
            # A bug of ours costs this connection, never the server's nursery.
            log.exception("hook connection failed")

    async def _serve_one(
        self, stream: trio.SocketStream, conn: h11.Connection, cid: int, wait_s: float
    ) -> bool:
        """Serve one request; return whether the connection may carry another."""
        if not await self._await_first_bytes(stream, conn, wait_s):
            return False
        framed: _Framed | None = None
        try:
            with trio.move_on_after(self._request_timeout_s) as deadline:
                first = await self._next_event(stream, conn)
                if first is None or isinstance(first, h11.ConnectionClosed):
                    return False
                framed = await self._frame(stream, conn, first, cid)
        except _Reject as reject:
            await self._respond(stream, conn, reject.status, {"error": reject.reason}, True)
            return False
        except h11.RemoteProtocolError as exc:
            await self._respond(stream, conn, exc.error_status_hint, {"error": "bad_http"}, True)
            return False
        if deadline.cancelled_caught:
            self._counts["timed_out"] += 1
            await self._respond(stream, conn, 408, {"error": "request_timeout"}, True)
            return False
        if framed is None:
            return False
        if self._settled is not None:
            await self._settled()
        if self._hold is not None and is_permission_route(framed.target):
            reply = await self._held(stream, framed)
            await self._respond(stream, conn, reply.status, reply.body, True)
            return False
        reply = self._handle(framed)
        # Only a caller that knows the secret may keep its connection (and its slot).
        close = cid in self._unproven
        await self._respond(stream, conn, reply.status, reply.body, close)
        return not close and conn.our_state is h11.DONE and conn.their_state is h11.DONE

    async def _await_first_bytes(
        self, stream: trio.SocketStream, conn: h11.Connection, wait_s: float
    ) -> bool:
        """Wait (``wait_s``) for the next request's first byte; ``False`` on EOF/idle.

        From that byte on, headers and body share the request deadline (slowloris).
        """
        if conn.trailing_data[0]:
            return True
        with trio.move_on_after(wait_s):
            opening = await stream.receive_some(RECEIVE_CHUNK)
            conn.receive_data(opening)
            return bool(opening)
        self._counts["timed_out"] += 1
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
        self, stream: trio.SocketStream, conn: h11.Connection, first: h11.Event, cid: int
    ) -> _Framed | None:
        if not isinstance(first, h11.Request):
            raise _Reject(400, "expected_request")
        # Header values are the pane's environment (worktree paths), sent as UTF-8;
        # bytes that are not become U+FFFD, never a decoding error.
        headers = {
            k.decode("latin-1").lower(): v.decode("utf-8", "replace") for k, v in first.headers
        }
        method, target = first.method.decode("latin-1"), first.target.decode("latin-1")
        if check_secret(headers, self._secret) is None:
            self._prove(cid)
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

    def _admit(
        self, framed: _Framed, route: Callable[[str, str], str | HttpRejection]
    ) -> HookSubmission | HttpRejection:
        return admit(route, framed.method, framed.target, framed.headers, framed.body, self._secret)

    def _handle_framed(self, framed: _Framed) -> HookReply:
        submission = self._admit(framed, route_agent)
        if isinstance(submission, HttpRejection):
            return self._refuse(framed, submission)
        return self._ingest(submission)

    def _refuse(self, framed: _Framed, rejection: HttpRejection) -> HookReply:
        target = framed.target[:100]
        self._refusals.refused(rejection.status, rejection.reason, f"{framed.method} {target!r}")
        return HookReply(rejection.status, {"error": rejection.reason})

    async def _held(self, stream: trio.SocketStream, framed: _Framed) -> HookReply:
        """A permission request, answered when settled (its connection closes after)."""
        assert self._hold is not None
        submission = self._admit(framed, route_permission)
        if isinstance(submission, HttpRejection):
            return self._refuse(framed, submission)
        try:
            return await self._hold(
                submission, hold_seconds(framed.headers), lambda: _closed(stream)
            )
        except Exception:
            log.exception("held permission request failed: %s", framed.target)
            return HookReply(500, {"error": "internal"})

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


async def _closed(stream: trio.SocketStream) -> None:
    """Return once the peer closed its side (a held hook's agent gave up on it); bytes it
    sends meanwhile are read and dropped, up to a bound (then it is treated as gone)."""
    drained = 0
    try:
        while drained < LINGER_MAX_BYTES:
            chunk = await stream.receive_some(RECEIVE_CHUNK)
            if not chunk:
                return
            drained += len(chunk)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        return


async def _linger(stream: trio.SocketStream) -> None:
    await stream.send_eof()
    drained = 0
    with trio.move_on_after(LINGER_S):
        while drained < LINGER_MAX_BYTES:
            chunk = await stream.receive_some(RECEIVE_CHUNK)
            if not chunk:
                return
            drained += len(chunk)
