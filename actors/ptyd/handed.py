"""Handed terminals (issue 24): ``orca term attach`` gives ptyd its own terminal.

Essay: why the client hands its terminal over.

Through the attach stream a key costs two extra hops and a process: the CLI reads it,
sends it to ptyd, ptyd writes it to the PTY, reads the echo, sends it to the CLI, which
writes it to the terminal. tmux's client does none of that: it passes its terminal to
the server (SCM_RIGHTS on the server's Unix socket) and the server reads and writes it.
So does ours now: a ``hand`` message on ptyd's local socket (``local_stream.py``)
carries the client's stdin and stdout; ptyd opens the terminal afresh from them (its
own open file description, so its non-blocking mode is not the client's) and gives it
to the session's relay thread (``relay.py``), which draws the model's flat screen on
it, then the live output, and writes the keys it reads to the PTY. The client only
waits: it forwards window-size changes, and restores its terminal when ptyd says
``released`` or ``exit``, or when the connection ends (ptyd died: nobody reads the
terminal any more, so the client's restore cannot race a write of ours).

What the client did and ptyd does now: the detach key (the thread sees it in the keys),
query answering (a handed terminal is shown no query; the model answers), the flat
repaint on attach and after a screen switch, backpressure (a terminal that cannot keep
up is repainted, never waited for), the exit after the last output (``end_streams``).
Stream clients on the same session keep working as before.
"""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING

from actors.ptyd.local_stream import LocalConn
from actors.ptyd.relay import HandedTty
from actors.ptyd.session import MAX_ATTACHMENTS, Session, SessionEnded
from orca.contracts import ptyd as contract
from orca.wire.errors import BadRequest, Conflict

if TYPE_CHECKING:
    from actors.ptyd.stream import AttachStream

log = logging.getLogger(__name__)


class HandedPeer:
    """One handed terminal as the loop sees it: its client's connection and session."""

    def __init__(self, stream: AttachStream, conn: LocalConn, session: Session) -> None:
        self.stream = stream
        self.conn = conn
        self.rid = conn.rid
        self.session = session
        self.typed_at = time.monotonic()  # attach counts as typing until it types
        self.attached = True

    def typed(self) -> None:
        """The relay saw keys from this terminal (reported at most every 0.25 s)."""
        self.typed_at = time.monotonic()
        info = self.session.info
        self.stream.ptyd.hooks.pane_input(info.pane_key, info.terminal_handle)

    def released(self, reason: str) -> None:
        """ptyd no longer touches the terminal: the client may restore it."""
        self._forget()
        self.stream.send_local(self.conn, contract.StreamReleased(reason=reason))

    def ended(self, exit_code: int | None, end_offset: int) -> None:
        """The output is final and on the terminal: the client learns the exit code."""
        self._forget()
        if self in self.session.handed:
            self.session.handed.remove(self)
        self.stream.send_local(
            self.conn, contract.StreamExit(exit_code=exit_code, end_offset=end_offset)
        )

    def _forget(self) -> None:
        self.attached = False
        if self.stream.handed.get(self.rid) is self:
            del self.stream.handed[self.rid]


def open_handed_terminal(fds: list[int]) -> int:
    """A descriptor of the terminal ``fds`` (the client's stdin and stdout) name, ours
    alone: opened afresh, non-blocking, not our controlling terminal. Closes ``fds``.

    Raises BadRequest unless they are exactly two descriptors of one terminal.
    """
    try:
        if len(fds) != contract.HAND_FDS:
            raise BadRequest(
                f"a hand carries the client's stdin and stdout ({len(fds)} descriptors came)"
            )
        if not all(os.isatty(fd) for fd in fds):
            raise BadRequest("the descriptors handed are not terminals")
        stdin, stdout = (os.fstat(fd) for fd in fds)
        if stdin.st_rdev != stdout.st_rdev:
            raise BadRequest("stdin and stdout are not the same terminal")
        flags = os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            return os.open(f"/proc/self/fd/{fds[1]}", flags)
        except OSError:
            # No /proc, or the device refuses a new open: share the client's own
            # description (non-blocking now; the client makes it blocking again).
            fd = os.dup(fds[1])
            os.set_blocking(fd, False)
            return fd
    finally:
        for fd in fds:
            os.close(fd)


def accept_hand(stream: AttachStream, conn: LocalConn, hand: contract.StreamHand) -> None:
    """Take the terminal a ``hand`` brought (its descriptors on ``conn``) to its session.

    Raises BadRequest (not two descriptors of one terminal), NotFound (no such
    session), Conflict (the session has ended: the stream attach shows its end).
    """
    fds = conn.take_fds()
    old = stream.handed.get(conn.rid)
    if old is not None:
        old.session.release(old, contract.RELEASED_BYE)
    try:
        session = stream.ptyd.session(hand.session_id)
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    if session.output_done.is_set():
        for fd in fds:
            os.close(fd)
        raise Conflict(f"session {session.session_id} has ended")
    tty_fd = open_handed_terminal(fds)
    if hand.cols is not None and hand.rows is not None:
        try:  # before the screen is drawn: it is drawn at the terminal's size
            stream.ptyd.resize_session(session, hand.cols, hand.rows)
        except SessionEnded:
            pass
    if len(session.handed) >= MAX_ATTACHMENTS:
        oldest = session.handed[0]
        session.release(oldest, contract.RELEASED_BYE)  # bounded: the oldest goes
    peer = HandedPeer(stream, conn, session)
    stream.handed[conn.rid] = peer
    info = session.info
    stream.send_local(
        conn, contract.StreamHanded(session_id=session.session_id, cols=info.cols, rows=info.rows)
    )
    session.hand(peer, HandedTty(peer, tty_fd, hand.detach_key))
    stream.ptyd.hooks.pane_attached(info.pane_key)  # attaching is the user seeing the pane
