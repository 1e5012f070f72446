"""The client side of a handed terminal (issue 24; ``orca term attach``).

The client connects to ptyd's local socket (``LOCAL_STREAM_FILE``), sends ``hand``
with its stdin and stdout as SCM_RIGHTS ancillary data and from then on only waits:
ptyd reads the keys from the terminal and writes the output to it
(``actors/ptyd/handed.py``). What the client still does: forward window-size changes,
say ``bye``, and learn how it ended: ``released`` (ptyd let go of the terminal: the
detach key, a ``bye``), ``exit`` (the program ended, its last output is on the
terminal), or the connection's end (ptyd died: nobody touches the terminal any more).
Restoring the terminal is the caller's (``orca.cli.term``), in every one of these cases.

Like ``orca.client.sync`` it imports neither trio nor anything under ``actors/``.
"""

from __future__ import annotations

import array
import errno
import os
import select
import socket
import struct
import time

import msgspec

from orca.contracts import ptyd
from orca.contracts.ptyd import LOCAL_FRAME_HEADER, LOCAL_MAX_FRAME, LOCAL_STREAM_FILE
from orca.paths import OrcaPaths
from orca.wire.codec import FrameDecoder
from orca.wire.errors import BadFrame, OrcaError, Timeout, Unavailable, error_from_wire

# How long a hand waits for ptyd's ``handed`` (or its error).
HAND_TIMEOUT_S = 5.0
# After a ``bye``, how long the client waits for ptyd to let go of the terminal.
BYE_TIMEOUT_S = 1.0
# After the link ended, how long the client waits for that ptyd to finish exiting before
# it tries to connect again (a ptyd that dropped the link and lives on never exits).
EXIT_WAIT_S = 5.0
_PEERCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid
_HEADER = struct.Struct(LOCAL_FRAME_HEADER)
_decoder: FrameDecoder[ptyd.FromPtyd] = FrameDecoder(
    ptyd.FromPtyd, what="attach-stream message", max_bytes=None
)
_encoder = msgspec.msgpack.Encoder()
_GONE = (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN)


class PtydGone(Exception):
    """The connection to ptyd ended (ptyd died or stopped): the terminal is ours again."""


class HandedTerminal:
    """One connection to ptyd that handed it this process's terminal."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buf = bytearray()
        self.malformed = 0
        self._ptyd = _pidfd_of_peer(sock)  # the ptyd that listened (None: not knowable)

    @classmethod
    def connect(cls, paths: OrcaPaths) -> HandedTerminal:
        """Connect to ptyd's local socket. Raises Unavailable when it is not there."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            sock.connect(str(paths.runtime_dir / LOCAL_STREAM_FILE))
        except OSError as exc:
            sock.close()
            raise Unavailable(f"ptyd's attach socket is not there ({exc.strerror})") from None
        return cls(sock)

    def fileno(self) -> int:
        return self.sock.fileno()

    def hand(
        self, session_id: str, stdin: int, stdout: int, cols: int, rows: int
    ) -> ptyd.StreamHanded:
        """Give ptyd the terminal; its ``handed`` answer. Raises the error ptyd names
        (``bad_request``, ``not_found``, ``conflict``: the session ended), Timeout,
        PtydGone."""
        message = ptyd.StreamHand(session_id=session_id, cols=cols, rows=rows)
        body = _encoder.encode(message)
        fds = array.array("i", [stdin, stdout])
        try:
            self.sock.sendmsg(
                [_HEADER.pack(len(body)) + body],
                [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds.tobytes())],
            )
        except OSError as exc:
            if exc.errno in _GONE:
                raise PtydGone() from None
            raise
        deadline = time.monotonic() + HAND_TIMEOUT_S
        while True:
            reply = self.next_message(deadline - time.monotonic())
            if reply is None:
                raise Timeout(f"ptyd did not take the terminal for {session_id}")
            if isinstance(reply, ptyd.StreamHanded):
                return reply
            if isinstance(reply, ptyd.StreamError):
                raise error_from_wire({"code": reply.code, "message": reply.message})

    def send(self, message: ptyd.ToPtyd) -> None:
        """Send a small message (``resize``, ``bye``); PtydGone if the link is down."""
        body = _encoder.encode(message)
        try:
            self.sock.sendall(_HEADER.pack(len(body)) + body)
        except OSError as exc:
            if exc.errno in _GONE:
                raise PtydGone() from None
            raise

    def next_message(self, timeout_s: float | None) -> ptyd.FromPtyd | None:
        """The next message from ptyd, None on timeout; PtydGone once the link ended.
        A malformed one is counted and skipped."""
        deadline = None if timeout_s is None else time.monotonic() + max(0.0, timeout_s)
        while True:
            message = self._buffered()
            if message is not None:
                return message
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return None
            poller = select.poll()
            poller.register(self.sock, select.POLLIN)
            if not poller.poll(None if left is None else int(left * 1000) + 1):
                return None
            self.receive()

    def receive(self) -> None:
        """Read what the socket has (the caller polled it readable); PtydGone at its end."""
        try:
            data = self.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError as exc:
            if exc.errno not in _GONE:
                raise
            data = b""
        if not data:
            raise PtydGone()
        self._buf += data

    def take_message(self) -> ptyd.FromPtyd | None:
        """A whole message received already, or None."""
        return self._buffered()

    def _buffered(self) -> ptyd.FromPtyd | None:
        while len(self._buf) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self._buf)
            if size > LOCAL_MAX_FRAME:
                raise PtydGone()  # not ptyd's: drop the link
            end = _HEADER.size + size
            if len(self._buf) < end:
                return None
            body = bytes(self._buf[_HEADER.size : end])
            del self._buf[:end]
            try:
                return _decoder.decode(body)
            except (BadFrame, OrcaError):
                self.malformed += 1
        return None

    def bye(self) -> None:
        """Ask ptyd to let go of the terminal and wait (briefly) until it has."""
        try:
            self.send(ptyd.StreamBye())
            deadline = time.monotonic() + BYE_TIMEOUT_S
            while True:
                message = self.next_message(deadline - time.monotonic())
                if message is None or isinstance(message, ptyd.StreamReleased | ptyd.StreamExit):
                    return
        except PtydGone:
            return

    def wait_ptyd_exited(self, timeout_s: float = EXIT_WAIT_S) -> None:
        """After the link ended: until the ptyd behind it has exited (at most timeout_s).

        A ptyd killed with SIGKILL closes its descriptors one by one as it exits: our
        connection can end while its listening socket still takes connections for a
        moment. A client that connected again at once reached that dying listener, drew
        its screen and lost the link at once (the user's terminal flashed back to the
        alternate screen: issue 39). The kernel marks the process exited (its pidfd
        readable) only after every descriptor is closed.
        """
        if self._ptyd is None:
            return
        select.select([self._ptyd], [], [], max(0.0, timeout_s))

    def close(self) -> None:
        self.sock.close()
        if self._ptyd is not None:
            os.close(self._ptyd)
            self._ptyd = None


def _pidfd_of_peer(sock: socket.socket) -> int | None:
    """A pidfd of the process that listens on the socket we connected to, or None."""
    try:
        cred = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
        pid = _PEERCRED.unpack(cred)[0]
        if pid <= 0:  # (in another pid namespace)
            return None
        return os.pidfd_open(pid)
    except OSError:  # gone already, or a kernel without pidfds
        return None
