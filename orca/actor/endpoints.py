"""Where an actor (and ``orcad``) listens: the one bind path for every RPC and PUB socket.

Every process binds ``ipc://`` endpoints in the runtime dir (0700: only the owner can
connect), and also ``tcp://`` ones when a TCP host is configured (``ORCA_TCP_HOST``;
orcad passes its ``tcp_host`` config to its actors in that variable).

Nothing listens on TCP without CURVE (issue 16 item 1: any local user could find the
loopback ports and call ``term.spawn``). Every ``tcp://`` bind is a CURVE server with
the host's key pair (``orca.keys.host_keys``), and every handshake is checked by a ZAP
handler against ``authorized-keys/`` (``orca.keys.is_authorized``): a peer without an
authorized key, or speaking plaintext, is dropped during the handshake and never gets
a request read. Fail closed, by construction:

- ``ZAP_ENFORCE_DOMAIN`` is set on every CURVE socket, so if no ZAP handler were bound
  libzmq refuses the handshake instead of accepting any key (its "Stonehouse" default);
- the handler runs in its own thread (the trio loop being busy cannot stall handshakes
  of a different process's client forever, nor can a blocked handler open the door);
  any error while checking a key is a refusal; a handler that dies ends the process
  (the supervisor restarts the actor) rather than leave the endpoint unguarded.

CURVE options apply to the binds made after they are set, so the ipc endpoints, bound
first, stay plain and the local CLI is unchanged. ``check_tcp_host`` still keeps binds
on loopback: a remote host reaches a host through the gateway (docs/architecture.md §2).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

import zmq
import zmq.utils.z85

from orca import keys
from orca.actor.zsocket import zmq_context
from orca.paths import OrcaPaths

if TYPE_CHECKING:
    from orca.actor.publisher import EventPublisher
    from orca.actor.rpc_server import RpcServer

TCP_HOST_ENV = "ORCA_TCP_HOST"
# RFC 27: the one address libzmq sends ZAP requests to, within the socket's context.
ZAP_ENDPOINT = "inproc://zeromq.zap.01"
ZAP_DOMAIN = b"orca"
# A ZAP handler that dies unexpectedly ends the process with this status (fail closed).
EXIT_ZAP_FAILED = 70

log = logging.getLogger(__name__)


class BadTcpHost(ValueError):
    """A TCP host we refuse to bind on (not loopback, not parsable); the message says why."""


def check_tcp_host(host: str) -> str:
    """``host`` if it is an IPv4 loopback address (``127.0.0.0/8``); else ``BadTcpHost``.

    (CURVE protects the port; loopback keeps it off the network until the gateway.)

    A literal address, not a name: ``localhost`` may resolve elsewhere (or to ``::1``).
    IPv6 is refused for now: it needs ZMQ_IPV6 on every socket, which we do not set.
    """
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise BadTcpHost(
            f"{host!r} is not an IP address (use a loopback address such as 127.0.0.1)"
        ) from None
    if address.version != 4:
        raise BadTcpHost(f"{host!r}: IPv6 is not supported for tcp endpoints; use 127.0.0.1")
    if not address.is_loopback:
        raise BadTcpHost(
            f"{host!r} is not a loopback address: tcp is only bound on loopback (remote hosts come through the gateway)"
            " (remote hosts need CURVE)"
        )
    return host


def tcp_host_from_env(environ: Mapping[str, str] = os.environ) -> str | None:
    """The loopback host named by ``ORCA_TCP_HOST``, if any (``BadTcpHost`` if refused)."""
    host = environ.get(TCP_HOST_ENV)
    if not host:
        return None
    try:
        return check_tcp_host(host)
    except BadTcpHost as exc:
        raise BadTcpHost(f"{TCP_HOST_ENV}={exc}") from None


class ZapHandler:
    """Answers libzmq's ZAP requests for one process: CURVE keys in ``authorized-keys/``
    pass, everything else (another mechanism, an unknown key, an error) is refused."""

    def __init__(self, paths: OrcaPaths) -> None:
        self.paths = paths
        self.allowed = 0
        self.denied = 0
        self._reported: set[str] = set()
        self._bound = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="orca-zap", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._bound.wait()
        if self._error is not None:
            raise RuntimeError(f"cannot start the ZAP handler: {self._error}")

    def decide(self, frames: list[bytes]) -> list[bytes]:
        """The reply to one ZAP request (RFC 27: version, id, domain, address, identity,
        mechanism, credentials...)."""
        if len(frames) < 6:
            return [b"1.0", frames[1] if len(frames) > 1 else b"", b"400", b"bad request", b"", b""]
        version, request_id, domain, _address, _identity, mechanism, *credentials = frames
        status, text = b"400", b"refused"
        try:
            if version != b"1.0":
                text = b"bad ZAP version"
            elif domain != ZAP_DOMAIN:
                text = b"unknown domain"
            elif mechanism != b"CURVE" or len(credentials) != 1 or len(credentials[0]) != 32:
                text = b"CURVE only"
            elif keys.is_authorized(self.paths, zmq.utils.z85.encode(credentials[0])):
                status, text = b"200", b"OK"
            else:
                text = b"unknown key"
        except Exception as exc:  # a refusal, never an open door
            log.warning("ZAP: error checking a key, refused: %s", exc)
        if status == b"200":
            self.allowed += 1
        else:
            self.denied += 1
            # A refused client reconnects every 20-500 ms: say it once per reason, then count.
            reason = text.decode()
            if reason not in self._reported:
                self._reported.add(reason)
                log.warning(
                    "ZAP: refused a %s connection (%s); further refusals are only counted",
                    mechanism.decode(errors="replace"),
                    reason,
                )
        return [b"1.0", request_id, status, text, b"", b""]

    def _run(self) -> None:
        try:
            sock = zmq_context().socket(zmq.REP)
            sock.setsockopt(zmq.LINGER, 0)
            sock.bind(ZAP_ENDPOINT)
        except zmq.ZMQError as exc:
            self._error = exc
            self._bound.set()
            return
        self._bound.set()
        try:
            while True:
                frames = sock.recv_multipart()
                sock.send_multipart(self.decide(frames))
        except zmq.ContextTerminated:
            sock.close(linger=0)
        except BaseException:
            log.exception("ZAP handler failed: exiting so no tcp endpoint runs unguarded")
            os._exit(EXIT_ZAP_FAILED)


_zap: ZapHandler | None = None
_zap_lock = threading.Lock()


def start_zap_handler(paths: OrcaPaths) -> ZapHandler:
    """The process's ZAP handler, started (once) before any CURVE socket is bound."""
    global _zap
    with _zap_lock:
        if _zap is None:
            handler = ZapHandler(paths)
            handler.start()
            _zap = handler
        return _zap


def make_curve_server(sock: zmq.Socket[bytes], pair: keys.KeyPair) -> None:
    """Make the binds that follow on ``sock`` CURVE servers checked by the ZAP handler."""
    sock.setsockopt(zmq.ZAP_DOMAIN, ZAP_DOMAIN)
    sock.setsockopt(zmq.ZAP_ENFORCE_DOMAIN, 1)
    sock.setsockopt(zmq.CURVE_SECRETKEY, pair.secret)
    sock.setsockopt(zmq.CURVE_PUBLICKEY, pair.public)
    sock.setsockopt(zmq.CURVE_SERVER, 1)


def bind_endpoints(
    paths: OrcaPaths,
    name: str,
    rpc: RpcServer,
    events: EventPublisher,
    tcp_host: str | None,
) -> None:
    """Bind ``name``'s RPC and PUB sockets: ipc always; on ``tcp_host`` too, if given,
    as CURVE servers with the host's key pair (see the module docstring)."""
    pair = None
    if tcp_host:
        check_tcp_host(tcp_host)  # before anything is bound: refuse, bind nothing
        pair = keys.host_keys(paths)
        start_zap_handler(paths)
    rpc.bind(paths.ipc_endpoint(name, "rpc"))
    events.bind(paths.ipc_endpoint(name, "pub"))
    if tcp_host and pair is not None:
        # The servers' sockets: CURVE options set now apply to the tcp binds only.
        make_curve_server(rpc.socket, pair)
        make_curve_server(events.socket, pair)
        rpc.bind(f"tcp://{tcp_host}:*")
        events.bind(f"tcp://{tcp_host}:*")
