"""A blocking attached client of one ``ptyd`` session (CLI ``attach``, benchmarks, scripts).

Subscribe first, then ``term.attach`` (snapshot + its end offset), then apply output
events through a :class:`~orca.client.cursor.StreamCursor`: duplicates are skipped, a
gap is caught up with ``term.read {since}``, and a gap beyond the scrollback repaints
from the snapshot. A ``term.rekeyed`` event for our session (a worktree rename) moves
the subscription. Calls and events are typed by ``orca.contracts.ptyd``; a malformed
event is logged once and dropped (``decode_event_data``), never raised to the caller.

Like ``orca.client.sync`` it imports neither trio nor anything under ``actors/``.
"""

from __future__ import annotations

import zmq

from orca.client.cursor import StreamCursor
from orca.client.sync import invoke
from orca.contracts import ptyd
from orca.contracts.base import DecodeStats, decode_event_data, specs_by_type
from orca.paths import OrcaPaths, resolve_paths
from orca.wire.codec import ZMQ_MAX_MESSAGE_BYTES
from orca.wire.envelope import decode_event
from orca.wire.errors import BadFrame

# Events a subscriber may queue before PUB drops for it (then it catches up by offset).
RCVHWM = 10_000
CONSUMER = "terminal client<-ptyd"
FOLLOWED = specs_by_type((ptyd.OUTPUT, ptyd.EXIT, ptyd.REKEYED))


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
        self.stats = DecodeStats()

    @classmethod
    def open(cls, session_id: str, paths: OrcaPaths | None = None) -> Attachment:
        paths = paths or resolve_paths()
        sub: zmq.Socket[bytes] = zmq.Context.instance().socket(zmq.SUB)
        sub.setsockopt(zmq.LINGER, 0)
        sub.setsockopt(zmq.RCVHWM, RCVHWM)
        sub.setsockopt(zmq.MAXMSGSIZE, ZMQ_MAX_MESSAGE_BYTES)
        sub.setsockopt(zmq.SUBSCRIBE, ptyd.REKEYED.type.encode())
        sub.connect(paths.ipc_endpoint(ptyd.CONTRACT.actor, "pub"))
        attachment = cls(session_id, paths, sub)
        try:
            attachment._subscribe(session_id)
            reply = invoke(ptyd.ATTACH, ptyd.SessionArgs(session_id=session_id), paths=paths)
        except BaseException:
            sub.close(linger=0)
            raise
        attachment.session_id = reply.session_id
        attachment.cursor.restart_at(reply.offset)
        attachment.initial = attachment.cursor.accept(reply.offset, reply.data) or b""
        return attachment

    def write(self, data: bytes) -> None:
        invoke(ptyd.WRITE, ptyd.WriteArgs(session_id=self.session_id, data=data), paths=self.paths)

    def resize(self, cols: int, rows: int) -> None:
        args = ptyd.ResizeArgs(session_id=self.session_id, cols=cols, rows=rows)
        invoke(ptyd.RESIZE, args, paths=self.paths)

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
                self.stats.malformed += 1
                continue
            typed = decode_event_data(event, FOLLOWED, consumer=CONSUMER, stats=self.stats)
            if typed is not None:
                self._apply(typed, out)

    def close(self) -> None:
        self.socket.close(linger=0)

    def _apply(
        self,
        event: ptyd.OutputChunk | ptyd.SessionExited | ptyd.SessionRekeyed,
        out: list[tuple[bytes, bool]],
    ) -> None:
        if isinstance(event, ptyd.SessionRekeyed):
            if event.old == self.session_id:
                self._subscribe(event.new)
                self.session_id = event.new
                out.extend(self.catch_up())
            return
        if event.session_id != self.session_id:
            return  # topics match by prefix: another session whose id extends ours
        if isinstance(event, ptyd.OutputChunk):
            fresh = self.cursor.accept(event.offset, event.data)
            if fresh is None:
                out.extend(self.catch_up())
                fresh = self.cursor.accept(event.offset, event.data) or b""
            if fresh:
                out.append((fresh, False))
        else:
            out.extend(self.catch_up())
            self.exit_code = event.exit_code

    def catch_up(self) -> list[tuple[bytes, bool]]:
        """Fetch everything since our offset (or the snapshot after a gap)."""
        args = ptyd.ReadArgs(session_id=self.session_id, since=self.cursor.offset)
        reply = invoke(ptyd.READ, args, paths=self.paths)
        self.output_ended = reply.output_ended
        if reply.gap:
            self.cursor.restart_at(reply.offset)
            return [(self.cursor.accept(reply.offset, reply.data) or b"", True)]
        fresh = self.cursor.accept(reply.offset, reply.data)
        return [(fresh, False)] if fresh else []

    def _subscribe(self, session_id: str) -> None:
        for topic in (ptyd.output_topic(session_id), ptyd.exit_topic(session_id)):
            self.socket.setsockopt(zmq.SUBSCRIBE, topic.encode())
