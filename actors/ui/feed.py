"""The one seam between an embedded pane and ptyd: :class:`PaneFeed` over ``Attachment``.

The UI does not speak ptyd's attach protocol itself: it drives the public blocking
client ``orca.client.terminal.Attachment`` (the same one ``orca term attach`` uses:
screen first, then ordered and complete output with gap catch-up, queries stripped,
a lease that counts the pane in ``term.list``'s ``subscribers``) from trio, so a
rework of that client (a per-attachment stream) reaches the UI without touching a
widget. Opening, renewing the lease and closing (blocking RPCs) run in worker
threads; reading runs on the loop's thread, non-blocking.

Waiting for output is event-driven: the attachment's socket FD (ZeroMQ's edge-
triggered one, so ``EVENTS`` is re-checked after every drain) wakes the reader; an
attachment without a socket is polled with a short timeout in its worker thread.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from orca.paths import OrcaPaths
from orca.wire.errors import OrcaError

log = logging.getLogger(__name__)

# Fallback wait per poll when the attachment has no socket to wait on.
POLL_FALLBACK_MS = 100
# A feed that lost its session (ptyd down, not yet listed again) retries this often.
REOPEN_BACKOFF_S = 1.0

OutputHandler = Callable[[bytes, bool], None]  # (bytes, repaint)


class PaneFeed:
    """One attached pane: ``run`` streams output to ``on_output`` until cancelled.

    ``write`` and ``resize`` go through ``send_input``/``send_resize`` (the UI's trio
    RPC client for ptyd's ``term.write``/``term.resize``, to the attachment's current
    session id, which follows a rename): a blocking call per keystroke in a worker
    thread costs a thread hop each way, which on a loaded machine is most of the
    input-to-echo time (bench/ui.py).
    """

    def __init__(
        self,
        session_id: str,
        paths: OrcaPaths,
        on_output: OutputHandler,
        send_input: Callable[[str, bytes], Awaitable[None]],
        send_resize: Callable[[str, int, int], Awaitable[None]],
        read_screen: Callable[[str, str], Awaitable[tuple[bytes, int]]],
    ) -> None:
        self.session_id = session_id
        self.paths = paths
        self._on_output = on_output
        self._send_input = send_input
        self._send_resize = send_resize
        self._read_screen = read_screen
        self._resnap = False
        self._attachment: Any = None
        self.exit_code: int | None = None
        self.attached = trio.Event()
        self.error: str | None = None
        self._pending: list[bytes] = []
        self._typed = trio.Event()
        self._size: tuple[int, int] | None = None
        self._resized = trio.Event()

    async def run(self) -> None:
        from orca.client.terminal import Attachment

        try:
            while self._attachment is None:
                try:
                    self._attachment = await trio.to_thread.run_sync(
                        Attachment.open, self.session_id, self.paths
                    )
                except OrcaError as exc:
                    self.error = exc.message
                    await trio.sleep(REOPEN_BACKOFF_S)
            self.error = None
            self._on_output(self._attachment.initial, True)
            self.attached.set()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._keepalive)
                nursery.start_soon(self._writer)
                nursery.start_soon(self._resizer)
                await self._stream()
                nursery.cancel_scope.cancel()
        finally:
            attachment, self._attachment = self._attachment, None
            if attachment is not None:
                with trio.CancelScope(shield=True), trio.move_on_after(2):
                    await trio.to_thread.run_sync(attachment.close)

    async def _stream(self) -> None:
        import zmq

        from actors.ui.fastpath import watch_readable

        attachment = self._attachment
        sock = getattr(attachment, "socket", None)
        if sock is None:  # a client without a socket to wait on: poll it in a thread
            while True:
                pieces = await trio.to_thread.run_sync(attachment.poll_output, POLL_FALLBACK_MS)
                self._deliver(pieces)
        fd = sock.getsockopt(zmq.FD)

        def drain() -> None:
            # Edge-triggered: drain until EVENTS says nothing is pending.
            while True:
                try:
                    pieces = attachment.poll_output(0)
                except OrcaError as exc:
                    self.error = exc.message  # ptyd restarting: the next event retries
                    return
                self._deliver(pieces)
                if not pieces and not sock.getsockopt(zmq.EVENTS) & zmq.POLLIN:
                    return

        # The reader runs on the host (asyncio) loop: a chunk costs no trio I/O-thread
        # hop (``actors/ui/fastpath.py``). It is removed before the socket is closed.
        stop = watch_readable(fd, drain)
        try:
            drain()
            await trio.sleep_forever()
        finally:
            stop()

    def _deliver(self, pieces: list[tuple[bytes, bool]]) -> None:
        for data, repaint in pieces:
            self._on_output(data, repaint)
        attachment = self._attachment
        if attachment is not None and attachment.exit_code is not None and self.exit_code is None:
            self.exit_code = attachment.exit_code

    async def _keepalive(self) -> None:
        while True:
            lease = float(getattr(self._attachment, "lease_s", 0.0) or 15.0)
            await trio.sleep(max(1.0, lease / 3))
            try:
                await trio.to_thread.run_sync(self._attachment.keepalive)
            except OrcaError:
                pass  # ptyd down: the lease is taken again by the next keepalive

    def send_nowait(self, data: bytes) -> None:
        """Queue keys for the PTY, in order (call from trio's context; never blocks)."""
        if data:
            self._pending.append(data)
            self._typed.set()

    def resize_nowait(self, cols: int, rows: int, resnap: bool = False) -> None:
        """Resize the PTY; with ``resnap``, then repaint from ptyd's screen at that size."""
        self._size = (cols, rows)
        self._resnap = self._resnap or resnap
        self._resized.set()

    def current_session(self) -> str:
        return str(getattr(self._attachment, "session_id", self.session_id))

    async def _writer(self) -> None:
        # One writer, so keys reach the PTY in the order typed; what piles up while a
        # write is in flight goes out as one write.
        while True:
            await self._typed.wait()
            self._typed = trio.Event()
            data, self._pending = b"".join(self._pending), []
            try:
                await self._send_input(self.current_session(), data)
            except OrcaError as exc:
                self.error = exc.message

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
        from orca.client.terminal import QueryFilter

        attachment = self._attachment
        if attachment is None:
            return
        data, end = await self._read_screen(self.current_session(), attachment.attachment_id)
        attachment.cursor.restart_at(end)
        attachment.queries = QueryFilter()
        self._on_output(data, True)
