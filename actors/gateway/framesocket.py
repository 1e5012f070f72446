"""A ``ZSocket`` whose handler gets ``zmq.Frame`` objects, to read ZAP's User-Id.

The listener must know which key sent each request (``Frame.get("User-Id")``, set by
the ZAP reply), and only a frame received with ``copy=False`` carries that property.
``_service_loop`` here is ``orca.actor.zsocket.ZSocket``'s with that one change (and a
cap on frames per message); the edge-triggered rule and the non-re-entrant servicing
are the base class's.
"""

from __future__ import annotations

from collections.abc import Callable

import zmq

from orca.actor.zsocket import UNLIMITED, ZSocket

FrameHandler = Callable[[list[zmq.Frame]], None]
_POLLIN = int(zmq.POLLIN)
_POLLOUT = int(zmq.POLLOUT)
_NOBLOCK = int(zmq.NOBLOCK)
_EVENTS = int(zmq.EVENTS)
_RCVMORE = int(zmq.RCVMORE)
# Frames of one message we accept (a request is two: routing id, body); a peer sending
# more is dropped without buffering past this many.
MAX_FRAMES = 4


class FrameSocket(ZSocket):
    def __init__(self, sock: zmq.Socket[bytes], on_frames: FrameHandler) -> None:
        super().__init__(sock, None)
        self._on_frames = on_frames

    def _service_loop(self, limit: int) -> bool:
        sock = self.sock
        events = int(sock.getsockopt(_EVENTS))
        if events & _POLLOUT and self._send_lot:
            self._send_lot.unpark_all()
        reads = 0
        while events & _POLLIN:
            if reads == limit and limit != UNLIMITED:
                return True
            frames = [sock.recv(_NOBLOCK, copy=False)]
            while sock.getsockopt(_RCVMORE):
                frame = sock.recv(_NOBLOCK, copy=False)
                if len(frames) < MAX_FRAMES:
                    frames.append(frame)
            reads += 1
            self._on_frames(frames)
            if self.closed:
                return False
            events = int(sock.getsockopt(_EVENTS))
        return False
