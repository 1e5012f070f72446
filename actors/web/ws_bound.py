"""A WebSocket message's size bound that holds after the close (issue 33).

hypercorn 0.18's ``WebsocketBuffer.extend`` writes a piece of a message before it
compares the length with ``websocket_max_message_size``. Past the bound it sends the
close (1009, message too big) and then goes on writing whatever the peer sends until
the peer answers that close, which a hostile peer never does: a frame declaring 2^62
bytes made the web actor hold +30 MiB for 32 MiB sent (tests/security/
test_web_security.py). This buffer refuses a piece that would pass the bound before
it is written, and every piece after it, so no message holds more than the bound;
hypercorn's second close of the same socket is dropped by its own ``_send_wsproto_event``
(wsproto's ``LocalProtocolError``).

Refusing at the frame's header would need wsproto's private decoder state; the bound
makes the header's claim cost nothing but the bound.

Installed by ``install()`` (the web actor, before it serves), checked against the pinned
hypercorn (``pyproject.toml``: <0.19) by the names it replaces.
"""

from __future__ import annotations

from hypercorn.protocol import ws_stream
from wsproto.events import Message


class BoundedWebsocketBuffer(ws_stream.WebsocketBuffer):
    """hypercorn's message buffer, refusing before it writes and for good once over."""

    def __init__(self, max_length: int) -> None:
        super().__init__(max_length)
        self.over = False

    def extend(self, event: Message) -> None:  # type: ignore[type-arg]
        if self.over or self.length + len(event.data) > self.max_length:
            self.over = True
            self.value = None  # what was held goes now, not with the connection
            raise ws_stream.FrameTooLargeError()
        super().extend(event)


def install() -> None:
    """Make hypercorn's WebSocket streams use ``BoundedWebsocketBuffer``."""
    ws_stream.WebsocketBuffer = BoundedWebsocketBuffer  # type: ignore[misc]
