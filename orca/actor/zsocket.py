"""The trio adapter for ZeroMQ: the only module that waits on a zmq file descriptor.

trio has no native ZeroMQ support, and libzmq does not expose its sockets as plain
readable/writable fds. It exposes ``ZMQ_FD``, a *signalling* descriptor, with a rule
that is easy to get wrong:

    ``ZMQ_FD`` is edge-triggered. It becomes readable when the socket's state *may*
    have changed, and any libzmq call on the socket (``send``, ``recv``, even
    ``getsockopt(ZMQ_EVENTS)``) may consume that edge while messages are still
    queued. Waiting on the fd after such a call, without first asking ``ZMQ_EVENTS``,
    can sleep forever next to a full queue.

So the rule, applied here and nowhere else (``ZSocket._read_events``, read by ``_service``
and ``wait``): never wait on the fd until ``ZMQ_EVENTS`` says the wanted condition is
false, re-check ``ZMQ_EVENTS`` after every operation, and whoever reads it acts on
everything it reports.

Ownership. One *owner task* per socket (``ZSocket.run``) is the only task that waits on
the fd: trio allows one reader per fd, and the rule above needs one place. Receiving
happens in the owner, which hands each message to a synchronous callback that must not
block. Sending is done directly by the calling task with ``NOBLOCK``: every trio task
runs on the one trio thread, so libzmq never sees concurrent calls, and a direct send
saves two task switches per message. Because that send may swallow the edge that
announced incoming data, someone must then service the socket (read what is pending
into the callback) before the owner next sleeps: the sender itself while the owner
sleeps on the fd; while the owner is awake in its loop (a server's owner sending the
replies of the requests it runs), the owner, which reads ``ZMQ_EVENTS`` before it
sleeps again (``wait``): a batch of replies costs one read, not one each. A send
that would block (a DEALER with no connected peer, or a full pipe) parks the caller
until someone reading ``ZMQ_EVENTS`` sees ``POLLOUT``. The owner sleeps on the bare fd
(no cancel scope per sleep) unless the socket is ``pokeable``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, cast

import trio
import zmq

from orca.wire.codec import ZMQ_MAX_MESSAGE_BYTES

# Messages the owner reads before yielding to the scheduler, so a flood on one socket
# cannot starve every other task of the actor.
RECV_BATCH = 256
# A sender services everything pending after its send (see ZSocket.send_nowait).
UNLIMITED = -1
# Plain ints: pyzmq's flag enums make every `events & POLLIN` an enum operation, which
# costs more than the rest of the hot path. (Sends copy: pyzmq's zero-copy path hands
# each small frame to a garbage-collector thread and is many times slower below 64 KiB.)
_POLLIN = int(zmq.POLLIN)
_POLLOUT = int(zmq.POLLOUT)
_NOBLOCK = int(zmq.NOBLOCK)
_NOBLOCK_MORE = int(zmq.NOBLOCK) | int(zmq.SNDMORE)
_EVENTS = int(zmq.EVENTS)
# ipc:// socket files: owner only (a peer that can connect can call every op).
SOCKET_FILE_MODE = 0o600
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


MessageHandler = Callable[[list[bytes]], None]


class ZSocket:
    """A zmq socket driven from trio: one owner task waits on the fd, any task sends."""

    def __init__(
        self,
        sock: zmq.Socket[bytes],
        on_message: MessageHandler | None = None,
        *,
        pokeable: bool = False,
    ) -> None:
        """``pokeable``: the owner's sleep can be interrupted by ``wake_owner`` (costs a
        cancel scope per sleep). Needed only when work for the owner can appear without
        a message arriving, e.g. requests queued by another task's send."""
        self.sock = sock
        self._pokeable = pokeable
        self._on_message = on_message
        self._fd = int(sock.getsockopt(zmq.FD))
        self._wait_scope: trio.CancelScope | None = None
        self._send_lot = trio.lowlevel.ParkingLot()
        self._parked = 0  # senders in _send_lot (a ParkingLot's truth is a Python call)
        # Bound once (the hot path reads ZMQ_EVENTS per message); int options only here.
        self._get = cast(Callable[[int], int], sock.get)
        self._servicing = False
        # The owner is in its loop, not asleep on the fd: it services before it sleeps,
        # so a send meanwhile leaves that to it (``_owed``) instead of reading ZMQ_EVENTS.
        self._owner_awake = False
        self._owed = False
        self.closed = False

    # -- the one place that reads ZMQ_EVENTS ------------------------------------------
    def _service(self, limit: int) -> bool:
        """Act on everything ZMQ_EVENTS reports; True if input remains after ``limit`` reads.

        Invariant: whoever reads ZMQ_EVENTS (and so may consume the fd's edge) acts on
        all of it before returning: input is handed to the callback, room to send wakes
        parked senders. Only then may anyone sleep on the fd again.

        Not re-entrant: a callback that sends (a refusal answered inline) would otherwise
        service the next message from inside this one, a stack frame per queued message,
        until a flood of them overflows the stack. The outer call re-reads ZMQ_EVENTS
        after every callback, so what the nested send announced is acted on there.
        """
        if self.closed or self._servicing:  # closed under us (teardown), or nested
            return False
        self._servicing = True
        try:
            return self._service_loop(limit)
        finally:
            self._servicing = False

    def _read_events(self) -> int:
        """ZMQ_EVENTS, its room to send acted on (parked senders woken); the caller acts
        on its POLLIN. A read acted on in full pays any debt a send left (``_owed``)."""
        self._owed = False
        events = self._get(_EVENTS)
        if events & _POLLOUT and self._parked:
            self._send_lot.unpark_all()
        return events

    def _service_loop(self, limit: int) -> bool:
        sock, handler = self.sock, self._on_message
        reads = 0
        while True:
            if not self._read_events() & _POLLIN:
                return False
            if reads == limit:
                return True
            # A Frame says whether more of the message follows (``more``, read in C);
            # ``get(RCVMORE)`` costs a getsockopt and an enum lookup per frame.
            frame = sock.recv(_NOBLOCK, copy=False)
            frames = [frame.bytes]
            while frame.more:  # the rest of a multipart message is already here
                frame = sock.recv(_NOBLOCK, copy=False)
                frames.append(frame.bytes)
            reads += 1
            if handler is not None:
                handler(frames)
                if self.closed:  # the handler closed the socket
                    return False

    # -- sending (any task) -------------------------------------------------------
    def send_nowait(self, frames: Sequence[bytes | memoryview]) -> bool:
        """Send now if the socket has room; False if it would block."""
        # Frame by frame with int flags (send_multipart does enum arithmetic per frame).
        # Only the first frame can raise EAGAIN: libzmq queues a multipart message whole.
        sock, last = self.sock, len(frames) - 1
        try:
            sock.send(frames[0], _NOBLOCK_MORE if last else _NOBLOCK)
        except zmq.Again:
            return False
        for i in range(1, last + 1):
            sock.send(frames[i], _NOBLOCK_MORE if i < last else _NOBLOCK)
        # The send may have consumed the fd's edge: service what it announced ourselves
        # (the callback is synchronous and cheap), all of it, so the owner may sleep on;
        # or, the owner awake, leave it to the owner's next service.
        if self._owner_awake:
            self._owed = True
        else:
            self._service(UNLIMITED)
        return True

    async def send(self, frames: Sequence[bytes | memoryview]) -> None:
        """Send, waiting (cancellably) while the socket has no room."""
        # No wake-up needed: a sender that got EAGAIN has just read ZMQ_EVENTS (in
        # _service) and seen no room; when room appears the fd signals anew and whoever
        # services the socket next unparks us.
        while not self.send_nowait(frames):
            if self._get(_EVENTS) & _POLLOUT:
                continue
            self._parked += 1
            try:
                await self._send_lot.park()
            finally:
                self._parked -= 1

    # -- the owner ----------------------------------------------------------------
    def wake_owner(self) -> None:
        """Interrupt the owner's sleep, if it sleeps (pokeable sockets only).

        An owner that is not sleeping is running or awaiting inside its own loop, and
        looks at its work again before it next sleeps (trio switches tasks only at
        awaits), so only a sleeping owner needs waking.
        """
        assert self._pokeable, "wake_owner on a socket created without pokeable=True"
        if self._wait_scope is not None:
            self._wait_scope.cancel()

    def service(self) -> bool:
        """Owner only: handle what is pending; True if a flood left input unread."""
        self._owner_awake = True
        return self._service(RECV_BATCH)

    async def wait(self) -> None:
        """Owner only: sleep until the fd signals or a sender pokes us.

        Call only right after ``service()`` returned False, or after a send, with no
        other libzmq call in between: that is what makes sleeping on the edge-triggered
        fd safe. A send the owner made (or saw made) since its last service is owed a
        read of ZMQ_EVENTS: with input pending this only lets the other tasks run (as a
        sleep would: a stream of requests must not starve them) and returns, for the
        caller to service; else it sleeps as usual.
        """
        if self._owed and not self.closed and self._read_events() & _POLLIN:
            await trio.lowlevel.checkpoint()
            return
        self._owner_awake = False  # from here on, a send services the socket itself
        try:
            if not self._pokeable:
                await trio.lowlevel.wait_readable(self._fd)
            else:
                with trio.CancelScope() as scope:
                    self._wait_scope = scope
                    try:
                        await trio.lowlevel.wait_readable(self._fd)
                    finally:
                        self._wait_scope = None
        except trio.ClosedResourceError:
            return  # close() woke us; the caller sees self.closed
        self._owner_awake = True  # not on cancellation: an owner that left is not awake

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The plain owner loop: service, sleep on the fd, repeat, until cancelled or closed."""
        task_status.started()
        try:
            while not self.closed:
                if self.service():
                    await trio.lowlevel.checkpoint()  # a flood: let the others run
                else:
                    await self.wait()
        finally:
            self._owner_awake = False

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


class PlaintextTcpRefused(ValueError):
    """A ``tcp://`` bind was asked of a socket without CURVE (a bug in the caller)."""


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


def bind_endpoint(
    sock: zmq.Socket[bytes], endpoint: str, endpoints: list[str], ipc_files: list[tuple[str, int]]
) -> str:
    """Bind ``endpoint``; record the resolved endpoint and, for ipc, the file to remove later.

    Invariant: nothing listens on TCP without CURVE (docs/architecture.md §2; issue 16 item 1).
    A ``tcp://`` bind on a socket that is not a CURVE server is refused here, in the one
    bind path, whoever asks (``orca.actor.endpoints.make_curve_server`` prepares one).
    """
    if endpoint.startswith("tcp://") and not sock.getsockopt(zmq.CURVE_SERVER):
        raise PlaintextTcpRefused(f"refusing to bind {endpoint}: tcp needs a CURVE server socket")
    sock.bind(endpoint)
    actual = last_endpoint(sock)
    endpoints.append(actual)
    ipc = ipc_identity(actual)
    if ipc is not None:
        # The runtime dir is 0700 already; the socket gets an explicit mode too, never
        # the umask's, so a directory mode mistake alone cannot expose it.
        os.chmod(ipc[0], SOCKET_FILE_MODE)
        ipc_files.append(ipc)
    return actual
