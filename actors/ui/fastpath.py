"""The keystroke and screen path on Textual's own loop: no trio hop, no thread.

Why: trio runs as a guest of the asyncio loop (``actors/ui/runtime.py``), so each trio
I/O wake-up crosses two OS threads (trio's I/O thread sees the event, then posts to
the host loop). That is fine for mirrors; for a keystroke and its echo it is four
crossings on top of ptyd's, and on a loaded 2-core box each costs tens of ms
(bench/ui.py). So the hot directions run on asyncio directly: keys are written to a
pane's attach stream from the key handler (``PaneFeed.send_now``, a non-blocking
send), and :func:`watch_readable` wakes the pane's reader with ``loop.add_reader`` on
the stream's socket (``LocalTerminalStream.fileno``).

Keys take one more shortcut (:func:`route_input`): Textual's driver hands each event
it reads to the loop as a new task, which queues it for the app, which queues it for
the focused widget (three loop turns, each behind whatever else is ready: ~0.5 ms per
key here under load). Here each event reaches the loop as a plain callback, in the
order read, and a key the focused pane can take there and then (``take``) is typed
into it at once; every other event, and every key ``take`` declines, is posted to
the app as the driver would have.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from textual import events

log = logging.getLogger(__name__)


def watch_readable(fd: int, callback: Callable[[], None]) -> Callable[[], None]:
    """Call ``callback`` whenever ``fd`` is readable (on the running asyncio loop);
    returns the function that stops watching."""
    loop = asyncio.get_running_loop()
    loop.add_reader(fd, callback)

    def stop() -> None:
        loop.remove_reader(fd)

    return stop


def route_input(app: Any, take: Callable[[events.Key], bool]) -> None:
    """Deliver what ``app``'s driver reads straight to the loop: keys through ``take``
    first (nothing changes while the app has no driver).

    Replaces the driver's ``send_message`` (Textual's driver API: its input thread
    calls it for each event, and the base class posts the event with
    ``run_coroutine_threadsafe``); textual is pinned below 9 and
    tests/ui/test_frames.py types through it."""
    driver = getattr(app, "_driver", None)
    if driver is None:
        return
    loop = asyncio.get_running_loop()

    def deliver(message: Any) -> None:
        if isinstance(message, events.Key) and app.is_running:
            try:
                if take(message):
                    return
            except Exception:  # our bug: the key still goes the usual way
                log.exception("typing a key at once failed")
        app.post_message(message)

    def send_message(message: Any) -> None:  # on the driver's input thread
        loop.call_soon_threadsafe(deliver, message)

    driver.send_message = send_message
