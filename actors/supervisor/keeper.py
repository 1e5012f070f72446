"""The PTY fd keeper: ``orcad`` holds duplicates of ``ptyd``'s PTY masters.

Why the supervisor: a ``kill -9`` of ``ptyd`` closes its PTY masters, and when the
last fd of a master closes the kernel hangs the terminal up and every agent on it gets
SIGHUP. So a process that outlives ``ptyd`` must hold duplicates; the supervisor is
the one process that outlives every actor. The protocol and the table are ``ptyd``'s
(``actors/ptyd/handoff.py``: SEQPACKET packets of JSON with SCM_RIGHTS fds, and
``KeeperState``); this module is the supervisor's trio shell around them:

- a SEQPACKET listener (0600) whose path reaches ``ptyd`` as ``ORCA_PTYD_FD_KEEPER``;
- ``orcad`` is the *child subreaper* (``PR_SET_CHILD_SUBREAPER``), so agents orphaned
  by a ``ptyd`` crash are re-parented to it; ``reap_orphans`` collects their exit
  status for the restarted ``ptyd`` (``KeeperState.record_exit``), never touching the
  actors, which trio waits for itself;
- on ``orca down``, after ``ptyd`` stopped, ``close_all`` drops the kept masters (the
  terminals hang up, which is what stopping Orca means) and stragglers are killed.
"""

from __future__ import annotations

import array
import ctypes
import json
import logging
import os
import socket
import sys
from collections.abc import Callable

import trio

from actors.ptyd.handoff import FDS_PER_PACKET, MAX_PACKET, KeeperProtocolError, KeeperState

log = logging.getLogger(__name__)

_PR_SET_CHILD_SUBREAPER = 36
_FD_SIZE = array.array("i").itemsize


def become_subreaper() -> bool:
    """Adopt orphaned descendants (Linux); False where the kernel has no such notion."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)


def _fds_from(ancdata: list[tuple[int, int, bytes]]) -> list[int]:
    fds: list[int] = []
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(data) - len(data) % _FD_SIZE
            fds.extend(array.array("i", data[:usable]))
    return fds


def _close(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


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
                    data, ancdata, _flags, _addr = await conn.recvmsg(
                        MAX_PACKET, socket.CMSG_SPACE(FDS_PER_PACKET * _FD_SIZE)
                    )
                except OSError as exc:
                    log.warning("keeper connection failed: %s", exc)
                    return
                fds = _fds_from(ancdata)
                if not data:
                    _close(fds)
                    return
                try:
                    message = json.loads(data)
                except ValueError as exc:
                    _close(fds)
                    log.warning("keeper: refused a packet that is not JSON: %s", exc)
                    continue
                if not isinstance(message, dict) or not isinstance(message.get("op"), str):
                    _close(fds)
                    log.warning("keeper: refused a packet without an op")
                    continue
                try:
                    replies = self.state.handle(message, fds)  # closes the fds it does not keep
                except KeeperProtocolError as exc:
                    log.warning("keeper: refused a packet: %s", exc)
                    continue
                for reply in replies:
                    payload = [json.dumps(reply.message).encode()]
                    anc = (
                        [
                            (
                                socket.SOL_SOCKET,
                                socket.SCM_RIGHTS,
                                array.array("i", reply.fds).tobytes(),
                            )
                        ]
                        if reply.fds
                        else []
                    )
                    try:
                        await conn.sendmsg(payload, anc)
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
