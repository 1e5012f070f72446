"""Blocking calls to a remote host's gateway, and the local gateway's view of remotes.

For the CLI: ``remote_invoke`` calls one op on a known host through its gateway (our
client key, its pinned server key); ``local_mirrors`` asks the local gateway for the
mirrors it keeps (``gateway.mirrors``), or returns None when it is not running, so a
reader shows local rows only instead of failing.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, TypeVar

from orca.paths import OrcaPaths, resolve_paths
from orca.remote import any_known_host
from orca.wire.errors import OrcaError, Unavailable

if TYPE_CHECKING:  # hosts imports pyzmq and the key store: ~25 ms of `orca worktree ps`
    from orca.contracts import gateway as gw
    from orca.contracts.base import Op
    from orca.remote.hosts import RemoteHost

R = TypeVar("R")
# ``gateway.CONTRACT.actor``, written out so that `orca term ls` / `worktree ps` find
# out the gateway is not running without importing its contract (which imports every
# other contract: ~6 ms of start-up). tests/unit/client/test_cli_imports.py checks it.
GATEWAY_ACTOR = "gateway"
# The gateway mirrors exactly the hosts of ``orca.remote.KNOWN_HOSTS_FILE`` (its
# follower polls it), so without the file there is nothing to ask it: every `orca term
# ls` and `worktree ps` of a user with no remote host skips the call and the contract
# (~10 ms of CPU with the mirrors' decoders, bench/cli.py).
# The local gateway answers from memory.
MIRRORS_TIMEOUT_S = 1.0
REMOTE_TIMEOUT_S = 10.0


def remote_invoke(
    host: RemoteHost,
    op: Op[Any, R],
    args: Any = None,
    *,
    timeout: float = REMOTE_TIMEOUT_S,
    paths: OrcaPaths | None = None,
) -> R:
    """``op`` on ``host`` through its gateway; a silent link is ``unavailable`` with why."""
    from orca.client.sync import KeyRefused, invoke
    from orca.remote.hosts import client_keys, link_client

    paths = paths or resolve_paths()
    try:
        return invoke(
            op, args, timeout=timeout, endpoint=host.endpoint, curve=link_client(paths, host)
        )
    except KeyRefused:
        key = client_keys(paths).public.decode()
        raise KeyRefused(
            f"host {host.name} ({host.address}) refused this client's key: on {host.name},"
            f" run  orca host authorize '{key}'"
        ) from None
    except Unavailable as exc:
        raise Unavailable(
            f"host {host.name} ({host.address}) did not answer: {exc.message}"
            " (link down, wrong pinned server key, or this client's key is not authorized there;"
            f" see `orca host status {host.name}`)"
        ) from None


def local_mirrors(paths: OrcaPaths | None = None) -> list[gw.HostMirror] | None:
    """The remote hosts the local gateway mirrors; None if it is not running."""
    from orca.client.sync import endpoint_for, invoke, wake

    paths = paths or resolve_paths()
    endpoint = endpoint_for(GATEWAY_ACTOR, paths)
    # A gateway left dormant at `orca up` (it had no host to follow) is started once a
    # host is known.
    if not os.path.exists(endpoint[len("ipc://") :]) and not (
        any_known_host(paths) and wake(GATEWAY_ACTOR, paths)
    ):
        return None
    if not any_known_host(paths):
        return []  # no known host: the gateway mirrors none
    from orca.contracts import gateway as gw

    try:
        return invoke(gw.MIRRORS, timeout=MIRRORS_TIMEOUT_S, paths=paths).hosts
    except OrcaError:
        return None


# What a refused link's error says (``orca.actor.client.RpcClient``, ``orca.client.sync``).
REFUSED_KEY = "refused this client's key"


def link_text(link: gw.HostLink) -> str:
    """``live`` or ``unverifiable since HH:MM:SS (error)`` for a host's rows."""
    import time

    if link.reachable:
        return "live"
    if REFUSED_KEY in link.error:  # it answered: the one fix is on that host
        return "refused: this client's key is not authorized there (`orca host status`)"
    if link.unverifiable_since is None:
        return "never reached" + (f" ({link.error})" if link.error else "")
    since = time.strftime("%H:%M:%S", time.localtime(link.unverifiable_since))
    return f"unverifiable since {since}"
