"""The attach stream's local transport: length-prefixed frames on a Unix stream socket.

Essay: why a second transport next to the ROUTER.

Measured (bench/pty.py and a per-hop trace, session 4): of a keystroke's round trip
through the ROUTER (~335 us in-process) about 190 us were ZeroMQ's own hops: each
message crosses the sender's I/O thread, the socket, the receiver's I/O thread and
then wakes the receiving thread through ``ZMQ_FD``. A plain Unix stream socket is one
kernel hop each way: the receiving process wakes directly from ``poll``. So
``orca term attach`` (``orca.client.terminal.LocalTerminalStream``) speaks the same
tagged msgpack messages as the ROUTER's DEALERs, framed by a 4-byte big-endian length,
on ``paths.runtime_dir / LOCAL_STREAM_FILE`` (file mode 0600 in the checked 0700
runtime dir; the peer's uid is checked with ``SO_PEERCRED`` as well). ``orca ui``'s
panes use it too (``actors/ui/feed.py``); the ROUTER stays for every other client.

Per connection: a reader task that hands each frame to the stream
(:meth:`AttachStream.receive`), and an output queue that is written without waiting:
a message is either queued whole or refused (queue over ``OUT_LIMIT``: the peer lags
and catches up by offset, as a full ROUTER queue does), never cut, so no byte is lost
or reordered inside the stream. A connection that ends (EOF, reset, EPIPE) detaches
its peer at once.

Descriptors (issue 24, the handed terminal): a ``hand`` message comes with the client's
stdin and stdout as SCM_RIGHTS ancillary data. Each ``recvmsg`` has room for
``MAX_PASSED_FDS`` descriptors (the kernel closes any beyond it); received ones wait on
the connection for the next complete frame, which takes them (:meth:`LocalConn.take_fds`)
or has them closed right after it: a peer can neither make ptyd keep a descriptor it
did not ask for nor pile them up.
"""

from __future__ import annotations

import array
import errno
import logging
import os
import socket
import stat
import struct
from collections import deque
from collections.abc import Callable
from pathlib import Path

import trio

from orca.contracts.ptyd import HAND_FDS, LOCAL_FRAME_HEADER, LOCAL_MAX_FRAME

log = logging.getLogger(__name__)

# Bytes queued towards one client before messages to it are refused (it then lags and
# resyncs by offset): the ROUTER's 256 messages of 64 KiB.
OUT_LIMIT = 16 * 1024 * 1024
RECV_SIZE = 256 * 1024
SOCKET_FILE_MODE = 0o600
# Peer ids of local connections: a zero byte first, as only ZeroMQ's own 5-byte ids
# have (a client cannot choose one), and longer than those, so no ROUTER peer has one.
LOCAL_RID_PREFIX = b"\x00local:"
_HEADER = struct.Struct(LOCAL_FRAME_HEADER)
_GONE = (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN, errno.EBADF)
# Descriptors one recvmsg takes at most (a hand's stdin and stdout); the ancillary
# buffer has room for no more, so the kernel discards (closes) any others sent.
MAX_PASSED_FDS = HAND_FDS
_ANCILLARY_SIZE = socket.CMSG_SPACE(MAX_PASSED_FDS * array.array("i").itemsize)

# (connection, frame body) -> None; the connection's end -> None.
FrameHandler = Callable[["LocalConn", bytes], None]
EndHandler = Callable[["LocalConn"], None]


class LocalConn:
    """One client connection: frames in (a task), frames out (queued, never blocking)."""

    def __init__(self, sock: socket.socket, rid: bytes) -> None:
        self.sock = sock
        self.rid = rid
        self.closed = False
        self._out: deque[memoryview] = deque()
        self._queued = 0
        self._has_out = trio.Event()
        self._fds: list[int] = []  # received, not taken by a frame yet

    def take_fds(self) -> list[int]:
        """The descriptors that came with the frame being handled (now the caller's)."""
        fds, self._fds = self._fds, []
        return fds

    def _close_fds(self) -> None:
        for fd in self.take_fds():
            try:
                os.close(fd)
            except OSError:
                pass

    def _receive_fds(self, ancillary: list[tuple[int, int, bytes]]) -> None:
        for level, kind, payload in ancillary:
            if level != socket.SOL_SOCKET or kind != socket.SCM_RIGHTS:
                continue
            fds = array.array("i")
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
            self._fds.extend(fds)
        while len(self._fds) > MAX_PASSED_FDS:  # (the buffer's bound: never reached)
            os.close(self._fds.pop())

    def send_frame(self, body: bytes) -> bool:
        """Queue one frame (header + body) whole, or refuse it; never waits."""
        if self.closed:
            return False
        frame = _HEADER.pack(len(body)) + body
        if self._out:
            if self._queued + len(frame) > OUT_LIMIT:
                return False
            self._out.append(memoryview(frame))
            self._queued += len(frame)
            return True
        try:
            sent = self.sock.send(frame)
        except BlockingIOError:
            sent = 0
        except OSError as exc:
            if exc.errno in _GONE:
                self.closed = True
                return False
            raise
        if sent < len(frame):
            self._out.append(memoryview(frame)[sent:])
            self._queued += len(frame) - sent
            self._has_out.set()
        return True

    async def write_queued(self) -> None:
        """Flush what ``send_frame`` could not write at once, until the connection ends."""
        while not self.closed:
            if not self._out:
                self._has_out = trio.Event()
                await self._has_out.wait()
                continue
            head = self._out[0]
            try:
                sent = self.sock.send(head)
            except BlockingIOError:
                await trio.lowlevel.wait_writable(self.sock)
                continue
            except OSError as exc:
                if exc.errno in _GONE:
                    self.closed = True
                    return
                raise
            self._queued -= sent
            if sent == len(head):
                self._out.popleft()
            else:
                self._out[0] = head[sent:]

    async def read_frames(self, on_frame: FrameHandler) -> None:
        """Hand each complete frame to ``on_frame`` until EOF, a reset or a bad frame."""
        buf = bytearray()
        while not self.closed:
            try:
                data, ancillary, _flags, _addr = self.sock.recvmsg(RECV_SIZE, _ANCILLARY_SIZE)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(self.sock)
                continue
            except OSError as exc:
                if exc.errno in _GONE:
                    return
                raise
            if ancillary:
                self._receive_fds(ancillary)
            if not data:
                return
            buf += data
            start = 0
            while len(buf) - start >= _HEADER.size:
                (size,) = _HEADER.unpack_from(buf, start)
                if size > LOCAL_MAX_FRAME:
                    log.warning("attach stream: a local client sent a %d-byte frame; closed", size)
                    return
                end = start + _HEADER.size + size
                if end > len(buf):
                    break
                try:
                    on_frame(self, bytes(buf[start + _HEADER.size : end]))
                finally:
                    self._close_fds()  # not taken by that frame: unexpected
                start = end
                if self.closed:
                    return
            del buf[:start]

    def close(self) -> None:
        self.closed = True
        self._has_out.set()
        self._close_fds()


class LocalListener:
    """The listening socket and its connections."""

    def __init__(self, path: Path, on_frame: FrameHandler, on_end: EndHandler) -> None:
        self.path = path
        self._on_frame = on_frame
        self._on_end = on_end
        self._sock: socket.socket | None = None
        self._count = 0
        self.conns: dict[bytes, LocalConn] = {}
        self.refused = 0  # connections from another uid

    def bind(self) -> None:
        path = str(self.path)
        try:
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                os.unlink(path)  # a previous ptyd's (its ROUTER's ipc file is replaced too)
        except FileNotFoundError:
            pass
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(path)
            # The runtime dir is 0700 already; the socket gets an explicit mode too.
            os.chmod(path, SOCKET_FILE_MODE)
            sock.listen(64)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self._sock = sock

    async def run(self) -> None:
        sock = self._sock
        assert sock is not None, "bind() first"
        try:
            async with trio.open_nursery() as nursery:
                while True:
                    try:
                        conn_sock, _ = sock.accept()
                    except BlockingIOError:
                        await trio.lowlevel.wait_readable(sock)
                        continue
                    except OSError as exc:  # EMFILE and the like: try again shortly
                        log.warning("attach stream: accept failed (%s)", exc)
                        await trio.sleep(0.1)
                        continue
                    if not self._same_user(conn_sock):
                        self.refused += 1
                        conn_sock.close()
                        continue
                    conn_sock.setblocking(False)
                    self._count += 1
                    conn = LocalConn(conn_sock, LOCAL_RID_PREFIX + b"%d" % self._count)
                    self.conns[conn.rid] = conn
                    nursery.start_soon(self._serve, conn)
        finally:
            for conn in list(self.conns.values()):
                self._close(conn)
            trio.lowlevel.notify_closing(sock)
            sock.close()
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass

    @staticmethod
    def _same_user(conn_sock: socket.socket) -> bool:
        creds = conn_sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        uid: int = struct.unpack("3i", creds)[1]
        return uid == os.getuid()

    async def _serve(self, conn: LocalConn) -> None:
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(conn.write_queued)
                await conn.read_frames(self._on_frame)
                nursery.cancel_scope.cancel()
        except OSError as exc:
            log.warning("attach stream: a local connection failed (%s)", exc)
        finally:
            self._close(conn)

    def _close(self, conn: LocalConn) -> None:
        if self.conns.pop(conn.rid, None) is None:
            return
        conn.close()
        self._on_end(conn)
        trio.lowlevel.notify_closing(conn.sock)
        conn.sock.close()
