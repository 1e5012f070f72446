"""The PTY fd keeper: ``orcad`` holds duplicates of ``ptyd``'s PTY masters.

Why the supervisor: a ``kill -9`` of ``ptyd`` closes its PTY masters, and when the
last fd of a master closes the kernel hangs the terminal up and every agent on it gets
SIGHUP. So a process that outlives ``ptyd`` must hold duplicates; the supervisor is
the one process that outlives every actor. The protocol and the table are the
contract's (``orca/contracts/fd_keeper.py``: SEQPACKET packets of JSON with SCM_RIGHTS
fds, one decoder for both sides, and ``KeeperState``); this module is the supervisor's
trio shell around them:

- a SEQPACKET listener (0600) whose path reaches ``ptyd`` as ``ORCA_PTYD_FD_KEEPER``;
- ``orcad`` is the *child subreaper* (``PR_SET_CHILD_SUBREAPER``), so agents orphaned
  by a ``ptyd`` crash are re-parented to it; ``reap_orphans`` collects their exit
  status for the restarted ``ptyd`` (``KeeperState.record_exit``), never touching the
  actors, which trio waits for itself;
- on ``orca down``, after ``ptyd`` stopped, ``close_all`` drops the kept masters (the
  terminals hang up, which is what stopping Orca means) and stragglers are killed.
"""

from __future__ import annotations

import ctypes
import logging
import os
import socket
import sys
from collections.abc import Callable

import trio

from orca.contracts.fd_keeper import (
    ANCILLARY_SPACE,
    MAX_PACKET,
    REQUESTS,
    KeeperProtocolError,
    KeeperState,
    decode_packet,
    encode_packet,
)

log = logging.getLogger(__name__)

_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Adopt orphaned descendants (Linux); False where the kernel has no such notion."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)


class FdKeeper:
    """Serve the keeper protocol on a Unix SEQPACKET socket, inside the supervisor."""

    def __init__(self, path: str, is_actor_pid: Callable[[int], bool]) -> None:
        self.path = path
        self.state = KeeperState()
        self._is_actor_pid = is_actor_pid

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listener = trio.socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        await listener.bind(self.path)
        os.chmod(self.path, 0o600)
        listener.listen(8)
        task_status.started()
        try:
            async with trio.open_nursery() as nursery:
                while True:
                    conn, _ = await listener.accept()
                    nursery.start_soon(self._serve_connection, conn)
        finally:
            listener.close()
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass

    async def _serve_connection(self, conn: trio.socket.SocketType) -> None:
        with conn:
            while True:
                try:
                    data, ancdata, _flags, _addr = await conn.recvmsg(MAX_PACKET, ANCILLARY_SPACE)
                except OSError as exc:
                    log.warning("keeper connection failed: %s", exc)
                    return
                try:
                    message, fds = decode_packet(data, ancdata, REQUESTS)
                    if message is None:
                        return  # ptyd closed the connection
                    replies = self.state.handle(message, fds)  # closes the fds it does not keep
                except KeeperProtocolError as exc:
                    log.warning("keeper: refused a packet: %s", exc)
                    continue
                for reply in replies:
                    try:
                        await conn.sendmsg(*encode_packet(reply.message, reply.fds))
                    except OSError as exc:
                        log.warning("keeper: reply lost: %s", exc)
                        return

    def reap_orphans(self) -> list[int]:
        """Reap exited adopted processes (never the actors); record their status."""
        import psutil

        reaped: list[int] = []
        try:
            children = psutil.Process().children()
        except psutil.Error:
            return reaped
        for child in children:
            if self._is_actor_pid(child.pid):
                continue
            try:
                pid, status = os.waitpid(child.pid, os.WNOHANG)
            except ChildProcessError:
                continue
            if pid:
                reaped.append(pid)
                self.state.record_exit(pid, status)
        return reaped

    def close_all(self) -> None:
        self.state.close_all()
