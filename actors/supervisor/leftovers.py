"""A previous tree's actors, still stopping: orcad waits for them before it boots its own.

When orcad dies, each of its actors notices (a pidfd, ``orca.actor.app``) and stops on
its own; ``ptyd`` first makes sure a keeper holds every live terminal, which can take a
few seconds. A new orcad started meanwhile (by the fd keeper at once, or an ``orca up``)
must not start an actor of the same name while the old one still runs: both would serve
the same socket path, and the old one, closing, unlinks the new one's socket file
(libzmq removes an ``ipc://`` endpoint's file when it closes), leaving the new actor
running but unreachable. So orcad boots only once no process listens on its children's
RPC sockets. Each one still listening is identified by ``SO_PEERCRED`` (the pid that
listens there) and waited for through a pidfd, so nothing polls; the whole wait is
bounded (``LEFTOVER_WAIT_S``), after which orcad boots anyway and says which it gave up on.
"""

from __future__ import annotations

import logging
import os
import socket
import struct

import trio
import trio.lowlevel

from orca.paths import OrcaPaths

log = logging.getLogger(__name__)

# Above what a stopping actor takes: its stop callbacks are bounded at 2.5 s
# (orca.actor.app), ptyd securing its terminals with a keeper at ~4 s more.
LEFTOVER_WAIT_S = 10.0
_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


def listener_pid(path: str) -> int | None:
    """The pid of the process listening on the Unix stream socket at ``path``; None
    when none does (no file, or a stale one: the connection is refused)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(1.0)
        sock.connect(path)
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    except OSError:
        return None
    finally:
        sock.close()
    pid, _uid, _gid = _UCRED.unpack(creds)
    return pid or None


def rpc_socket_path(paths: OrcaPaths, name: str) -> str:
    return paths.ipc_endpoint(name, "rpc").removeprefix("ipc://")


async def wait_for_exit(pid: int) -> bool:
    """Until ``pid`` has exited; False at once if no such process runs."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return False
    try:
        await trio.lowlevel.wait_readable(pidfd)
    finally:
        trio.lowlevel.notify_closing(pidfd)
        os.close(pidfd)
    return True


async def wait_for_leftover_actors(
    paths: OrcaPaths, names: list[str], budget: float = LEFTOVER_WAIT_S
) -> list[str]:
    """Wait (at most ``budget`` seconds in all) until no process listens on the RPC socket
    of any actor in ``names``; returns those still listened on when the time ran out."""
    with trio.move_on_after(budget):
        for name in names:
            path = rpc_socket_path(paths, name)
            while (pid := listener_pid(path)) is not None:
                log.info("waiting for the previous %s (pid %d) to stop", name, pid)
                if not await wait_for_exit(pid):
                    break  # a child of it holds the socket: nobody to wait for
        return []
    return [name for name in names if listener_pid(rpc_socket_path(paths, name)) is not None]
