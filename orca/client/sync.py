"""A blocking client for short-lived callers (the CLI, scripts, benchmarks).

It imports neither trio nor the actor runtime, and for a local call not even pyzmq:
CLI start-up is part of the interface (``bench/cli.py`` holds it to 2x a bare
interpreter start), so

- a request to an ``ipc://`` endpoint without CURVE (every local actor) goes over
  ``orca.client.zmtp``, a standard-library ZMTP 3.1 DEALER: one Unix-socket
  connection per call (handshake, request, reply), the reply's frames
  bounded by ``ZMQ_MAX_MESSAGE_BYTES`` as ``ZMQ_MAXMSGSIZE`` bounds them for pyzmq.
  Importing pyzmq costs as much as the whole bare interpreter start (measured:
  ~40 ms against ~22 ms for ``python -c pass`` on the 2-core reference box), the
  Unix socket ~1 ms;
- a ``tcp://`` endpoint (a remote host, CURVE) and every subscription keep pyzmq,
  imported only then.

Both transports raise the same errors: ``Unavailable`` when nothing listens (the
socket file is missing: "orca is not running"), when the handshake does not complete
in time, or when the peer hangs up or breaks the protocol; ``Timeout`` (an
``Unavailable``) when a connected actor does not reply in time; a reply with another
request's id or an undecodable one is skipped; an error reply is raised as its class.
One connection per call: the CLI makes a handful of calls per run, and a fresh socket
can never receive a stale reply.

- :func:`invoke` calls an ``Op`` of ``orca.contracts`` and returns its typed result;
  :func:`begin` sends the request and returns a :class:`Pending` whose ``result()``
  waits for it, so a command asking several actors has them work at once.
  Records in the result (``orca.model`` Structs) keep the fields this build does not
  know (decoded through ``orca.model.codec.from_builtins``), so a command that prints
  a record with ``orca.model.codec.to_builtins`` shows exactly what the actor sent.
- :class:`Subscription` is the blocking twin of ``orca.actor.Subscriber``: the events
  of some ``EventSpec``s, decoded by the contract (a malformed one is logged once and
  dropped by ``decode_event_data``), handed out one at a time with a timeout.
- :func:`call` / :func:`call_endpoint` are the untyped primitive by op name, for tests
  and probes that speak raw maps.
"""

from __future__ import annotations

import collections
import contextlib
import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from orca.contracts.base import (
    DecodeStats,
    EventSpec,
    Op,
    decode_event_data,
    decode_result,
    specs_by_type,
)
from orca.contracts.sys import HEARTBEAT_TYPE
from orca.paths import OrcaPaths, resolve_paths, waker_of
from orca.wire.codec import ZMQ_MAX_MESSAGE_BYTES, decode_any
from orca.wire.envelope import Event, decode_event, decode_reply_raw, encode_request
from orca.wire.errors import BadFrame, OrcaError, Timeout, Unavailable, error_from_wire

if TYPE_CHECKING:
    import zmq

    from orca.keys import CurveClient

DEFAULT_TIMEOUT_S = 5.0
# Events a blocking subscriber may queue before PUB drops for it.
SUBSCRIPTION_RCVHWM = 10_000
R = TypeVar("R")


def endpoint_for(actor: str, paths: OrcaPaths | None = None, kind: str = "rpc") -> str:
    """The local ``ipc://`` endpoint of ``actor``'s ``kind`` socket (``rpc`` or ``pub``)."""
    return (paths or resolve_paths()).ipc_endpoint(actor, kind)


def invoke(
    op: Op[Any, R],
    args: Any = None,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    paths: OrcaPaths | None = None,
    endpoint: str | None = None,
    curve: CurveClient | None = None,
) -> R:
    """Call ``op`` on its actor (or on ``endpoint``) and return its typed result.

    Built-in ops (``orca.contracts.sys``) belong to every actor: pass ``endpoint``.
    A ``tcp://`` endpoint is a CURVE server: pass ``curve`` (this client's authorized key
    pair and the host's public key, ``orca.keys``); without it the handshake fails and
    the call times out as ``unavailable``."""
    target = endpoint or endpoint_for(op.actor, paths)
    return decode_result(op, _roundtrip(target, op.name, args, timeout, curve), target)


def call_endpoint(
    endpoint: str,
    op: str,
    args: Any = None,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    curve: CurveClient | None = None,
) -> Any:
    """Untyped twin of ``invoke`` by op *name* (tests and probes that speak raw maps)."""
    return decode_any(_roundtrip(endpoint, op, args, timeout, curve))


def _roundtrip(
    endpoint: str, op: str, args: Any, timeout: float, curve: CurveClient | None = None
) -> bytes:
    """Send one request and return the reply's raw result, or raise the reply's error."""
    if endpoint.startswith("ipc://"):
        path = endpoint[len("ipc://") :]
        if not os.path.exists(path) and not _woken(path, timeout):
            raise Unavailable(
                f"orca is not running (nothing listens at {endpoint}; start it with `orca up`)"
            )
        if curve is None:
            return _roundtrip_zmtp(endpoint, path, op, args, timeout)
    return _roundtrip_zmq(endpoint, op, args, timeout, curve)


def _woken(path: str, timeout: float) -> bool:
    """An actor's socket is missing: ask orcad (beside it) to start it if it is dormant.
    True if the socket is there afterwards."""
    from orca.contracts import supervisor as sup

    target = waker_of(path)
    if target is None or not os.path.exists(target[1]):
        return False
    actor, supervisor = target
    args = sup.WakeArgs(name=actor, timeout=timeout)
    try:
        _roundtrip_zmtp(f"ipc://{supervisor}", supervisor, sup.WAKE.name, args, timeout + 1.0)
    except OrcaError:
        return False
    return os.path.exists(path)


def wake(actor: str, paths: OrcaPaths | None = None, timeout: float = DEFAULT_TIMEOUT_S) -> bool:
    """Start ``actor`` if orcad runs and holds it dormant (``sup.wake``); whether it now
    listens. For a client that needs an actor running without calling it yet (``orca
    host add``: the gateway follows the new host)."""
    path = endpoint_for(actor, paths)[len("ipc://") :]
    return os.path.exists(path) or _woken(path, timeout)


def _request_id() -> str:
    # 48 random bits: a reply is matched to its request on one private connection,
    # so this only has to differ from a stale id, not to be secret.
    return os.urandom(6).hex()


def _raw_result(frame: bytes, rid: str) -> bytes | None:
    """The raw result of ``frame`` if it is the reply to ``rid`` (None: skip it);
    an error reply is raised as its class."""
    try:
        reply = decode_reply_raw(frame)
    except BadFrame:
        return None
    if reply.id != rid:
        return None
    if reply.ok:
        return bytes(reply.result)
    raise error_from_wire(reply.error)


def _roundtrip_zmtp(endpoint: str, path: str, op: str, args: Any, timeout: float) -> bytes:
    """``_roundtrip`` over ``orca.client.zmtp`` (see the module docstring)."""
    return _ZmtpCall(endpoint, path, op, args, timeout).reply()


class _ZmtpCall:
    """One request over its own ``orca.client.zmtp`` connection, in two steps: made
    (connected, handshaken and the request sent) and :meth:`reply` (waits for it), so
    several calls to different actors are served at once (:func:`begin`)."""

    def __init__(self, endpoint: str, path: str, op: str, args: Any, timeout: float) -> None:
        from orca.client import zmtp

        self._endpoint, self._op, self._timeout = endpoint, op, timeout
        self._rid = _request_id()
        self._deadline = time.monotonic() + timeout
        request = encode_request(self._rid, op, args)
        with self._errors():
            self._conn = zmtp.Connection.connect(path, self._deadline, ZMQ_MAX_MESSAGE_BYTES)
            try:
                self._conn.send([request], self._deadline)
            except BaseException:
                self._conn.close()
                raise

    def close(self) -> None:
        self._conn.close()

    def reply(self) -> bytes:
        with self._conn, self._errors():
            while True:
                parts = self._conn.receive(self._deadline)
                if len(parts) != 1:
                    continue  # not a reply of ours (a reply is one frame)
                result = _raw_result(parts[0], self._rid)
                if result is not None:
                    return result

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """zmtp's failures as the errors every transport raises (module docstring)."""
        from orca.client import zmtp

        endpoint, op, timeout = self._endpoint, self._op, self._timeout
        try:
            yield
        except zmtp.NotListening as exc:
            raise Unavailable(
                f"orca is not running (nothing listens at {endpoint}: {exc};"
                " start it with `orca up`)"
            ) from exc
        except zmtp.ConnectFailed as exc:
            raise Unavailable(f"cannot connect to {endpoint}: {exc}") from exc
        except zmtp.HandshakeTimeout as exc:
            raise Unavailable(
                f"cannot connect to {endpoint} within {timeout:g}s (is orca running?)"
            ) from exc
        except zmtp.ReceiveTimeout as exc:
            raise Timeout(f"no reply to {op} from {endpoint} within {timeout:g}s") from exc
        except zmtp.PeerClosed as exc:
            raise Unavailable(f"{endpoint} closed the connection before replying to {op}") from exc
        except zmtp.ProtocolViolation as exc:
            raise Unavailable(f"{endpoint} is not an Orca actor socket: {exc}") from exc


class Pending(Generic[R]):
    """A call made by :func:`begin`: :meth:`result` waits for its typed result (or
    raises its error, as :func:`invoke` would), once; :meth:`close` (or leaving its
    ``with`` block) drops a call whose result is not wanted after all."""

    def __init__(
        self, op: Op[Any, R], finish: Callable[[], R], made: _ZmtpCall | None = None
    ) -> None:
        self._op = op
        self._finish: Callable[[], R] | None = finish  # the rest of the call
        self._made = made  # its connection, while the reply is awaited

    def result(self) -> R:
        finish, self._finish, self._made = self._finish, None, None
        if finish is None:
            raise RuntimeError(f"the result of {self._op.name} was taken already")
        return finish()

    def close(self) -> None:
        if self._made is not None:
            self._made.close()
        self._finish = self._made = None

    def __enter__(self) -> Pending[R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def begin(
    op: Op[Any, R],
    args: Any = None,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    paths: OrcaPaths | None = None,
    endpoint: str | None = None,
) -> Pending[R]:
    """Send ``op``'s request now and return at once; ``.result()`` is :func:`invoke`'s.

    A command that asks several actors begins every call before it waits for any, so
    the actors work at the same time (``orca worktree ps`` asks ptyd, hooks and store:
    their replies overlap instead of adding up, bench/cli.py). A local ``ipc://`` call
    is sent here; any other is made whole by ``result()``. An error (nothing listens)
    is raised by ``result()``, so each call fails on its own."""
    target = endpoint or endpoint_for(op.actor, paths)
    path = target[len("ipc://") :] if target.startswith("ipc://") else None
    if path is None:  # not over zmtp: the whole call is made by result()
        return Pending(op, lambda: invoke(op, args, timeout=timeout, endpoint=target))
    try:
        if not os.path.exists(path):
            raise Unavailable(
                f"orca is not running (nothing listens at {target}; start it with `orca up`)"
            )
        made = _ZmtpCall(target, path, op.name, args, timeout)
    except OrcaError as exc:
        failed = exc

        def fail() -> R:
            raise failed

        return Pending(op, fail)
    return Pending(op, lambda: decode_result(op, made.reply(), target), made)


def _roundtrip_zmq(
    endpoint: str, op: str, args: Any, timeout: float, curve: CurveClient | None
) -> bytes:
    """``_roundtrip`` over a pyzmq DEALER (``tcp://``, CURVE)."""
    import zmq

    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    monitor = None
    try:
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.MAXMSGSIZE, ZMQ_MAX_MESSAGE_BYTES)
        sock.setsockopt(zmq.IMMEDIATE, 1)
        if curve is not None:
            curve.apply(sock)
            monitor = sock.get_monitor_socket(
                zmq.EVENT_CONNECTED
                | zmq.EVENT_HANDSHAKE_SUCCEEDED
                | zmq.EVENT_HANDSHAKE_FAILED_AUTH
                | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
                | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
            )
        sock.connect(endpoint)
        rid = _request_id()
        deadline = time.monotonic() + timeout
        if monitor is not None:
            _await_handshake(sock, monitor, endpoint, deadline, timeout)
        elif not sock.poll(int(timeout * 1000), zmq.POLLOUT):
            raise Unavailable(
                f"cannot connect to {endpoint} within {timeout:g}s (is orca running?)"
            )
        sock.send(encode_request(rid, op, args))
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not sock.poll(int(remaining * 1000) + 1, zmq.POLLIN):
                raise Timeout(f"no reply to {op} from {endpoint} within {timeout:g}s")
            result = _raw_result(sock.recv(), rid)
            if result is not None:
                return result
    finally:
        if monitor is not None:
            sock.disable_monitor()
            monitor.close(linger=0)
        sock.close(linger=0)


class KeyRefused(Unavailable):
    """A CURVE server answered and refused this client's key (its ZAP handler said no)."""


# (A CURVE client's monitor tells the TCP connection and the handshake's outcome.)
def _await_handshake(
    sock: Any, monitor: Any, endpoint: str, deadline: float, timeout: float
) -> None:
    """Until the CURVE handshake succeeded; else why not (one line): the server refused
    our key (:class:`KeyRefused`), the handshake failed (a wrong pinned server key), or
    nothing accepted the connection."""
    import zmq
    from zmq.utils.monitor import recv_monitor_message

    connected = False
    failure = ""
    poller = zmq.Poller()
    poller.register(monitor, zmq.POLLIN)
    while (left := deadline - time.monotonic()) > 0:
        if not poller.poll(int(left * 1000) + 1):
            break
        event = recv_monitor_message(monitor)["event"]
        if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
            return
        if event == zmq.EVENT_CONNECTED:
            connected = True
        elif event == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
            raise KeyRefused(f"{endpoint} answered and refused this client's key")
        elif event in (zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL, zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL):
            failure = "the encrypted handshake failed (is the pinned server key that host's?)"
    if failure:
        raise Unavailable(f"{endpoint} answered but {failure}")
    if connected:
        raise Unavailable(
            f"{endpoint} accepted the connection but no handshake followed within {timeout:g}s"
        )
    raise Unavailable(
        f"cannot connect to {endpoint} within {timeout:g}s (host down, or nothing listens there)"
    )


def call(
    actor: str,
    op: str,
    args: Any = None,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    paths: OrcaPaths | None = None,
) -> Any:
    """Untyped call of ``op`` (by name) on the local actor ``actor``."""
    return call_endpoint(endpoint_for(actor, paths), op, args, timeout=timeout)


class Subscription:
    """The events of ``specs`` from the PUB socket at ``endpoint``, typed, one at a time.

    Topics are the specs' types unless ``topics`` is given (an event with a per-key
    topic, such as one create's progress). ZeroMQ drops what is published before the
    SUB socket has connected, so subscribe before causing the events you wait for.
    Events of other types and heartbeats are skipped; an undecodable frame or a
    malformed event is counted in ``stats.malformed`` (and logged once) and skipped.
    """

    def __init__(
        self,
        endpoint: str,
        specs: Iterable[EventSpec[Any]],
        *,
        consumer: str,
        topics: Iterable[str] | None = None,
        rcvhwm: int = SUBSCRIPTION_RCVHWM,
        curve: CurveClient | None = None,
    ) -> None:
        import zmq  # only here: a call over ipc:// never loads pyzmq (module docstring)

        self.endpoint = endpoint
        self.consumer = consumer
        self.stats = DecodeStats()
        self._specs = specs_by_type(specs)
        ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
        self.socket = ctx.socket(zmq.SUB)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.RCVHWM, rcvhwm)
        self.socket.setsockopt(zmq.MAXMSGSIZE, ZMQ_MAX_MESSAGE_BYTES)
        # Followed events that arrived while wait_live waited for a heartbeat.
        self._early: collections.deque[tuple[Event, Any]] = collections.deque()
        for topic in list(self._specs) if topics is None else list(topics):
            self.socket.setsockopt(zmq.SUBSCRIBE, topic.encode())
        if curve is not None:  # a tcp:// publisher is a CURVE server (see ``invoke``)
            curve.apply(self.socket)
        self.socket.connect(endpoint)

    def follow_also(self, endpoint: str, specs: Iterable[EventSpec[Any]]) -> None:
        """Also the events of ``specs`` from another publisher, on this socket (a SUB
        socket takes from every publisher it connects to, in turn). Their envelopes carry
        that publisher's epoch and seq: compare them with its own snapshot only."""
        import zmq

        more = specs_by_type(specs)
        self._specs.update(more)
        for topic in more:
            self.socket.setsockopt(zmq.SUBSCRIBE, topic.encode())
        self.socket.connect(endpoint)

    def receive(self, timeout: float) -> tuple[Event, Any] | None:
        """The next followed event as (envelope, typed data), or None after ``timeout`` s."""
        if self._early:
            return self._early.popleft()
        deadline = time.monotonic() + timeout
        while True:
            event = self._next_envelope(deadline)
            if event is None:
                return None
            typed = decode_event_data(event, self._specs, consumer=self.consumer, stats=self.stats)
            if typed is not None:
                return event, typed

    def wait_live(self, timeout: float) -> bool:
        """Wait for the publisher's heartbeat (``sys.heartbeat``, sent at once to a new
        subscription, ``orca.actor.publisher``): once one
        has arrived, the subscription is connected and no later event is lost to the
        slow joiner. False if none came within ``timeout`` s."""
        import zmq

        self.socket.setsockopt(zmq.SUBSCRIBE, HEARTBEAT_TYPE.encode())
        deadline = time.monotonic() + timeout
        while (event := self._next_envelope(deadline)) is not None:
            if event.type == HEARTBEAT_TYPE:
                return True
            typed = decode_event_data(event, self._specs, consumer=self.consumer, stats=self.stats)
            if typed is not None:
                self._early.append((event, typed))
        return False

    def _next_envelope(self, deadline: float) -> Event | None:
        """The next decodable envelope before ``deadline``; undecodable frames are counted."""
        import zmq

        while True:
            remaining = deadline - time.monotonic()
            if remaining < 0 or not self.socket.poll(max(0, int(remaining * 1000)), zmq.POLLIN):
                return None
            frames = self.socket.recv_multipart()
            try:
                return decode_event(frames[-1])
            except BadFrame:
                self.stats.malformed += 1

    def until(self, deadline: float) -> Iterator[tuple[Event, Any]]:
        """Every followed event until ``deadline`` (``time.monotonic()``) passes."""
        while (found := self.receive(deadline - time.monotonic())) is not None:
            yield found

    def close(self) -> None:
        self.socket.close(linger=0)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def subscribe(
    actor: str,
    specs: Iterable[EventSpec[Any]],
    *,
    consumer: str,
    topics: Iterable[str] | None = None,
    paths: OrcaPaths | None = None,
) -> Subscription:
    """A :class:`Subscription` to the local actor ``actor``'s PUB socket."""
    endpoint = endpoint_for(actor, paths, "pub")
    return Subscription(endpoint, specs, consumer=consumer, topics=topics)
