"""The attach stream: one ROUTER socket, a peer per attached client (issue 14).

Essay: why a stream next to the RPC socket and the PUB socket.

An attached terminal is the one place where latency is felt: every keystroke goes up
and its echo comes back. Over RPC that is a request, a dispatcher turn and a reply per
key (``term.write``), and output reaches the client through the PUB socket, which
cannot tell who listens, so it can neither choose which client answers a terminal
query nor notice that a client went away. The stream is a ROUTER socket
(``ipc_endpoint("ptyd", "attach")``, file mode 0600 in the checked runtime dir; a
peer that can connect could call every op anyway); a client connects one DEALER per
attachment and its routing id is its identity. Input is written to the PTY from the
socket's callback without a dispatcher turn; output is pushed to each peer from the
session's reader as it is read (``Session._publish``), with the offsets and the gap
rule of ``term.output``, so nothing about resync changes. The same messages also come
over a Unix socket (``local_stream.py``, ``orca term attach``'s: fewer hops per key);
a local connection is a peer like a DEALER, named by a routing id no DEALER can have.

Rules it keeps:

* it never waits on a client: sends are non-blocking (``ROUTER_MANDATORY``); a peer
  whose queue is full is skipped and notices the gap by offset (``read``), a peer
  that went away is detached at the first send that cannot reach it, a silent one
  after ``ATTACH_LEASE_S``;
* exactly one terminal answers a query (``Session._deliver_to_streams``): the peer
  that typed last gets the chunk with ``answer`` true; if it cannot take it the
  model answers;
* a redraw is formatted off the loop (:func:`screen_snapshot`): the model's
  checkpoint is taken on the loop (well under a millisecond), the formatting of a
  copy runs in a worker thread; meanwhile the peer gets no live chunk, and the redraw
  is followed by what was output since the checkpoint;
* a malformed message gets an ``error`` reply; nothing a peer sends can end ptyd.
"""

from __future__ import annotations

import errno
import logging
import time
from typing import TYPE_CHECKING

import msgspec
import trio
import zmq

from actors.ptyd.archive import EndedSession
from actors.ptyd.handed import HandedPeer, accept_hand
from actors.ptyd.local_stream import LOCAL_RID_PREFIX, LocalConn, LocalListener
from actors.ptyd.replies import map_session_errors
from actors.ptyd.scrollback import Chunk, Gap, OffsetInFuture
from actors.ptyd.session import MAX_ATTACHMENTS, InputBacklogFull, Session, SessionEnded
from actors.ptyd.terminal_model import SCREEN_SWITCH, TerminalModel
from orca.actor.zsocket import ZSocket, bind_endpoint, new_socket, unlink_ipc
from orca.contracts import ptyd as contract
from orca.contracts.ptyd import LOCAL_STREAM_FILE
from orca.wire.codec import MAX_FRAME_BYTES, FrameDecoder
from orca.wire.errors import BadRequest, NotFound, OrcaError

if TYPE_CHECKING:
    from actors.ptyd.actor import Ptyd

log = logging.getLogger(__name__)

# Messages queued per peer before it counts as lagging (then it resyncs by offset):
# at most 64 KiB each, so a stalled client costs at most 16 MiB.
PEER_SNDHWM = 256
# A peer that has not been heard from for this long does not answer queries (the
# model does): a stopped client must not leave a program waiting for an answer.
ANSWER_SILENCE_S = 3 * contract.STREAM_PING_S
# A chunk of catch-up at most (one message, far below ZMQ_MAXMSGSIZE).
MAX_CATCH_UP = contract.MAX_READ_BYTES

_NOBLOCK = int(zmq.NOBLOCK)
_NOBLOCK_MORE = int(zmq.NOBLOCK) | int(zmq.SNDMORE)
# The codec's bounded decoder: garbage, a wrong type, 10,000-deep nesting are BadFrame.
_decoder: FrameDecoder[contract.ToPtyd] = FrameDecoder(
    contract.ToPtyd, what="attach-stream message", max_bytes=MAX_FRAME_BYTES
)
_encoder = msgspec.msgpack.Encoder()


async def screen_snapshot(session: Session, *, flat: bool = False) -> tuple[int, bytes]:
    """(offset, redraw) of the session's screen, formatted off the trio loop.

    The checkpoint is taken on the loop, at ``offset``; a copy restored from it is
    formatted in a worker thread (the live model keeps being fed meanwhile). Inside a
    sequence no checkpoint can be taken: then the live model formats it, on the loop.
    """
    offset = session.scrollback.end
    data = session.model.checkpoint()
    if data is None:
        return offset, session.model.snapshot(flat=flat)

    def format_copy() -> bytes:
        copy = TerminalModel.restore(data)
        try:
            return copy.snapshot(flat=flat)
        finally:
            copy.close()

    return offset, await trio.to_thread.run_sync(format_copy)


class Peer:
    """One client attached over the stream (a ``StreamPeer`` of its session)."""

    def __init__(self, stream: AttachStream, rid: bytes, session: Session, flat: bool) -> None:
        self.stream = stream
        self.rid = rid
        self.session = session
        self.flat = flat
        self.heard = time.monotonic()
        self.typed_at = self.heard  # attach counts as typing until it types
        self.pending_screen = False
        self.attached = True
        # A chunk was skipped (queue full) and no later one has told the client yet.
        self.lagged = False

    @property
    def answer_rank(self) -> float:
        return self.typed_at

    @property
    def can_answer(self) -> bool:
        return not self.pending_screen and time.monotonic() - self.heard < ANSWER_SILENCE_S

    def deliver(self, chunk: Chunk, *, answer: bool, switched: bool) -> bool:
        if self.pending_screen:
            return False  # the redraw under way is followed by a catch-up
        if self.flat and switched:
            self.stream.repaint(self)
            return False
        message = contract.StreamOutput(offset=chunk.offset, data=chunk.data, answer=answer)
        sent = self.stream.send(self, message)
        self.lagged = not sent  # a chunk it gets past its offset shows it the gap
        return sent

    def tell_position(self) -> None:
        """A lagged client whose queue has room again learns where the output is (an
        empty ``output`` at the end: past its offset, so it catches up), even when
        no more output comes to show it the gap."""
        end = self.session.scrollback.end
        if self.stream.send(self, contract.StreamOutput(offset=end, data=b"")):
            self.lagged = False

    def ended(self, exit_code: int | None, end_offset: int) -> None:
        self.stream.send(self, contract.StreamExit(exit_code=exit_code, end_offset=end_offset))


class AttachStream:
    """ptyd's attach stream: the ROUTER socket and its peers."""

    def __init__(self, ptyd: Ptyd) -> None:
        self.ptyd = ptyd
        self.peers: dict[bytes, Peer] = {}
        self._peer_came = trio.Event()  # a stream client attached (the sweep runs then)
        self.handed: dict[bytes, HandedPeer] = {}  # handed terminals (handed.py), by conn
        self.endpoint = ""
        self.refused = 0  # malformed messages
        self._ipc: list[tuple[str, int]] = []
        self._in_callback = False
        self.zsock: ZSocket | None = None  # made by bind (none without setup: no leak)
        # The same stream on a Unix socket (local_stream.py: fewer hops per key).
        self.local = LocalListener(
            ptyd.ctx.paths.runtime_dir / LOCAL_STREAM_FILE, self._on_local_frame, self._on_local_end
        )

    def bind(self) -> str:
        """Make and bind the socket: ipc, 0600, in the checked runtime dir."""
        sock = new_socket(zmq.ROUTER)
        sock.setsockopt(zmq.ROUTER_MANDATORY, 1)  # an unreachable peer raises, never vanishes
        sock.setsockopt(zmq.ROUTER_HANDOVER, 1)  # a reconnecting client keeps its identity
        sock.setsockopt(zmq.SNDHWM, PEER_SNDHWM)
        self.zsock = ZSocket(sock, self._on_message)
        endpoint = self.ptyd.ctx.paths.ipc_endpoint(
            contract.CONTRACT.actor, contract.ATTACH_STREAM_KIND
        )
        endpoints: list[str] = []
        try:
            self.endpoint = bind_endpoint(sock, endpoint, endpoints, self._ipc)
            self.local.bind()
        except BaseException:
            self.zsock.close()
            unlink_ipc(self._ipc)
            raise
        return self.endpoint

    async def run(self) -> None:
        """Serve the socket and detach silent peers, until cancelled."""
        assert self.zsock is not None, "bind() first"
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._sweep)
                nursery.start_soon(self.local.run)
                await self.zsock.run()
        finally:
            self.zsock.close()
            unlink_ipc(self._ipc)

    async def _sweep(self) -> None:
        """Every ``STREAM_PING_S`` while a stream client is attached; nothing at all
        while none is (issue 36: nothing wakes an idle tree)."""
        while True:
            if not self.peers:
                self._peer_came = trio.Event()
                await self._peer_came.wait()
            await trio.sleep(contract.STREAM_PING_S)
            now = time.monotonic()
            for peer in list(self.peers.values()):
                if now - peer.heard > contract.ATTACH_LEASE_S:
                    log.info(
                        "attach stream: detaching a silent client of %s", peer.session.session_id
                    )
                    self.detach(peer)
                elif peer.lagged and not peer.pending_screen:
                    peer.tell_position()

    # -- sending -------------------------------------------------------------------
    def send(self, peer: Peer, message: contract.FromPtyd) -> bool:
        """Send without waiting; False if the peer's queue is full or it went away."""
        return self._send_to(peer.rid, message, peer)

    def _send_to(self, rid: bytes, message: contract.FromPtyd, peer: Peer | None = None) -> bool:
        body = _encoder.encode(message)
        if rid.startswith(LOCAL_RID_PREFIX):  # a local connection (ZeroMQ's are 5 bytes)
            conn = self.local.conns.get(rid)
            if conn is None:
                return False
            if conn.send_frame(body):
                return True
            if conn.closed and peer is not None:
                self.detach(peer)  # the client went away (crash, Ctrl-], closed window)
            return False
        zsock = self.zsock
        if zsock is None or zsock.closed:
            return False
        try:
            if not self._in_callback:
                # From a session's reader or a task: the send may swallow the fd's edge,
                # so ZSocket services the socket after it (orca/actor/zsocket.py).
                return zsock.send_nowait([rid, body])
            # Inside the socket's own callback: ZSocket._service re-reads ZMQ_EVENTS
            # after it returns, so a plain send is safe (and nests no servicing).
            sock = zsock.sock
            try:
                sock.send(rid, _NOBLOCK_MORE)
            except zmq.Again:
                return False
            sock.send(body, _NOBLOCK)
            return True
        except zmq.ZMQError as exc:
            # Never raised into the output path (a session's reader): a send that
            # fails otherwise than "gone" is logged and counts as not delivered.
            if exc.errno != errno.EHOSTUNREACH:
                log.warning("attach stream: send failed (%s)", exc)
                return False
            if peer is not None:
                self.detach(peer)  # the client went away (crash, Ctrl-], closed window)
            return False

    def send_local(self, conn: LocalConn, message: contract.FromPtyd) -> bool:
        """Send to a local connection without waiting; False if refused or closed."""
        return not conn.closed and conn.send_frame(_encoder.encode(message))

    def _error(self, rid: bytes, code: str, message: str) -> None:
        self._send_to(rid, contract.StreamError(code=code, message=message), self.peers.get(rid))

    def repaint(self, peer: Peer) -> None:
        """Send the peer a redraw (formatted off the loop), then what followed it."""
        if peer.pending_screen:
            return
        peer.pending_screen = True
        self.ptyd.ctx.nursery.start_soon(self._send_screen, peer)

    async def _send_screen(self, peer: Peer) -> None:
        session = peer.session
        try:
            offset, data = await screen_snapshot(session, flat=peer.flat)
        except Exception:  # a model that cannot format must not end ptyd
            log.exception("attach stream: redraw of %s failed", session.session_id)
            offset, data = session.scrollback.end, b""
        peer.pending_screen = False
        if not peer.attached:
            return
        info = session.info
        screen = contract.StreamScreen(
            session_id=session.session_id,
            offset=offset,
            data=data,
            cols=info.cols,
            rows=info.rows,
            running=not session.exited.is_set(),
            exit_code=info.exit_code,
            output_ended=session.output_done.is_set(),
        )
        if self.send(peer, screen) and session.scrollback.end > offset:
            self._catch_up(peer, offset)
        if session.output_done.is_set() and session.exited.is_set():
            peer.ended(info.exit_code, session.scrollback.end)

    def _catch_up(self, peer: Peer, since: int) -> None:
        """Output since ``since`` (filtered by the client: its queries were answered)."""
        try:
            result = peer.session.read_since(since, MAX_CATCH_UP)
        except OffsetInFuture:
            result = Gap(since, peer.session.scrollback.end)
        if isinstance(result, Gap) or (peer.flat and SCREEN_SWITCH.search(result.data)):
            self.repaint(peer)  # trimmed, or a flat client would see a screen switch
        else:
            self.send(peer, contract.StreamOutput(offset=result.offset, data=result.data))

    # -- peers ------------------------------------------------------------------------
    def detach(self, peer: Peer) -> None:
        peer.attached = False
        self.peers.pop(peer.rid, None)
        try:
            peer.session.streams.remove(peer)
        except ValueError:
            pass

    def _attach(self, rid: bytes, hello: contract.StreamHello) -> None:
        old = self.peers.get(rid)
        if old is not None:
            self.detach(old)
        ended = self.ptyd.archived(hello.session_id)
        if ended is not None:  # known only from disk: its final screen, then its exit
            self._send_archived(rid, hello, ended)
            return
        try:
            session = self.ptyd.session(hello.session_id)
        except NotFound as exc:
            self._error(rid, exc.code, exc.message)
            return
        oldest = session.streams[0] if len(session.streams) >= MAX_ATTACHMENTS else None
        if isinstance(oldest, Peer):
            self.detach(oldest)  # bounded: the oldest attachment goes
        peer = Peer(self, rid, session, hello.flat)
        self.peers[rid] = peer
        self._peer_came.set()
        session.streams.append(peer)
        session.watcher_came()
        # Issue 12 (hooks helper): attaching is the user seeing the pane (unread ends).
        self.ptyd.hooks.pane_attached(session.info.pane_key)
        if hello.since is None:
            self.repaint(peer)
        else:
            self._catch_up(peer, hello.since)
            if session.output_done.is_set() and session.exited.is_set():
                peer.ended(session.info.exit_code, session.scrollback.end)

    def _send_archived(self, rid: bytes, hello: contract.StreamHello, ended: EndedSession) -> None:
        events = self.ptyd.ctx.events
        reply = self.ptyd.archive.attach_reply(ended, events.epoch, events.seq)
        # The archive's redraw keeps both screens; a flat client gets no switch (the
        # active screen is drawn last, over the primary, every cell).
        data = SCREEN_SWITCH.sub(b"", reply.data) if hello.flat else reply.data
        screen = contract.StreamScreen(
            session_id=reply.session_id,
            offset=reply.end,
            data=data,
            cols=ended.info.cols,
            rows=ended.info.rows,
            running=False,
            exit_code=reply.exit_code,
            output_ended=True,
        )
        self._send_to(rid, screen)
        self._send_to(rid, contract.StreamExit(exit_code=reply.exit_code, end_offset=reply.end))

    # -- receiving ------------------------------------------------------------------------
    def _on_message(self, frames: list[bytes]) -> None:
        if len(frames) != 2:
            self.refused += 1
            return  # not a DEALER's single-frame message: nothing to answer to
        rid, body = frames
        self._in_callback = True
        try:
            self._receive(rid, body)
        finally:
            self._in_callback = False

    def _on_local_frame(self, conn: LocalConn, body: bytes) -> None:
        self._receive(conn.rid, body, conn)

    def _on_local_end(self, conn: LocalConn) -> None:
        peer = self.peers.get(conn.rid)
        if peer is not None:
            self.detach(peer)
        handed = self.handed.get(conn.rid)
        if handed is not None:
            handed.session.release(handed, contract.RELEASED_BYE)

    def _receive(self, rid: bytes, body: bytes, conn: LocalConn | None = None) -> None:
        try:
            message = _decoder.decode(body)
        except BadRequest as exc:  # BadFrame, TooLarge
            self.refused += 1
            self._error(rid, BadRequest.code, exc.message)
            return
        try:
            if isinstance(message, contract.StreamHand) or rid in self.handed:
                self._handle_handed(rid, message, conn)
            else:
                self._handle(rid, message)
        except OrcaError as exc:
            self._error(rid, exc.code, exc.message)
        except Exception:  # a peer's message never ends ptyd
            log.exception("attach stream: handling %s failed", type(message).__name__)
            self._error(rid, "internal", "internal error (see ptyd's log)")

    def _write_unattached(self, session_id: str, data: bytes) -> None:
        """Keys from a client this ptyd does not know yet (it restarted under the client):
        typed all the same, so none is lost while the client attaches again."""
        try:
            session = self.ptyd.session(session_id)
            session.write_nowait(data)
        except (NotFound, InputBacklogFull, SessionEnded):
            return
        self.ptyd.hooks.pane_input(session.info.pane_key, session.info.terminal_handle)

    def _handle_handed(self, rid: bytes, message: contract.ToPtyd, conn: LocalConn | None) -> None:
        """A ``hand``, or a message from a client whose terminal ptyd holds (handed.py)."""
        if isinstance(message, contract.StreamHand):
            if conn is None:
                raise BadRequest("hand needs ptyd's Unix socket (it carries descriptors)")
            accept_hand(self, conn, message)
            return
        peer = self.handed[rid]
        session = peer.session
        if isinstance(message, contract.StreamResize):
            try:
                self.ptyd.resize_session(session, message.cols, message.rows)
            except SessionEnded as exc:
                raise map_session_errors(exc) from exc
        elif isinstance(message, contract.StreamBye):
            session.release(peer, contract.RELEASED_BYE)
        elif isinstance(message, contract.StreamPing):
            pass  # the connection is the lease
        else:
            raise BadRequest(f"{type(message).__name__} is not for a handed terminal")

    def _handle(self, rid: bytes, message: contract.ToPtyd) -> None:
        if isinstance(message, contract.StreamHello):
            self._attach(rid, message)
            return
        peer = self.peers.get(rid)
        if peer is None:
            if isinstance(message, contract.StreamInput) and message.session_id is not None:
                self._write_unattached(message.session_id, message.data)
            if not isinstance(message, contract.StreamBye):
                self._error(rid, contract.NOT_ATTACHED, "not attached: send hello")
            return
        now = time.monotonic()
        peer.heard = now
        session = peer.session
        if isinstance(message, contract.StreamInput):
            peer.typed_at = now
            try:
                session.write_nowait(message.data)
            except (InputBacklogFull, SessionEnded) as exc:
                raise map_session_errors(exc) from exc
            self.ptyd.hooks.pane_input(session.info.pane_key, session.info.terminal_handle)
        elif isinstance(message, contract.StreamResize):
            try:
                self.ptyd.resize_session(session, message.cols, message.rows)
            except SessionEnded as exc:
                raise map_session_errors(exc) from exc
        elif isinstance(message, contract.StreamRead):
            if not peer.pending_screen:
                self._catch_up(peer, message.since)
        elif isinstance(message, contract.StreamBye):
            self.detach(peer)
        elif session.output_done.is_set() and session.exited.is_set():
            # A ping: renews the peer; to a client of an ended session the exit is
            # repeated (the first one may have met a full queue).
            peer.ended(session.info.exit_code, session.scrollback.end)
