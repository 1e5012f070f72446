"""Where an actor (and ``orcad``) listens: the one bind path for every RPC and PUB socket.

Every process binds ``ipc://`` endpoints in the runtime dir, and also ``tcp://`` ones
when a TCP host is configured (``ORCA_TCP_HOST``; orcad passes its ``tcp_host`` config
to its actors in that variable). Plaintext TCP is allowed on loopback only: a remote
host needs CURVE (ARCHITECTURE §2), so a wildcard or routable address would serve
every op, ``sup.stop`` included, to anyone on the network. ``check_tcp_host`` is that
rule, applied where a host enters (the supervisor's config, an actor's environment)
and again by ``bind_endpoints`` itself, so no path can bind around it.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from orca.paths import OrcaPaths

if TYPE_CHECKING:
    from orca.actor.publisher import EventPublisher
    from orca.actor.rpc_server import RpcServer

TCP_HOST_ENV = "ORCA_TCP_HOST"


class BadTcpHost(ValueError):
    """A TCP host we refuse to bind plaintext sockets on; the message says why."""


def check_tcp_host(host: str) -> str:
    """``host`` if it is an IPv4 loopback address (``127.0.0.0/8``); else ``BadTcpHost``.

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
            f"{host!r} is not a loopback address: plaintext tcp is only allowed on loopback"
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


def bind_endpoints(
    paths: OrcaPaths,
    name: str,
    rpc: RpcServer,
    events: EventPublisher,
    tcp_host: str | None,
) -> None:
    """Bind ``name``'s RPC and PUB sockets: ipc always, tcp on ``tcp_host`` if given."""
    if tcp_host:
        check_tcp_host(tcp_host)  # before anything is bound: refuse, bind nothing
    rpc.bind(paths.ipc_endpoint(name, "rpc"))
    events.bind(paths.ipc_endpoint(name, "pub"))
    if tcp_host:
        rpc.bind(f"tcp://{tcp_host}:*")
        events.bind(f"tcp://{tcp_host}:*")
