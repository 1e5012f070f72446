"""The terminal client decodes ptyd's events by the contract: a malformed one is dropped."""

from __future__ import annotations

from pathlib import Path

import pytest
import zmq

from orca.client.terminal import CONSUMER, Attachment
from orca.contracts import ptyd
from orca.paths import resolve_paths
from orca.wire.envelope import Event, encode_event

SID = "repo1::/w/a@@0123abcd"
POLL_MS = 5000


def test_a_malformed_output_event_is_logged_once_and_the_next_one_shows(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An output event whose data is not bytes is logged and skipped; the stream goes on."""
    paths = resolve_paths({"ORCA_HOME": str(tmp_path / "home")}).ensure()
    endpoint = paths.ipc_endpoint(ptyd.CONTRACT.actor, "pub")
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    xpub = ctx.socket(zmq.XPUB)
    xpub.setsockopt(zmq.LINGER, 0)
    xpub.bind(endpoint)
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.connect(endpoint)
    attachment = Attachment(SID, paths, sub)
    try:
        attachment._subscribe(SID)
        wanted = {ptyd.output_topic(SID), ptyd.exit_topic(SID)}
        while wanted:  # the client's SUBSCRIBE messages: it is connected
            assert xpub.poll(POLL_MS, zmq.POLLIN)
            wanted.discard(xpub.recv()[1:].decode())

        def send(seq: int, data: object) -> None:
            event = Event(1, ptyd.CONTRACT.actor, "e0", seq, ptyd.OUTPUT.type, data)
            xpub.send_multipart((ptyd.output_topic(SID).encode(), encode_event(event)))

        send(1, {"sessionId": SID, "offset": 0, "data": "not bytes"})
        send(2, {"sessionId": SID, "offset": 0, "data": b"hello"})
        out: list[tuple[bytes, bool]] = []
        while not out:
            out += attachment.poll_output(POLL_MS)
    finally:
        attachment.close()
        xpub.close(linger=0)
    assert out == [(b"hello", False)] and attachment.cursor.offset == 5
    assert attachment.stats.malformed == 1 and attachment.stats.decoded == 1
    warnings = [r.getMessage() for r in caplog.records if CONSUMER in r.getMessage()]
    assert len(warnings) == 1 and "$.data" in warnings[0]
