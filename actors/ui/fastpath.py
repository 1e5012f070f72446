"""The keystroke and screen path on Textual's own loop: no trio hop, no thread.

Why: trio runs as a guest of the asyncio loop (``actors/ui/runtime.py``), so each trio
I/O wake-up crosses two OS threads (trio's I/O thread sees the event, then posts to
the host loop). That is fine for mirrors; for a keystroke and its echo it is four
crossings on top of ptyd's, and on a loaded 2-core box each costs tens of ms
(bench/ui.py: echo p50 ~0.5 s that way, against 25 ms for ``orca term attach``). So
the two hot directions run on asyncio directly, with ``loop.add_reader`` on the ZeroMQ
FDs (edge-triggered: ``EVENTS`` is re-checked after every send and every drain):

* :class:`KeySender` sends ``term.write`` (ptyd's op, from ``orca.contracts.ptyd``) on
  a DEALER of its own, fire-and-forget (``term.write`` only queues input), and reads
  the replies to report an error; a ptyd that is down drops the keys with a notice
  (``IMMEDIATE``: nothing queues for a dead peer): the caller then takes the trio path
  (``PaneFeed.send_nowait``), which waits for ptyd's return and reports a timeout.
* :func:`watch_readable` wakes a pane's reader when its attachment's socket has events.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable

import zmq

from orca.contracts import ptyd
from orca.wire.codec import ZMQ_MAX_MESSAGE_BYTES
from orca.wire.envelope import decode_reply_raw, encode_request
from orca.wire.errors import BadFrame

log = logging.getLogger(__name__)


class KeySender:
    """Fire-and-forget ``term.write`` requests to ptyd from the asyncio side."""

    def __init__(self, endpoint: str, on_error: Callable[[str], None]) -> None:
        self._on_error = on_error
        self._loop = asyncio.get_running_loop()
        sock: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.IMMEDIATE, 1)
        sock.setsockopt(zmq.MAXMSGSIZE, ZMQ_MAX_MESSAGE_BYTES)
        sock.connect(endpoint)
        self._sock = sock
        self._fd: int = sock.getsockopt(zmq.FD)  # type: ignore[assignment]
        self._loop.add_reader(self._fd, self._drain)
        self.sent = 0

    def send(self, session_id: str, data: bytes) -> bool:
        """Send now; False when ptyd is not connected (the caller takes the slow path,
        which waits for ptyd and reports a timeout)."""
        args = ptyd.WriteArgs(session_id=session_id, data=data)
        frame = encode_request(os.urandom(6).hex(), ptyd.WRITE.name, args)
        try:
            self._sock.send(frame, zmq.NOBLOCK)
            self.sent += 1
            return True
        except zmq.Again:
            return False
        finally:
            self._drain()

    def _drain(self) -> None:
        while int(self._sock.getsockopt(zmq.EVENTS)) & zmq.POLLIN:
            try:
                frame = self._sock.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            try:
                reply = decode_reply_raw(frame)
            except BadFrame:
                continue
            if not reply.ok and reply.error:
                self._on_error(f"typing failed: {reply.error.get('message', 'error')}")

    def close(self) -> None:
        self._loop.remove_reader(self._fd)
        self._sock.close(linger=0)


def watch_readable(fd: int, callback: Callable[[], None]) -> Callable[[], None]:
    """Call ``callback`` whenever ``fd`` is readable (on the running asyncio loop);
    returns the function that stops watching."""
    loop = asyncio.get_running_loop()
    loop.add_reader(fd, callback)

    def stop() -> None:
        loop.remove_reader(fd)

    return stop
