"""The trio adapter for ZeroMQ: the only module that waits on a zmq file descriptor.

trio has no native ZeroMQ support, and libzmq does not expose its sockets as plain
readable/writable fds. It exposes ``ZMQ_FD``, a *signalling* descriptor, with a rule
that is easy to get wrong:

    ``ZMQ_FD`` is edge-triggered. It becomes readable when the socket's state *may*
    have changed, and any libzmq call on the socket (``send``, ``recv``, even
    ``getsockopt(ZMQ_EVENTS)``) may consume that edge while messages are still
    queued. Waiting on the fd after such a call, without first asking ``ZMQ_EVENTS``,
    can sleep forever next to a full queue.

So the rule, applied here and nowhere else: never wait on the fd until ``ZMQ_EVENTS``
says the wanted condition is false, and re-check ``ZMQ_EVENTS`` after every operation.

Ownership. One *owner task* per socket (``ZSocket.run``) is the only task that waits on
the fd: trio allows one reader per fd, and the rule above needs one place. Receiving
happens in the owner, which hands each message to a synchronous callback that must not
block. Sending is done directly by the calling task with ``NOBLOCK``: every trio task
runs on the one trio thread, so libzmq never sees concurrent calls, and a direct send
saves two task switches per message. Because that send may swallow the edge that
announced incoming data, it is followed by an ``EVENTS`` check that wakes the owner
when input is pending. A send that would block (a DEALER with no connected peer, or a
full pipe) parks the caller until the owner sees ``POLLOUT``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import trio
import zmq

from orca.wire.codec import ZMQ_MAX_MESSAGE_BYTES

# Messages the owner reads before yielding to the scheduler, so a flood on one socket
# cannot starve every other task of the actor.
RECV_BATCH = 256
# Reconnect quickly after a peer restarts (ipc reconnects are cheap), but back off to at
# most half a second so a peer that stays down costs nothing measurable.
RECONNECT_IVL_MS = 20
RECONNECT_IVL_MAX_MS = 500

_context: zmq.Context[zmq.Socket[bytes]] | None = None


def zmq_context() -> zmq.Context[zmq.Socket[bytes]]:
    """The process-wide ZeroMQ context (one I/O thread is plenty for a local actor)."""
    global _context
    if _context is None or _context.closed:
        _context = zmq.Context(io_threads=1)
    return _context


def new_socket(kind: int) -> zmq.Socket[bytes]:
    """A socket with the options every Orca socket carries."""
    sock = zmq_context().socket(kind)
    sock.setsockopt(zmq.MAXMSGSIZE, ZMQ_MAX_MESSAGE_BYTES)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RECONNECT_IVL, RECONNECT_IVL_MS)
    sock.setsockopt(zmq.RECONNECT_IVL_MAX, RECONNECT_IVL_MAX_MS)
    return sock


def _events(sock: zmq.Socket[bytes]) -> int:
    return int(sock.getsockopt(zmq.EVENTS))


MessageHandler = Callable[[list[bytes]], None]


class ZSocket:
    """A zmq socket driven from trio: one owner task reads, any task sends."""

    def __init__(self, sock: zmq.Socket[bytes], on_message: MessageHandler | None = None) -> None:
        self.sock = sock
        self._on_message = on_message
        self._fd = int(sock.getsockopt(zmq.FD))
        self._wait_scope: trio.CancelScope | None = None
        self._poked = False
        self._send_lot = trio.lowlevel.ParkingLot()
        self.closed = False

    # -- sending (any task) -------------------------------------------------------
    def send_nowait(self, frames: Sequence[bytes | memoryview]) -> bool:
        """Send now if the socket has room; False if it would block."""
        try:
            self.sock.send_multipart(frames, zmq.NOBLOCK, copy=False)
        except zmq.Again:
            return False
        # The send may have consumed the fd's edge: re-check before anyone sleeps on it.
        if _events(self.sock) & zmq.POLLIN:
            self._poke()
        return True

    async def send(self, frames: Sequence[bytes | memoryview]) -> None:
        """Send, waiting (cancellably) while the socket has no room."""
        while not self.send_nowait(frames):
            self._poke()
            await self._send_lot.park()

    # -- the owner ----------------------------------------------------------------
    def _poke(self) -> None:
        self._poked = True
        if self._wait_scope is not None:
            self._wait_scope.cancel()

    def _drain(self) -> bool:
        """Handle what ZMQ_EVENTS reports; True if input may remain (batch exhausted)."""
        events = _events(self.sock)
        if events & zmq.POLLOUT and self._send_lot:
            self._send_lot.unpark_all()
        if not events & zmq.POLLIN:
            return False
        handler = self._on_message
        for _ in range(RECV_BATCH):
            try:
                frames = self.sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return False
            if handler is not None:
                handler(frames)
        return True

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The owner loop: read messages into the callback until cancelled."""
        task_status.started()
        try:
            while True:
                self._poked = False
                if self._drain():
                    await trio.lowlevel.checkpoint()
                    continue
                # Invariant: ZMQ_EVENTS was read after the last libzmq call of this task,
                # and any send by another task since then set _poked.
                with trio.CancelScope() as scope:
                    self._wait_scope = scope
                    if not self._poked:
                        await trio.lowlevel.wait_readable(self._fd)
                self._wait_scope = None
        finally:
            self._wait_scope = None

    def close(self) -> None:
        """Close the socket; a task waiting on its fd is woken with ClosedResourceError."""
        if not self.closed:
            self.closed = True
            self._send_lot.unpark_all()
            try:
                trio.lowlevel.notify_closing(self._fd)
            except RuntimeError:  # not inside trio (teardown after trio.run returned)
                pass
            self.sock.close(linger=0)


def last_endpoint(sock: zmq.Socket[Any]) -> str:
    """The endpoint a bind actually chose (resolves ``tcp://host:*`` wildcards)."""
    value = sock.getsockopt(zmq.LAST_ENDPOINT)
    return value.decode() if isinstance(value, bytes) else str(value)


def ipc_identity(endpoint: str) -> tuple[str, int] | None:
    """(path, inode) of the socket file a bind to ``endpoint`` created, for ``unlink_ipc``."""
    if not endpoint.startswith("ipc://"):
        return None
    path = endpoint[len("ipc://") :]
    try:
        return path, os.stat(path).st_ino
    except OSError:
        return None


def unlink_ipc(identities: list[tuple[str, int]]) -> None:
    """Remove socket files we bound (libzmq leaves them), unless a successor re-bound them.

    A restarted actor may already have bound the same path; its file has another inode,
    and removing it would make the new actor unreachable.
    """
    for path, inode in identities:
        try:
            if os.stat(path).st_ino == inode:
                os.unlink(path)
        except OSError:
            pass
