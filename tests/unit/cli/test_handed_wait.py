"""``orca term attach``'s wait on a handed terminal (orca/cli/term_handed._wait)."""

from __future__ import annotations

import os
import pty
import socket
import threading

from orca.cli.term_handed import _wait
from orca.client.handed import _HEADER, HandedTerminal, _encoder
from orca.contracts import ptyd


def _frame(message: ptyd.FromPtyd) -> bytes:
    body = _encoder.encode(message)
    return _HEADER.pack(len(body)) + body


def test_a_release_read_with_the_hands_answer_ends_the_wait() -> None:
    """A detach key typed at once: ptyd's ``released`` came in the same read as its
    ``handed`` answer (under load, one run in five of test_term_cli). The wait acts on
    it, where it used to poll the now empty socket for good."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    master, tty = pty.openpty()
    wake_r, wake_w = os.pipe()
    link = HandedTerminal(ours)
    try:
        theirs.sendall(
            _frame(ptyd.StreamHanded(session_id="s", cols=80, rows=24))
            + _frame(ptyd.StreamReleased(reason=ptyd.RELEASED_DETACHED))
        )
        assert isinstance(link.next_message(5), ptyd.StreamHanded)  # one read took both
        outcome: list[str] = []
        waiter = threading.Thread(
            target=lambda: outcome.append(_wait(link, wake_r, [False], tty)), daemon=True
        )
        waiter.start()
        waiter.join(5)
        assert outcome == ["detached"], "the wait never saw the release it had read"
    finally:
        os.write(wake_w, b"x")  # (a stuck wait polls this too)
        theirs.close()
        link.close()
        for fd in (master, tty, wake_r, wake_w):
            os.close(fd)
