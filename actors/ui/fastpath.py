"""The keystroke and screen path on Textual's own loop: no trio hop, no thread.

Why: trio runs as a guest of the asyncio loop (``actors/ui/runtime.py``), so each trio
I/O wake-up crosses two OS threads (trio's I/O thread sees the event, then posts to
the host loop). That is fine for mirrors; for a keystroke and its echo it is four
crossings on top of ptyd's, and on a loaded 2-core box each costs tens of ms
(bench/ui.py). So the hot directions run on asyncio directly: keys are written to a
pane's attach stream from the key handler (``PaneFeed.send_now``, a non-blocking
send), and :func:`watch_readable` wakes the pane's reader with ``loop.add_reader`` on
the stream's socket (``LocalTerminalStream.fileno``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


def watch_readable(fd: int, callback: Callable[[], None]) -> Callable[[], None]:
    """Call ``callback`` whenever ``fd`` is readable (on the running asyncio loop);
    returns the function that stops watching."""
    loop = asyncio.get_running_loop()
    loop.add_reader(fd, callback)

    def stop() -> None:
        loop.remove_reader(fd)

    return stop
