"""The keeper's shell: a SEQPACKET listener around its table, ``KeeperState`` (``table.py``).

The protocol is the contract's (``orca/contracts/fd_keeper.py``: SEQPACKET packets of
JSON with SCM_RIGHTS fds, one decoder for both sides), the table ``table.py``'s; this
module only moves packets between sockets and the table. It decides nothing: no timers, no
business rules, nothing that an upgrade of the rest of Orca would need to change, so
the process running it never has a reason to be restarted. (The keeper's one other job,
bringing orcad back, is ``orcad_watch.py``; a ``watch_orcad`` packet is passed to it.)

One thread, one ``selectors`` loop, the standard library only (issue 36: the keeper
only holds descriptors, so it pays for no event-loop library): the loop sleeps in
``epoll_wait`` until a peer connects, sends, or can take a reply again, or ``stop``
is called (a pipe, written from a signal handler or another thread). A connection's
replies wait in its outbox while the peer cannot take them, and its next request is
read only once they are sent, so one peer is served in order and a slow one holds up
nobody else.

Invariant: a kept fd is never read or written here; it is closed only on ``withdraw``,
on a deposit replacing it, on ``stop`` (``orca down``) or SIGTERM, and on exit after an
accepted ``hand_over`` (a new keeper holds duplicates of every one by then).
"""

from __future__ import annotations

import logging
import os
import selectors
import socket
from collections import deque
from collections.abc import Callable

from actors.keeper.table import KeeperState
from orca.contracts.fd_keeper import (
    ANCILLARY_SPACE,
    MAX_PACKET,
    REQUESTS,
    Ancillary,
    KeeperProtocolError,
    Stop,
    WatchOrcad,
    decode_packet,
    encode_packet,
)
from orca.pipes import drain

log = logging.getLogger(__name__)

# Connections waiting to be accepted: ptyd, orcad, an `orca` CLI probing, a test.
LISTEN_BACKLOG = 16


class _Connection:
    """One peer: its socket and the replies it has not taken yet."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.outbox: deque[tuple[list[bytes], Ancillary]] = deque()
        self.closed = False
        self.hands_over = False  # the outbox ends with an accepted hand_over's reply


class FdKeeper:
    """Serve the keeper protocol on a Unix SEQPACKET socket until ``stop``."""

    def __init__(
        self,
        path: str,
        state: KeeperState | None = None,
        on_watch_orcad: Callable[[], None] | None = None,
    ) -> None:
        self.path = path
        self.state = state if state is not None else KeeperState()
        self._on_watch_orcad = on_watch_orcad  # OrcadWatch.nudge
        self._stopping = False
        self.stop_reason = ""
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    @property
    def stopping(self) -> bool:
        return self._stopping

    def stop(self, reason: str = "") -> None:
        """End ``serve`` (every kept fd closed). Safe from a signal handler and from
        any thread: a flag and one byte on the loop's wake-up pipe."""
        if not self._stopping:
            self.stop_reason = reason
        self._stopping = True
        try:
            os.write(self._wake_w, b"s")
        except OSError:
            pass  # full: the loop wakes up anyway

    def listen(self) -> socket.socket:
        """Bind ``path`` (0600, from the first instant) and listen."""
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | socket.SOCK_CLOEXEC)
        try:
            try:
                os.unlink(self.path)  # a stale socket: only the lock holder gets here
            except FileNotFoundError:
                pass
            # Bind under a private umask: there is no window where the socket is 0777.
            old_umask = os.umask(0o177)
            try:
                listener.bind(self.path)
            finally:
                os.umask(old_umask)
            os.chmod(self.path, 0o600)
            listener.listen(LISTEN_BACKLOG)
            listener.setblocking(False)
        except BaseException:
            listener.close()
            raise
        return listener

    def serve(self, on_ready: Callable[[], None] | None = None) -> None:
        """Listen, call ``on_ready``, and serve until ``stop``; every kept fd is closed
        on the way out, and the socket file removed."""
        listener = self.listen()
        selector = selectors.DefaultSelector()
        connections: dict[int, _Connection] = {}
        try:
            selector.register(listener, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            if on_ready is not None:
                on_ready()
            while not self._stopping:
                for key, events in selector.select():
                    if key.fileobj is listener:
                        self._accept(listener, selector, connections)
                    elif key.fileobj == self._wake_r:
                        drain(self._wake_r)
                    else:
                        conn = connections[key.fd]
                        if events & selectors.EVENT_WRITE:
                            self._flush(conn)
                        elif events & selectors.EVENT_READ:
                            self._read(conn)
                        self._follow(conn, key.fd, selector, connections)
                    if self._stopping:
                        break
        finally:
            for conn in connections.values():
                conn.sock.close()
            selector.close()
            listener.close()
            self.state.close_all()
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass

    def close(self) -> None:
        """The wake-up pipe (``serve`` has returned, or never ran)."""
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass

    def close_all(self) -> None:
        self.state.close_all()

    # -- the loop's steps ----------------------------------------------------------
    def _accept(
        self,
        listener: socket.socket,
        selector: selectors.BaseSelector,
        connections: dict[int, _Connection],
    ) -> None:
        while True:
            try:
                sock, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # EMFILE and the like: the peer waits or gives up
                log.warning("keeper: cannot accept a connection: %s", exc)
                return
            sock.setblocking(False)
            connections[sock.fileno()] = _Connection(sock)
            selector.register(sock, selectors.EVENT_READ)

    def _follow(
        self,
        conn: _Connection,
        fd: int,
        selector: selectors.BaseSelector,
        connections: dict[int, _Connection],
    ) -> None:
        """Wait for what ``conn`` needs next: to take its replies, or to send."""
        if conn.closed:
            selector.unregister(conn.sock)
            del connections[fd]
            conn.sock.close()
            return
        wanted = selectors.EVENT_WRITE if conn.outbox else selectors.EVENT_READ
        if selector.get_key(conn.sock).events != wanted:
            selector.modify(conn.sock, wanted)

    def _read(self, conn: _Connection) -> None:
        """Requests until none waits or one left replies the peer cannot take yet."""
        while not conn.closed and not conn.outbox and not self._stopping:
            try:
                data, ancdata, _flags, _addr = conn.sock.recvmsg(MAX_PACKET, ANCILLARY_SPACE)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                log.warning("keeper connection failed: %s", exc)
                conn.closed = True
                return
            handed_before = self.state.handed_over
            try:
                message, fds = decode_packet(data, ancdata, REQUESTS)
                if message is None:
                    conn.closed = True  # the peer closed the connection
                    return
                replies = self.state.handle(message, fds)  # closes the fds it does not keep
            except KeeperProtocolError as exc:
                log.warning("keeper: refused a packet: %s", exc)
                continue
            if isinstance(message, Stop):
                log.info("keeper: stop requested: every kept terminal closed")
                conn.closed = True
                self.stop("stop requested")
                return
            if isinstance(message, WatchOrcad) and self._on_watch_orcad is not None:
                self._on_watch_orcad()
            for reply in replies:
                try:
                    conn.outbox.append(encode_packet(reply.message, reply.fds))
                except ValueError as exc:  # (check_record keeps a reclaim within bounds)
                    log.error("keeper: reply not sent: %s", exc)
                    conn.outbox.clear()
                    conn.closed = True
                    return
            if self.state.handed_over and not handed_before:
                conn.hands_over = True  # this request's hand_over was accepted
            self._flush(conn)

    def _flush(self, conn: _Connection) -> None:
        """Send what the peer can take now; after a hand-over's reply, stop."""
        while conn.outbox:
            buffers, ancillary = conn.outbox[0]
            try:
                conn.sock.sendmsg(buffers, ancillary)
            except (BlockingIOError, InterruptedError):
                return  # the loop waits until it can take more
            except OSError as exc:
                log.warning("keeper: reply lost: %s", exc)
                conn.outbox.clear()
                conn.closed = True
                if conn.hands_over:
                    conn.hands_over = False
                    self.state.handed_over = False  # the taker did not hear "ok"
                return
            conn.outbox.popleft()
        if conn.hands_over:
            # A new keeper holds duplicates of every session: ours close as we exit.
            log.info("keeper: %d session(s) handed over: exiting", len(self.state))
            conn.closed = True
            self.stop("handed over")
