"""One browser's live terminal: ptyd's attach stream, on a worker thread (thin).

The web actor does not speak ptyd's attach protocol: it drives the public client
``orca.client.terminal.LocalTerminalStream``, the one ``orca term attach`` and ``orca
ui`` use (docs/protocols.md §4): the screen first (redrawn from ptyd's model, with the
byte offset it corresponds to), then ordered, complete output with gap catch-up by
offset, a redraw when the gap is beyond the scrollback, and a resume by offset when
ptyd restarts. Keys typed in the page go up the same stream, so the page's terminal
(xterm.js) answers the program's queries when it typed last, exactly once.

That client is blocking, so each browser terminal gets a thread that owns its stream:
it waits on the stream's descriptor and on a wake-up pipe (keys to send), never longer
than ``POLL_S`` (the stream reconnects to a restarted ptyd on its next poll). What it
reads goes to the trio side through a bounded channel: a slow browser stops the thread
reading, ptyd then skips chunks for it and the stream catches up by offset (or redraws)
once the browser drains - memory stays bounded either way.

Resuming a page: a browser that reconnects says which offset it has shown
(``since``). The stream is opened (a fresh screen) and, when ``since`` is within what
ptyd can replay, told to go on from there instead (``restart_at``: a ``read {since}``),
so the page continues byte for byte without a redraw.
"""

from __future__ import annotations

import logging
import os
import select
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import trio

from orca.client.terminal import LocalTerminalStream
from orca.paths import OrcaPaths
from orca.wire.errors import OrcaError

log = logging.getLogger(__name__)

# The longest a terminal's thread waits without looking at its stream (reconnects to a
# restarted ptyd happen on a poll) or at a stop request.
POLL_S = 0.5
# Pieces queued for the browser before the thread stops reading (backpressure).
QUEUE_PIECES = 64
# Keys waiting for the thread; a paste larger than this is refused, not buffered.
MAX_PENDING_INPUT_BYTES = 1 << 20


@dataclass(frozen=True)
class Piece:
    """What the browser gets: ``kind`` screen (clear, then draw), output, exit, error."""

    kind: str
    data: bytes = b""
    offset: int = 0  # the stream's offset after this piece
    cols: int = 0
    rows: int = 0
    exit_code: int | None = None
    message: str = ""


class TerminalBridge:
    """Run with :meth:`run` (until the stream ends or the caller is cancelled)."""

    def __init__(self, session_id: str, paths: OrcaPaths, since: int | None = None) -> None:
        self.session_id = session_id
        self.paths = paths
        self.since = since
        self._inbox: deque[tuple[str, bytes, int, int]] = deque()
        self._pending_bytes = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._closed = False  # the pipe is closed (under _lock: no write to a reused fd)

    # -- the trio side -------------------------------------------------------------------
    def write(self, data: bytes) -> bool:
        """Queue keys for the PTY (thread-safe); False when too much is waiting."""
        with self._lock:
            if self._pending_bytes + len(data) > MAX_PENDING_INPUT_BYTES:
                return False
            self._inbox.append(("input", data, 0, 0))
            self._pending_bytes += len(data)
        self._wake()
        return True

    def resize(self, cols: int, rows: int) -> None:
        with self._lock:
            self._inbox.append(("resize", b"", cols, rows))
        self._wake()

    def _wake(self) -> None:
        with self._lock:
            if self._closed:
                return
            try:
                os.write(self._wake_w, b"x")
            except OSError:
                pass  # the pipe is full: the thread is awake anyway

    async def run(self, send: trio.MemorySendChannel[Piece]) -> None:
        """Stream pieces into ``send`` until the session's output ends (after its exit)
        or we are cancelled; the thread is told to stop either way."""
        token = trio.lowlevel.current_trio_token()
        try:
            await trio.to_thread.run_sync(self._loop, send, token, abandon_on_cancel=True)
        finally:
            self._stop.set()
            self._wake()

    # -- the thread -----------------------------------------------------------------------
    def _loop(self, send: trio.MemorySendChannel[Piece], token: trio.lowlevel.TrioToken) -> None:
        def emit(piece: Piece) -> None:
            trio.from_thread.run(send.send, piece, trio_token=token)

        try:
            try:
                stream, screen = LocalTerminalStream.open(self.session_id, self.paths)
            except OrcaError as exc:
                emit(Piece("error", message=exc.message))
                return
            try:
                self._serve(stream, screen, emit)
            finally:
                stream.close()
        except (trio.BrokenResourceError, trio.Cancelled, trio.RunFinishedError):
            return  # the browser went away (or the actor is stopping)
        finally:
            with self._lock:
                self._closed = True
                for fd in (self._wake_r, self._wake_w):
                    os.close(fd)

    def _serve(
        self, stream: LocalTerminalStream, screen: bytes, emit: Callable[[Piece], None]
    ) -> None:
        since = self.since
        if since is not None and 0 <= since <= stream.cursor.offset:
            stream.restart_at(since)  # the page has the screen up to ``since``: go on from it
        else:
            emit(Piece("screen", screen, stream.cursor.offset, stream.cols, stream.rows))
        exited = False
        while not self._stop.is_set():
            ready, _, _ = select.select([stream.fileno(), self._wake_r], [], [], POLL_S)
            if self._wake_r in ready:
                try:
                    os.read(self._wake_r, 4096)
                except BlockingIOError:
                    pass
            try:
                self._send_inbox(stream)
                pieces = stream.poll_output(0)
                stream.keepalive()
            except OrcaError as exc:  # ptyd's queue is full or it is away: said, retried
                emit(Piece("error", message=exc.message))
                continue
            for data, repaint in pieces:
                kind = "screen" if repaint else "output"
                emit(Piece(kind, data, stream.cursor.offset, stream.cols, stream.rows))
            if stream.ended and not exited:
                exited = True
                emit(Piece("exit", offset=stream.cursor.offset, exit_code=stream.exit_code))
                return

    def _send_inbox(self, stream: LocalTerminalStream) -> None:
        while True:
            with self._lock:
                if not self._inbox:
                    return
                kind, data, cols, rows = self._inbox.popleft()
                self._pending_bytes -= len(data)
            if kind == "input":
                stream.write(data)
            else:
                stream.resize(cols, rows)
