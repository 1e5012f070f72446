"""The keeper's trio shell: a SEQPACKET listener around the contract's ``KeeperState``.

The protocol and the table are the contract's (``orca/contracts/fd_keeper.py``:
SEQPACKET packets of JSON with SCM_RIGHTS fds, one decoder for both sides); this module
only moves packets between sockets and the table. It decides nothing: no timers, no
business rules, nothing that an upgrade of the rest of Orca would need to change, so
the process running it never has a reason to be restarted. (The keeper's one other job,
bringing orcad back, is ``orcad_watch.py``; a ``watch_orcad`` packet is passed to it.)

Invariant: a kept fd is never read or written here; it is closed only on ``withdraw``,
on a deposit replacing it, on ``stop`` (``orca down``) or SIGTERM, and on exit after an
accepted ``hand_over`` (a new keeper holds duplicates of every one by then).
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable

import trio

from orca.contracts.fd_keeper import (
    ANCILLARY_SPACE,
    MAX_PACKET,
    REQUESTS,
    KeeperProtocolError,
    KeeperState,
    Stop,
    WatchOrcad,
    decode_packet,
    encode_packet,
)

log = logging.getLogger(__name__)

# Connections waiting to be accepted: ptyd, orcad, an `orca` CLI probing, a test.
LISTEN_BACKLOG = 16


class FdKeeper:
    """Serve the keeper protocol on a Unix SEQPACKET socket until ``stop`` arrives."""

    def __init__(
        self,
        path: str,
        state: KeeperState | None = None,
        on_watch_orcad: Callable[[], None] | None = None,
    ) -> None:
        self.path = path
        self.state = state if state is not None else KeeperState()
        self.stopped = trio.Event()
        self._on_watch_orcad = on_watch_orcad  # OrcadWatch.nudge

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen (0600) until a ``stop`` message; every kept fd is closed on the way out."""
        listener = trio.socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            os.unlink(self.path)  # a stale socket: only the lock holder gets here
        except FileNotFoundError:
            pass
        # Bind under a private umask: there is no window where the socket is 0777.
        old_umask = os.umask(0o177)
        try:
            await listener.bind(self.path)
        finally:
            os.umask(old_umask)
        os.chmod(self.path, 0o600)
        listener.listen(LISTEN_BACKLOG)
        task_status.started()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._accept, listener, nursery)
                await self.stopped.wait()
                nursery.cancel_scope.cancel()
        finally:
            listener.close()
            self.state.close_all()
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass

    async def _accept(self, listener: trio.socket.SocketType, nursery: trio.Nursery) -> None:
        while True:
            conn, _ = await listener.accept()
            nursery.start_soon(self._serve_connection, conn)

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
                        return  # the peer closed the connection
                    replies = self.state.handle(message, fds)  # closes the fds it does not keep
                except KeeperProtocolError as exc:
                    log.warning("keeper: refused a packet: %s", exc)
                    continue
                if isinstance(message, Stop):
                    log.info("keeper: stop requested: every kept terminal closed")
                    self.stopped.set()
                    return
                if isinstance(message, WatchOrcad) and self._on_watch_orcad is not None:
                    self._on_watch_orcad()
                for reply in replies:
                    try:
                        packet = encode_packet(reply.message, reply.fds)
                    except ValueError as exc:  # (check_record keeps a reclaim within bounds)
                        log.error("keeper: reply not sent: %s", exc)
                        return
                    try:
                        await conn.sendmsg(*packet)
                    except OSError as exc:
                        log.warning("keeper: reply lost: %s", exc)
                        if self.state.handed_over:
                            self.state.handed_over = False  # the taker did not hear "ok"
                        return
                if self.state.handed_over:
                    # A new keeper holds duplicates of every session: ours close as we exit.
                    log.info("keeper: %d session(s) handed over: exiting", len(self.state))
                    self.stopped.set()
                    return

    def close_all(self) -> None:
        self.state.close_all()
