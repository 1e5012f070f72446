"""A blocking attached client of one session (CLI ``attach``, benchmarks, scripts).

Subscribe first, then ``term.attach`` (snapshot + its end offset), then apply output
events through a :class:`StreamCursor`: duplicates are skipped, a gap is caught up
with ``term.read {since}``, and a gap beyond the scrollback repaints from the snapshot.
A ``term.rekeyed`` event for our session (a worktree rename) moves the subscription.
"""

from __future__ import annotations

from typing import Any

import zmq

from actors.ptyd import api
from actors.ptyd.cursor import StreamCursor
from orca.client.sync import call
from orca.paths import OrcaPaths, resolve_paths
from orca.wire.codec import ZMQ_MAX_MESSAGE_BYTES
from orca.wire.envelope import decode_event
from orca.wire.errors import BadFrame

# Events a subscriber may queue before PUB drops for it (then it catches up by offset).
RCVHWM = 10_000


class Attachment:
    """One attached view of a session: output in order and complete, input out."""

    def __init__(self, session_id: str, paths: OrcaPaths, sub: zmq.Socket[bytes]) -> None:
        self.session_id = session_id
        self.paths = paths
        self.socket = sub
        self.cursor = StreamCursor(0)
        self.initial = b""
        self.exit_code: int | None = None
        self.output_ended = False

    @classmethod
    def open(cls, session_id: str, paths: OrcaPaths | None = None) -> Attachment:
        paths = paths or resolve_paths()
        sub: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.SUB)
        sub.setsockopt(zmq.LINGER, 0)
        sub.setsockopt(zmq.RCVHWM, RCVHWM)
        sub.setsockopt(zmq.MAXMSGSIZE, ZMQ_MAX_MESSAGE_BYTES)
        sub.setsockopt(zmq.SUBSCRIBE, api.REKEYED_EVENT.encode())
        sub.connect(paths.ipc_endpoint("ptyd", "pub"))
        attachment = cls(session_id, paths, sub)
        try:
            attachment._subscribe(session_id)
            reply = attachment._call("term.attach", {"sessionId": session_id})
        except BaseException:
            sub.close(linger=0)
            raise
        attachment.session_id = reply["sessionId"]
        attachment.cursor.restart_at(reply["offset"])
        attachment.initial = attachment.cursor.accept(reply["offset"], reply["data"]) or b""
        return attachment

    def write(self, data: bytes) -> None:
        self._call("term.write", {"sessionId": self.session_id, "data": data})

    def resize(self, cols: int, rows: int) -> None:
        self._call("term.resize", {"sessionId": self.session_id, "cols": cols, "rows": rows})

    def poll_output(self, timeout_ms: int = 0) -> list[tuple[bytes, bool]]:
        """New output as (bytes, repaint) pieces; repaint: clear the screen first."""
        out: list[tuple[bytes, bool]] = []
        if timeout_ms and not self.socket.poll(timeout_ms, zmq.POLLIN):
            return out
        while True:
            try:
                frames = self.socket.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return out
            try:
                event = decode_event(frames[-1])
            except BadFrame:
                continue
            self._apply(event.type, event.data, out)

    def close(self) -> None:
        self.socket.close(linger=0)

    def _apply(self, kind: str, data: Any, out: list[tuple[bytes, bool]]) -> None:
        if kind == api.REKEYED_EVENT and data.get("old") == self.session_id:
            self._subscribe(data["new"])
            self.session_id = data["new"]
            out.extend(self.catch_up())
            return
        if data.get("sessionId") != self.session_id:
            return  # topics match by prefix: another session whose id extends ours
        if kind == api.OUTPUT_EVENT:
            fresh = self.cursor.accept(data["offset"], data["data"])
            if fresh is None:
                out.extend(self.catch_up())
                fresh = self.cursor.accept(data["offset"], data["data"]) or b""
            if fresh:
                out.append((fresh, False))
        elif kind == api.EXIT_EVENT:
            out.extend(self.catch_up())
            self.exit_code = data.get("exitCode")

    def catch_up(self) -> list[tuple[bytes, bool]]:
        """Fetch everything since our offset (or the snapshot after a gap)."""
        reply = self._call("term.read", {"sessionId": self.session_id, "since": self.cursor.offset})
        self.output_ended = bool(reply.get("outputEnded"))
        if reply["gap"]:
            self.cursor.restart_at(reply["offset"])
            return [(self.cursor.accept(reply["offset"], reply["data"]) or b"", True)]
        fresh = self.cursor.accept(reply["offset"], reply["data"])
        return [(fresh, False)] if fresh else []

    def _subscribe(self, session_id: str) -> None:
        for topic in (api.output_topic(session_id), api.exit_topic(session_id)):
            self.socket.setsockopt(zmq.SUBSCRIBE, topic.encode())

    def _call(self, op: str, args: dict[str, Any]) -> Any:
        return call("ptyd", op, args, paths=self.paths)
