"""The one seam between an embedded pane and ptyd: :class:`PaneFeed` over ptyd's attach stream.

The UI does not speak ptyd's attach protocol itself: it drives the public client
``orca.client.terminal.LocalTerminalStream``, the one ``orca term attach`` uses. That
is one connection per attachment to ptyd's attach stream on its Unix socket, with keys
going up and output coming down. The screen comes first, then ordered, complete output
with gap catch-up. The peer is counted in ``term.list``'s ``subscribers`` while it pings
(docs/protocols.md §4). Opening (a blocking hello) runs in a worker thread; everything
after it runs on the loop's thread and never blocks (:class:`PaneStream`).

Keys: :meth:`PaneFeed.send_now` writes them to the stream at once, on Textual's own
thread (no trio hop, no RPC per keystroke). Typing makes this pane the terminal that
answers the program's queries (the stream's rule: the client that typed last): the
chunks ptyd marks ``answer`` reach the pane's model unfiltered, and the model's
answers (DSR, DA, DECRQM, OSC 10/11 with the pane's colours...) go back up the
stream as input, exactly as ``orca term attach``'s real terminal answers them. Every
other chunk has its queries stripped (``QueryFilter``), so nothing is answered twice.

Waiting for output is event-driven: the stream socket's descriptor wakes the reader
on the host (asyncio) loop (``actors/ui/fastpath.py``; level-triggered, so one drain
per wake-up). The socket, not ZeroMQ's DEALER (which the UI used before): bench/ui.py
measured the same echo at p50 0.8-0.9 ms over ZeroMQ and 0.5-0.6 ms over the socket,
on a quiet machine. When ptyd goes away the client keeps its descriptor number
but not the socket under it (``LocalTerminalStream``). The reader then dials again
every ``LOCAL_RECONNECT_S`` until ptyd is back, and watches the new socket
(:attr:`PaneStream.links`).

Resizes stay RPCs (``term.resize`` then, for a snapshot drawn at another size,
``term.attach`` without a lease): the repaint must follow the resize, in order.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio

from orca.client.terminal import LOCAL_RECONNECT_S, LocalTerminalStream
from orca.contracts import ptyd
from orca.paths import OrcaPaths
from orca.wire.errors import OrcaError, Unavailable

log = logging.getLogger(__name__)

# A feed that could not attach (ptyd down, the session not listed yet) retries this often.
REOPEN_BACKOFF_S = 1.0

OutputHandler = Callable[[bytes, bool], None]  # (bytes, repaint)


class PaneStream(LocalTerminalStream):
    """``LocalTerminalStream`` for a UI's loop: once live nothing it does blocks.

    The base client is written for a blocking caller (``orca term attach``): a send
    whose queue is full waits, a ``not_attached`` (ptyd restarted) waits for the new
    screen, and an ``error`` message raises out of ``poll_output`` (dropping what was
    read with it). On the UI's one thread each of those would freeze every pane, so
    once live: a full queue raises :class:`Unavailable` at once, a resume only sends
    its ``hello`` (the answer arrives as ordinary ``screen``/``output``), and errors
    are collected in :attr:`errors` for the pane to show.
    """

    def __init__(self, session_id: str, paths: OrcaPaths, *, flat: bool = False) -> None:
        self.live = False
        self.errors: list[str] = []
        self.links = 0  # connections made after the first (each a new socket to watch)
        super().__init__(session_id, paths, flat=flat)

    @classmethod
    def attach(cls, session_id: str, paths: OrcaPaths) -> tuple[PaneStream, bytes]:
        """Attach (blocking: run it in a worker thread): the stream, live, and its screen."""
        stream, screen = cls.open(session_id, paths)
        assert isinstance(stream, PaneStream)
        stream.live = True
        return stream, screen

    @property
    def connected(self) -> bool:
        return self._connected

    def _send(self, message: ptyd.ToPtyd) -> None:
        if not self.live:
            super()._send(message)
            return
        # Queued whole and written as far as the socket takes it now; the rest goes
        # with the next drain (never a blocking flush on the UI's thread).
        try:
            self._queue(message)
        except OrcaError:
            raise Unavailable("ptyd takes no input (its queue is full)") from None
        if self._connected or self._reconnect():
            self._flush(block=False)

    def _reconnect(self) -> bool:
        was = self._connected
        now = super()._reconnect()
        if now and not was:
            self.links += 1
        return now

    def _hello(self, since: int | None) -> tuple[bytes, bool]:
        if not self.live:
            return super()._hello(since)
        self._send_hello(since)
        return b"", False

    def _decode(self, body: bytes) -> ptyd.FromPtyd | None:
        message = super()._decode(body)
        live_error = self.live and isinstance(message, ptyd.StreamError)
        if live_error and message.code != ptyd.NOT_ATTACHED:  # type: ignore[union-attr]
            self.errors.append(message.message)  # type: ignore[union-attr]
            return None
        return message


class PaneFeed:
    """One attached pane: ``run`` streams output to ``on_output`` until cancelled."""

    def __init__(
        self,
        session_id: str,
        paths: OrcaPaths,
        on_output: OutputHandler,
        send_resize: Callable[[str, int, int], Awaitable[None]],
        read_screen: Callable[[str], Awaitable[tuple[bytes, int]]],
        on_drained: Callable[[], None] = lambda: None,
    ) -> None:
        self.session_id = session_id
        self._on_drained = on_drained  # after a drain's output is all handed on
        self.paths = paths
        self._on_output = on_output
        self._send_resize = send_resize
        self._read_screen = read_screen
        self._resnap = False
        self.stream: PaneStream | None = None
        self.exit_code: int | None = None
        self.attached = trio.Event()
        self.error: str | None = None
        self._pending: list[bytes] = []  # typed before the stream was open
        self._size: tuple[int, int] | None = None
        self._resized = trio.Event()
        self._draining = False
        self._went_away = trio.Event()  # drain saw ptyd go (or come back)
        self._token: trio.lowlevel.TrioToken | None = None
        self.sent = 0

    async def run(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        try:
            while self.stream is None:
                try:
                    stream, screen = await trio.to_thread.run_sync(
                        PaneStream.attach, self.session_id, self.paths
                    )
                except OrcaError as exc:
                    self.error = exc.message
                    await trio.sleep(REOPEN_BACKOFF_S)
                    continue
                self.stream = stream
            self.error = None
            self._on_output(screen, True)
            self.attached.set()
            pending, self._pending = b"".join(self._pending), []
            if pending:
                self.send_now(pending)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._keepalive)
                nursery.start_soon(self._resizer)
                await self._watch()
                nursery.cancel_scope.cancel()
        finally:
            live, self.stream = self.stream, None
            if live is not None:
                live.close()  # a bye, best effort; never blocks

    async def _watch(self) -> None:
        from actors.ui.fastpath import watch_readable

        stream = self.stream
        assert stream is not None
        # The reader runs on the host (asyncio) loop: a chunk costs no trio I/O-thread
        # hop (``actors/ui/fastpath.py``). It is removed before the socket is closed.
        links = stream.links
        stop = watch_readable(stream.fileno(), self.drain)
        try:
            while True:
                self.drain()
                if stream.connected and stream.links == links:
                    await self._went_away.wait()  # set by drain when ptyd went away
                    self._went_away = trio.Event()
                    continue
                if stream.connected:  # a new socket under our descriptor: watch it
                    stop()
                    links = stream.links
                    stop = watch_readable(stream.fileno(), self.drain)
                    continue
                await trio.sleep(LOCAL_RECONNECT_S)  # ptyd is away: dial again soon
        finally:
            stop()

    def drain(self) -> None:
        """Apply everything the stream holds now (the socket's readiness is level-
        triggered: what arrives later wakes the reader again)."""
        stream = self.stream
        if stream is None or self._draining:
            return
        self._draining = True
        links = stream.links
        try:
            try:
                pieces = stream.poll_output(0)
            except OrcaError as exc:  # a catch-up read met a full queue: retried later
                self.error = exc.message
                pieces = []
            for data, repaint in pieces:
                self._on_output(data, repaint)
            if stream.errors:
                self.error, stream.errors[:] = stream.errors[-1], []
            if stream.exit_code is not None and self.exit_code is None:
                self.exit_code = stream.exit_code
            if (not stream.connected or stream.links != links) and self._token is not None:
                # drain runs on the host loop, outside trio: wake the watcher from there
                self._token.run_sync_soon(lambda: self._went_away.set())
            if pieces:
                try:
                    self._on_drained()  # a draw: its bug must not fail a send or the feed
                except Exception:
                    log.exception("drawing pane output of %s failed", self.session_id)
        finally:
            self._draining = False

    async def _keepalive(self) -> None:
        while True:
            await trio.sleep(ptyd.STREAM_PING_S)
            stream = self.stream
            if stream is None:
                return
            try:
                stream.keepalive()  # a ping, queued while ptyd is away
            except OrcaError as exc:
                self.error = exc.message
            self.drain()  # a send may have taken the FD's edge

    def send_now(self, data: bytes) -> bool:
        """Write keys (or the model's answers) to the PTY now, in order; False when
        they could not be queued (the caller reports it). Before the stream is open
        they wait for it."""
        if not data:
            return True
        stream = self.stream
        if stream is None:
            self._pending.append(data)
            return True
        try:
            stream.write(data)
        except OrcaError as exc:
            self.error = exc.message
            return False
        self.sent += 1
        self.drain()  # a send may have taken the FD's edge
        return True

    def resize_nowait(self, cols: int, rows: int, resnap: bool = False) -> None:
        """Resize the PTY; with ``resnap``, then repaint from ptyd's screen at that size."""
        self._size = (cols, rows)
        self._resnap = self._resnap or resnap
        self._resized.set()

    def current_session(self) -> str:
        stream = self.stream
        return stream.session_id if stream is not None else self.session_id

    async def _resizer(self) -> None:
        while True:
            await self._resized.wait()
            self._resized = trio.Event()
            if self._size is not None:
                try:
                    await self._send_resize(self.current_session(), *self._size)
                    if self._resnap:
                        self._resnap = False
                        await self._resnapshot()
                except OrcaError as exc:
                    self.error = exc.message

    async def _resnapshot(self) -> None:
        """A fresh screen from ptyd's model (after a resize), spliced into the stream:
        the cursor restarts at the screen's offset, so older chunks are dropped and
        newer ones apply on top (the same rule as the client's own resync)."""
        if self.stream is None:
            return
        data, end = await self._read_screen(self.current_session())
        stream = self.stream
        if stream is None:
            return
        self._on_output(data, True)
        # After the screen: output the stream brought past it (it comes on its own
        # socket, faster than this reply) is read again and drawn over it.
        try:
            stream.restart_at(end)
        except OrcaError as exc:
            self.error = exc.message
        self.drain()
