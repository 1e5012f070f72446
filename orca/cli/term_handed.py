"""``orca term attach`` with the terminal handed to ptyd (issue 24; tmux's shape).

This process puts its terminal in raw mode and in an outer alternate screen, hands it
to ptyd (``orca.client.handed``) and then only waits: a window-size change is sent as
``resize``; ``released`` or ``exit`` ends the attachment; the connection's end means ptyd
died. In every case the terminal is restored here, once ptyd no longer touches it:
after ``released``/``exit`` (ptyd wrote its last byte before saying so), after a
``bye`` it answered (SIGTERM, SIGHUP), or at once when ptyd is gone. After ptyd's death
the user's terminal is given back (cooked, primary screen) while this waits for ptyd
to come back, then the attach resumes: raw again, handed again, the screen redrawn.
"""

from __future__ import annotations

import os
import signal
import termios
import time
import tty
from typing import Any

from orca.client.handed import HandedTerminal, PtydGone
from orca.contracts import ptyd
from orca.model.vt import ENTER_ALTERNATE_SCREEN, RESTORE_USER_TERMINAL
from orca.paths import OrcaPaths, resolve_paths
from orca.pipes import drain
from orca.wire.errors import NotFound, OrcaError, Unavailable

# How often a client whose ptyd died tries to reach the next one.
RECONNECT_S = 0.1
_LOST = "lost"  # (not a reason: the link to ptyd ended)


def attach_handed(session_id: str, stdin: int, stdout: int) -> str | None:
    """Attach with the terminal handed to ptyd; how it ended (for the user), or None
    if ptyd would not take the terminal (the caller attaches over the stream).
    Raises NotFound (no such session), Unavailable (ptyd is not running)."""
    paths = resolve_paths()
    saved = termios.tcgetattr(stdin)
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    resized = [False]

    def on_resize(_signum: int, _frame: object) -> None:
        resized[0] = True

    def end_attachment(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)  # unwinds through the finally below

    old_wakeup = signal.set_wakeup_fd(wake_w)  # a signal wakes the poll below
    old_winch = signal.signal(signal.SIGWINCH, on_resize)
    old_term = signal.signal(signal.SIGTERM, end_attachment)
    old_hup = signal.signal(signal.SIGHUP, end_attachment)
    link: HandedTerminal | None = HandedTerminal.connect(paths)
    handed = False
    try:
        while True:
            assert link is not None
            tty.setraw(stdin)
            handed = True
            _write_all(stdout, ENTER_ALTERNATE_SCREEN)
            size = os.get_terminal_size(stdout)
            try:
                link.hand(session_id, stdin, stdout, size.columns, size.lines)
                outcome = _wait(link, wake_r, resized, stdout)
            except PtydGone:
                outcome = _LOST
            except NotFound:
                raise
            except OrcaError:  # a ptyd that does not take terminals; an ended session
                return None
            if outcome != _LOST:
                return outcome
            # ptyd died: nobody touches the terminal now. Give it back while we wait.
            restore_terminal(stdin, stdout, saved)
            handed = False
            _write_all(
                stdout, b"\r\n[ptyd went away; attaching again once it is back (Ctrl-C gives up)]"
            )
            link.wait_ptyd_exited()  # (not its dying listener again)
            link.close()
            link = None
            link = _wait_for_ptyd(paths, wake_r)
    except KeyboardInterrupt:
        return "gave up waiting for ptyd"
    except SystemExit as exc:
        if link is not None and handed:
            link.bye()  # ptyd lets go of the terminal before it is restored
        return f"ended by signal {int(exc.code or 0) - 128}"
    finally:
        if handed:
            restore_terminal(stdin, stdout, saved)
        if link is not None:
            link.close()
        signal.signal(signal.SIGWINCH, old_winch)
        signal.signal(signal.SIGTERM, old_term)
        signal.signal(signal.SIGHUP, old_hup)
        signal.set_wakeup_fd(old_wakeup)
        os.close(wake_r)
        os.close(wake_w)


def _wait(link: HandedTerminal, wake_r: int, resized: list[bool], stdout: int) -> str:
    """Until ptyd lets go of the terminal: the reason, or ``_LOST``."""
    import select

    poller = select.poll()
    poller.register(link.fileno(), select.POLLIN)
    poller.register(wake_r, select.POLLIN)
    while True:
        # What was read already first: the hand's own read may have taken ptyd's next
        # messages with its answer (a key that detaches at once, under load: the attach
        # then waited on an empty socket for good, test_term_cli).
        while (message := link.take_message()) is not None:
            if isinstance(message, ptyd.StreamReleased):
                if message.reason == ptyd.RELEASED_DETACHED:
                    return "detached"
                return f"detached ({message.reason.replace('_', ' ')})"
            if isinstance(message, ptyd.StreamExit):
                return f"exited {message.exit_code}"
            if isinstance(message, ptyd.StreamError):
                return f"error: {message.message}"
        if resized[0]:
            resized[0] = False
            size = os.get_terminal_size(stdout)
            link.send(ptyd.StreamResize(cols=size.columns, rows=size.lines))
        for fd, _events in poller.poll():
            if fd == wake_r:
                drain(wake_r)
            else:
                link.receive()


def _wait_for_ptyd(paths: OrcaPaths, wake_r: int) -> HandedTerminal:
    """Connect once ptyd is back (its supervisor restarts it); Ctrl-C gives up."""
    while True:
        try:
            return HandedTerminal.connect(paths)
        except Unavailable:
            time.sleep(RECONNECT_S)
            drain(wake_r)


def restore_terminal(stdin: int, stdout: int, saved: list[Any]) -> None:
    """Leave the outer alternate screen, reset the modes, restore the tty's settings."""
    for fd in (stdin, stdout):
        try:
            os.set_blocking(fd, True)  # (ptyd may have shared our description)
        except OSError:
            pass
    try:
        # ptyd killed in the middle of a write (or an agent's output relayed as it came)
        # may have left a sequence or a string open, which would swallow the restoring
        # sequences: CAN ends a sequence (and, in most terminals, a string), ST ends a
        # string where CAN does not (tmux 3.3 stays in a DCS string through CAN: the
        # pane stayed on the alternate screen, issue 39); in the ground state both are
        # no-ops.
        _write_all(stdout, END_OPEN_SEQUENCE + RESTORE_USER_TERMINAL)
        termios.tcsetattr(stdin, termios.TCSADRAIN, saved)
    except (OSError, termios.error):
        pass  # the terminal is gone (hang-up): nothing left to restore


# CAN, then ST (ESC \\): whatever a killed writer left open is closed.
END_OPEN_SEQUENCE = b"\x18\x1b\\"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
