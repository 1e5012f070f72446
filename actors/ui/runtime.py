"""The trio client runtime inside Textual's asyncio loop (trio guest mode).

Essay: why guest mode, and the one rule it imposes.

Every Orca client is written for trio (``orca.actor``: RpcClient, Mirror, Subscriber,
the ZeroMQ adapter); Textual runs on asyncio. ``trio.lowlevel.start_guest_run`` lets
trio schedule its tasks through the host loop's ``call_soon``: one thread, two
schedulers, no second event loop and no thread hand-off for data. trio's I/O waits
run in a helper thread that only *waits*; every trio task body runs on the asyncio
thread, between asyncio callbacks.

Rule: code on the asyncio side never awaits trio primitives, and code on the trio side
never awaits asyncio ones. They meet in two plain calls: the asyncio side hands work to
trio with :meth:`TrioGuest.start_soon` (``TrioToken.run_sync_soon``, safe from any
context), and trio tasks touch Textual widgets directly (same thread) or through
``App.post_message``.

Shutdown: :meth:`TrioGuest.stop` cancels the guest's root scope and waits (on the
asyncio side) for trio's done callback, so no trio task outlives the app.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import trio

# How long stop() waits for trio's tasks to unwind after the cancel (sockets close,
# leases end best effort); beyond it the app exits anyway.
STOP_TIMEOUT_S = 5.0


class TrioGuest:
    """A trio run hosted by the running asyncio loop, with a nursery to start tasks in."""

    def __init__(self, on_crash: Callable[[BaseException], None] | None = None) -> None:
        self._on_crash = on_crash
        self._token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._ready: asyncio.Event = asyncio.Event()
        self._done: asyncio.Future[Any] | None = None
        self.error: BaseException | None = None
        self.stopping = False

    @property
    def running(self) -> bool:
        return self._nursery is not None and self._done is not None and not self._done.done()

    async def start(self, main: Callable[[trio.Nursery], Awaitable[None]] | None = None) -> None:
        """Start trio in this loop; ``main(nursery)`` runs first. Returns once trio runs."""
        loop = asyncio.get_running_loop()
        self._done = loop.create_future()

        def done(outcome: Any) -> None:
            try:
                outcome.unwrap()
            except BaseException as exc:  # reported to the app, not raised into asyncio
                self.error = exc
                if self._on_crash is not None and not isinstance(exc, trio.Cancelled):
                    self._on_crash(exc)
            if self._done is not None and not self._done.done():
                self._done.set_result(None)
            self._ready.set()

        trio.lowlevel.start_guest_run(
            self._root,
            main,
            run_sync_soon_threadsafe=loop.call_soon_threadsafe,
            run_sync_soon_not_threadsafe=loop.call_soon,
            done_callback=done,
            host_uses_signal_set_wakeup_fd=False,
            strict_exception_groups=True,
        )
        await self._ready.wait()
        if self.error is not None:
            raise RuntimeError("the trio runtime failed to start") from self.error

    async def _root(self, main: Callable[[trio.Nursery], Awaitable[None]] | None) -> None:
        self._token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            if main is not None:
                await main(nursery)
            self._ready.set()
            await trio.sleep_forever()

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``fn(*args)`` as a trio task (callable from asyncio code; no wait)."""
        token, nursery = self._token, self._nursery
        if token is None or nursery is None:
            return
        try:
            token.run_sync_soon(nursery.start_soon, fn, *args)
        except trio.RunFinishedError:
            pass  # shutting down: the work would be cancelled anyway

    def run_sync_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run a plain ``fn(*args)`` inside trio's context soon."""
        if self._token is None:
            return
        try:
            self._token.run_sync_soon(fn, *args)
        except trio.RunFinishedError:
            pass

    async def stop(self) -> None:
        """Cancel every trio task and wait for the run to end (bounded)."""
        self.stopping = True
        if self._done is None or self._done.done():
            return
        nursery = self._nursery
        if nursery is not None:
            self.run_sync_soon(nursery.cancel_scope.cancel)
        try:
            await asyncio.wait_for(asyncio.shield(self._done), STOP_TIMEOUT_S)
        except TimeoutError:
            pass
