"""The relay thread of handed terminals (issue 24): a keystroke's echo without a trio turn.

Essay: why a thread, and what it may touch.

``orca term attach`` hands ptyd its own terminal (``handed.py``), as tmux's client
does with its server, so a key no longer travels through a client process: ptyd reads
it from the user's terminal, writes it to the PTY, reads the echo and writes it back.
Measured (``bench/pty.py``), the trio loop is still too slow for that last part: the
echo waits for the loop's turn behind every other session's batch, the model feed and
the scrollback. So while a session has handed terminals, one thread of its own holds
the hot loop: ``poll`` on the master, the handed ttys and a wake pipe; tty readable ->
``write(master)``; master readable -> take the batch (splice, journal, OSC scan: the
reader's own code, :meth:`Session.take_raw`) -> ``write(tty)`` -> queue the batch for
the loop, which feeds the model, the scrollback and every other client after the echo
is on the screen (a batch of them per turn).

The thread's poll and its two hot moves (keys -> master; a plain batch -> journal ->
the terminals) are one C call without the GIL where it is built (``_relaystep.c``,
docs/protocols.md §4a): measured, the Python step's ~30 us a key and its GIL turns
were what kept the echo behind tmux's. What the step does not do it hands back, and
the thread's Python below does it (and accounts what the step did) as before.

Invariants:

* one reader of the master at a time: the session's reader task starts the relay
  between two batches and waits for it to end (``Session._read_output``); the thread
  touches the master, the pipe, the journal's segment files and the OSC scanner, the
  loop everything else (model, scrollback, subscribers, sockets);
* the loop's batches keep the thread's order, and a repaint is asked for *in* that
  order: its snapshot is taken when the loop has taken in exactly the batches before
  the request, and the thread holds back what it read after it, so a screen plus what
  follows it is the stream, no byte twice or missing;
* nothing waits for a terminal: writes are non-blocking, a tty that owes more than
  ``OUT_LIMIT`` is dropped to a repaint once it can take bytes again; nothing waits for
  the loop either: beyond ``PENDING_LIMIT`` of queued output the master is simply not
  read (the PTY then holds the child, as a slow reader always did);
* a terminal is told ``released`` only after the thread wrote its last byte to it and
  closed its descriptor (the thread posts the release, the loop sends it).
"""

from __future__ import annotations

import errno
import logging
import os
import select
import threading
import time
from collections import deque
from typing import TYPE_CHECKING

import trio

from actors.ptyd.terminal_model import CLEAR_SCREEN, SCREEN_SWITCH, TerminalModel
from orca.contracts.ptyd import RELEASED_CLOSED, RELEASED_DETACHED, RELEASED_TTY_CLOSED
from orca.model.vt import QueryFilter, ends_inside_sequence

if TYPE_CHECKING:
    from actors.ptyd._relaystep import Step as NativeStep
    from actors.ptyd.handed import HandedPeer
    from actors.ptyd.session import Session

try:  # the hot step in C (setup.py builds it where a compiler is; see _relaystep.c)
    from actors.ptyd import _relaystep
except ImportError:  # pragma: no cover - an install without a compiler
    _relaystep = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

# ``0`` runs the relay's Python step even where the native one is built (tests, bench).
NATIVE_ENV = "ORCA_PTYD_NATIVE_RELAY"

# Not a reason a client is told: the session's output ended; the client stays attached
# until ``end_streams`` tells it the exit code.
RELEASED_OUTPUT_ENDED = "output_ended"
# Bytes a terminal may owe (written to it, not taken yet) before it is repainted from
# the model instead: a terminal that slow is shown the screen, not the history.
OUT_LIMIT = 1024 * 1024
# A terminal owing more than this holds the master's reading back (the PTY then holds
# the child, as a slow reader does), for at most ``STALL_S`` at a time: a terminal that
# merely lags a flood gets every byte, one that stalls is repainted after OUT_LIMIT.
OUT_SOFT = 256 * 1024
STALL_S = 0.5
# Output held back for a terminal while its screen is formatted, at most.
HELD_LIMIT = 4 * 1024 * 1024
# Scanned output queued for the loop before the master is no longer read.
PENDING_LIMIT = 1024 * 1024
# The loop is woken for queued output once the output paused this long, and at most
# ``WAKE_LATEST_S`` after the first of it (at once beyond ``WAKE_BYTES``): while keys
# come and go the loop sleeps, so its turns (model feed, scrollback, the PUB event:
# ~150 us of GIL a turn, measured) do not come between a key and its echo; what queued
# meanwhile is taken in one turn, as one chunk.
WAKE_QUIET_S = 0.002
WAKE_LATEST_S = 0.025
WAKE_BYTES = 64 * 1024
# Keys the PTY has not taken yet before the handed terminals are no longer read.
INPUT_LIMIT = 4 * 1024 * 1024
KEY_READ = 4096
# The loop hears that a terminal typed (hooks' pane_input) at most this often.
TYPED_EVERY_S = 0.25
# At the output's end, what terminals still owe gets this long to be written.
FLUSH_AT_END_S = 1.0
# A repaint starts with CAN (abandons a sequence a dropped write left half done).
REPAINT_PREFIX = b"\x18" + CLEAR_SCREEN

_IN = select.POLLIN
_OUT = select.POLLOUT
_INPUT_EVENTS = select.POLLIN | select.POLLHUP | select.POLLERR
_LIVE, _AWAITING, _LAGGED = "live", "awaiting", "lagged"


class HandedTty:
    """The thread's side of one handed terminal (its descriptor is the thread's once
    added; ``close`` is idempotent)."""

    def __init__(self, peer: HandedPeer, fd: int, detach_key: bytes) -> None:
        self.peer = peer
        self.fd = fd
        self.detach_key = detach_key
        self.out = bytearray()  # written, not taken by the terminal yet
        self.queries = QueryFilter()
        self.state = _AWAITING  # a screen first
        self.serial = 0  # of the repaint asked for last
        self.held: list[bytes] = []
        self.held_bytes = 0
        self.typed_posted = 0.0

    def close(self) -> None:
        if self.fd >= 0:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = -1


class Relay:
    """One session's relay thread and its two queues (commands in, items out)."""

    def __init__(self, session: Session, token: trio.lowlevel.TrioToken) -> None:
        self._session = session
        self._token = token
        self._lock = threading.Lock()
        # Under the lock: loop -> thread commands; thread -> loop items.
        self._commands: deque[tuple[object, ...]] = deque()
        self._items: list[tuple[object, ...]] = []
        self._pending = 0  # output bytes in _items
        self._throttled = False  # the thread stopped reading the master (PENDING_LIMIT)
        self._leaving = False  # the thread takes no more terminals
        self._finished = False  # the thread holds no terminal any more
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        self._wakeup = trio.Event()
        self.ended = False
        # The thread's own.
        self._ttys: dict[int, HandedTty] = {}
        self._input = bytearray()
        self._stop = False
        self._tail = b""  # the end of the last batch when it ended inside a sequence
        self._wake_due: float | None = None  # when queued output must reach the loop
        self._wake_by = 0.0  # and when at the latest (WAKE_LATEST_S after the first)
        self._dirty = True  # what to poll for changed (a transition off the hot path)
        self._stall_until: float | None = None  # reading held back for a slow terminal
        self._live: list[HandedTty] = []  # the native step writes plain text to these

    # -- the loop's side ----------------------------------------------------------------
    def add(self, tty: HandedTty) -> bool:
        """Give the thread a terminal; False if it is on its way out (start another)."""
        with self._lock:
            if self._leaving:
                return False
            self._commands.append(("add", tty))
        self._wake_thread()
        return True

    def drop(self, peer: HandedPeer, reason: str) -> bool:
        """Ask the thread to let go of ``peer``'s terminal; False if it holds none."""
        with self._lock:
            if self._finished:
                return False
            self._commands.append(("drop", peer, reason))
        self._wake_thread()
        return True

    async def serve(self) -> bool:
        """Run the thread and take in what it reads until it ends; True if the output did."""
        thread = threading.Thread(target=self._run, name="ptyd relay", daemon=True)
        thread.start()
        try:
            async with trio.open_nursery() as nursery:
                while True:
                    await self._wakeup.wait()
                    self._wakeup = trio.Event()
                    if self._take_in(self._take(), nursery):
                        nursery.cancel_scope.cancel()
                        break
                    await trio.lowlevel.checkpoint()
        finally:
            if thread.is_alive():
                with self._lock:
                    self._commands.append(("stop",))
                self._wake_thread()
                thread.join(5.0)
            for fd in (self._wake_r, self._wake_w):
                os.close(fd)
        return self.ended

    def _take(self) -> list[tuple[object, ...]]:
        with self._lock:
            items, self._items = self._items, []
            self._pending = 0
            resume, self._throttled = self._throttled, False
        if resume:
            self._wake_thread()
        return items

    def _take_in(self, items: list[tuple[object, ...]], nursery: trio.Nursery) -> bool:
        session = self._session
        outputs: list[bytes] = []  # consecutive batches, published as one chunk
        for item in items:
            kind = item[0]
            if kind == "output":
                output, payloads = item[1], item[2]
                assert isinstance(output, bytes) and isinstance(payloads, list)
                outputs.append(output)
                if payloads:  # a batch's payloads after its output, before what follows
                    session.take_in(b"".join(outputs), payloads)
                    outputs.clear()
                continue
            if outputs:
                session.take_in(b"".join(outputs), [])
                outputs.clear()
            if kind == "repaint":
                tty, serial = item[1], item[2]
                assert isinstance(tty, HandedTty) and isinstance(serial, int)
                self._repaint(tty, serial, nursery)
            elif kind == "released":
                peer, reason = item[1], item[2]
                assert isinstance(reason, str)
                session.handed_released(peer, reason)  # type: ignore[arg-type]
            elif kind == "typed":
                item[1].typed()  # type: ignore[attr-defined]
            elif kind == "done":
                return True
        if outputs:
            session.take_in(b"".join(outputs), [])
        return False

    def _repaint(self, tty: HandedTty, serial: int, nursery: trio.Nursery) -> None:
        """The screen as of the request (every batch before it is in the model): taken
        now, formatted off the loop when a checkpoint can be taken (as ``stream.py``)."""
        model = self._session.model
        data = model.checkpoint()
        if data is None:  # inside a sequence: the live model formats it
            self._send_screen(tty, serial, model.snapshot(flat=True))
            return

        def format_copy() -> bytes:
            copy = TerminalModel.restore(data)
            try:
                return copy.snapshot(flat=True)
            finally:
                copy.close()

        async def format_and_send() -> None:
            try:
                screen = await trio.to_thread.run_sync(format_copy)
            except Exception:  # a model that cannot format must not end ptyd
                log.exception("relay: redraw of %s failed", self._session.session_id)
                screen = b""
            self._send_screen(tty, serial, screen)

        nursery.start_soon(format_and_send)

    def _send_screen(self, tty: HandedTty, serial: int, screen: bytes) -> None:
        with self._lock:
            self._commands.append(("screen", tty, serial, screen))
        self._wake_thread()

    def _wake(self) -> None:  # run by the loop (run_sync_soon)
        self._wakeup.set()

    def _wake_thread(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except (BlockingIOError, OSError):
            pass  # full: the thread is woken already (or gone)

    # -- the thread -----------------------------------------------------------------------
    def _post(self, item: tuple[object, ...], size: int = 0, *, soon: bool = False) -> None:
        """Queue an item for the loop; ``soon``: it may wait for a pause (output)."""
        with self._lock:
            first = not self._items
            self._items.append(item)
            self._pending += size
            pending = self._pending
            if pending >= PENDING_LIMIT:
                self._throttled = True
                self._dirty = True
        if soon and pending < WAKE_BYTES:
            now = time.monotonic()
            if first or self._wake_due is None:
                self._wake_by = now + WAKE_LATEST_S
            self._wake_due = min(now + WAKE_QUIET_S, self._wake_by)
            return
        self._wake_loop()

    def _wake_loop(self) -> None:
        self._wake_due = None
        try:
            self._token.run_sync_soon(self._wake)
        except trio.RunFinishedError:
            pass

    def _run(self) -> None:
        ended = False
        try:
            ended = self._loop()
        except Exception:  # the loop's reader takes over again (and meets it, if lasting)
            log.exception("relay of %s failed", self._session.session_id)
        finally:
            self._finish(ended)

    def _native_step(self) -> NativeStep | None:
        if _relaystep is None or os.environ.get(NATIVE_ENV) == "0":
            return None
        session = self._session
        if session.pipe is None:
            return None
        pipe_r, pipe_w = session.pipe
        return _relaystep.Step(
            session.master_fd, pipe_r, pipe_w, session.read_size, session.small_read
        )

    def _loop(self) -> bool:
        master = self._session.master_fd
        poller = select.poll()
        masks: dict[int, int] = {}
        native = self._native_step()
        while True:
            if self._commands:
                self._run_commands()
                self._dirty = True
            if self._stop:
                return False
            if not self._ttys:
                with self._lock:
                    if not self._commands:
                        self._leaving = True
                        return False
                continue
            if self._dirty:
                self._dirty = False
                self._update_masks(poller, masks, master)
                if native is not None:
                    self._watch(native, masks)
            due = self._wake_due
            stall = self._stall_until
            until = due if stall is None else stall if due is None else min(due, stall)
            timeout = None if until is None else max(0, int((until - time.monotonic()) * 1000) + 1)
            if stall is not None and time.monotonic() >= stall:
                self._dirty = True  # the stall is over: read the master again
            if native is None:
                ready = poller.poll(timeout)
                idle = not ready
            else:
                ready, idle, ended = self._native(native, -1 if timeout is None else timeout)
                if ended:
                    return True
            if due is not None and (idle or time.monotonic() >= due):
                self._wake_loop()
            for fd, events in ready:
                if fd == master:
                    if events & _OUT:
                        self._write_input()
                    if events & _INPUT_EVENTS and self._read_master():
                        return True
                elif fd == self._wake_r:
                    self._dirty = True  # (the loop took queued output: maybe unthrottled)
                    try:
                        os.read(fd, 4096)
                    except BlockingIOError:
                        pass
                else:
                    handed = self._ttys.get(fd)
                    if handed is None:
                        continue
                    if events & _OUT:
                        self._flush(handed)
                    if events & _INPUT_EVENTS and handed.fd >= 0:
                        self._read_keys(handed)

    def _watch(self, native: NativeStep, masks: dict[int, int]) -> None:
        """What the native step polls, writes plain text to and reads keys of (redone
        with the masks): terminals shown live that owe nothing and hold no query."""
        self._live = [
            t for t in self._ttys.values() if t.state is _LIVE and not t.out and t.queries.idle
        ]
        keys = [(t.fd, t.detach_key) for t in self._ttys.values() if masks.get(t.fd, 0) & _IN]
        native.watch(list(masks.items()), [t.fd for t in self._live], keys)

    def _native(self, native: NativeStep, timeout: int) -> tuple[list[tuple[int, int]], bool, bool]:
        """One native step: its poll events left for the Python step, whether it timed
        out with nothing done, whether the output ended. What it did (keys typed, a
        batch journaled and written) is accounted here as the Python step would have."""
        session = self._session
        target = session.native_target()
        plain = target is not None and session.scanner.at_boundary and not self._tail
        fd, offset = target if target is not None else (-1, 0)
        events, batch, written, typed, ended, pipe_left, keys, unread = native.step(
            timeout, fd, offset, plain, not self._input
        )
        if batch or pipe_left or ended or unread:
            raw = session.took_native(batch, pipe_left, ended, unread)
            self._took(raw, written)
        for fd in typed:
            tty = self._ttys.get(fd)
            if tty is not None:
                self._typed(tty)
        for fd, data, left in keys:
            tty = self._ttys.get(fd)
            if left:
                self._input += data  # detach key looked for already: for the master
                self._dirty = True
            elif tty is not None:
                self._keys(tty, data)
        idle = not (events or batch or pipe_left or typed or keys or unread)
        return events, idle, ended

    def _update_masks(self, poller: select.poll, masks: dict[int, int], master: int) -> None:
        """Poll what can be acted on now (recomputed only when that changed: ``_dirty``)."""
        want = {self._wake_r: _IN}
        with self._lock:
            throttled = self._throttled
        owing = any(len(t.out) > OUT_SOFT for t in self._ttys.values())
        if not owing:
            self._stall_until = None
        elif self._stall_until is None:
            self._stall_until = time.monotonic() + STALL_S
        stalled = owing and time.monotonic() < (self._stall_until or 0.0)
        mask = (0 if throttled or stalled else _IN) | (_OUT if self._input else 0)
        if mask:
            want[master] = mask
        keys = _IN if len(self._input) < INPUT_LIMIT else 0
        for fd, tty in self._ttys.items():
            want[fd] = keys | (_OUT if tty.out or tty.state is _LAGGED else 0)
        for fd in [fd for fd in masks if fd not in want]:
            poller.unregister(fd)
            del masks[fd]
        for fd, mask in want.items():
            if masks.get(fd) != mask:
                poller.register(fd, mask)
                masks[fd] = mask

    def _finish(self, ended: bool) -> None:
        if ended:
            self._flush_all(time.monotonic() + FLUSH_AT_END_S)
        reason = RELEASED_OUTPUT_ENDED if ended else RELEASED_CLOSED
        with self._lock:
            self._leaving = True
            commands = list(self._commands)
            self._commands.clear()
        for command in commands:  # terminals given after the end: never shown anything
            if command[0] == "add":
                tty = command[1]
                assert isinstance(tty, HandedTty)
                self._ttys[tty.fd] = tty
        for tty in list(self._ttys.values()):
            self._release(tty, reason)
        self.ended = ended
        with self._lock:
            self._finished = True
        self._post(("done",))

    def _run_commands(self) -> None:
        with self._lock:
            if not self._commands:
                return
            commands = list(self._commands)
            self._commands.clear()
        for command in commands:
            kind = command[0]
            if kind == "add":
                tty = command[1]
                assert isinstance(tty, HandedTty)
                self._ttys[tty.fd] = tty
                self._ask_repaint(tty)
            elif kind == "drop":
                for tty in list(self._ttys.values()):
                    if tty.peer is command[1]:
                        self._release(tty, str(command[2]))
            elif kind == "screen":
                tty, serial, screen = command[1], command[2], command[3]
                assert isinstance(tty, HandedTty) and isinstance(screen, bytes)
                if tty.fd in self._ttys and tty.serial == serial and tty.state is _AWAITING:
                    self._show_screen(tty, screen)
            elif kind == "stop":
                self._stop = True

    # -- output ---------------------------------------------------------------------------
    def _read_master(self) -> bool:
        """One batch: to the terminals first, then queued for the loop. True at the end."""
        raw, ended = self._session.take_raw()
        if raw:
            self._took(raw)
        return ended

    def _took(self, raw: bytes, written: tuple[int, ...] | None = None) -> None:
        """A journaled batch: scanned, delivered (``written``: what the native step wrote
        of it to each of ``_live``), queued for the loop."""
        output, payloads = self._session.scan(raw)
        if written is not None:
            repaint = self._delivered(output, written)
        else:
            repaint = self._deliver(output) if output else []
        if output or payloads:
            self._post(("output", output, payloads), len(output), soon=not payloads)
        for tty in repaint:  # after the batch: its snapshot shows the batch
            self._ask_repaint(tty)

    def _delivered(self, output: bytes, written: tuple[int, ...]) -> list[HandedTty]:
        """Plain text the native step wrote to ``_live``: what they did not take is owed;
        every other terminal gets it as ``_deliver`` gives it."""
        for tty, count in zip(self._live, written, strict=True):
            if tty.fd < 0 or tty.state is not _LIVE:
                continue
            if count < 0:
                self._release(tty, RELEASED_TTY_CLOSED)
            elif count < len(output):
                self._owe(tty, output[count:])
        live = {id(t) for t in self._live}
        rest = [t for t in self._ttys.values() if id(t) not in live]
        return self._deliver(output, rest) if rest else []

    def _deliver(self, output: bytes, ttys: list[HandedTty] | None = None) -> list[HandedTty]:
        """Write ``output`` to every live terminal (of ``ttys``); the ones to repaint
        instead."""
        if b"\x1b" in output:
            self._dirty = True  # a query filter may hold a sequence now (_watch)
            switched = SCREEN_SWITCH.search(self._tail + output) is not None
            inside = ends_inside_sequence(output)
            self._tail = output[output.rfind(b"\x1b") :] if inside else b""
        elif self._tail:
            switched = SCREEN_SWITCH.search(self._tail + output) is not None
            self._tail = b""
        else:
            switched = False  # plain text (a keystroke's echo)
        repaint: list[HandedTty] = []
        for tty in list(self._ttys.values()) if ttys is None else ttys:
            if tty.state is _LIVE:
                if switched:  # a flat terminal is shown the new screen, redrawn
                    repaint.append(tty)
                else:
                    self._write(tty, tty.queries.feed(output))
            elif tty.state is _AWAITING:
                if tty.held_bytes + len(output) > HELD_LIMIT:
                    repaint.append(tty)  # a later screen instead
                else:
                    tty.held.append(output)
                    tty.held_bytes += len(output)
        return repaint

    def _ask_repaint(self, tty: HandedTty) -> None:
        self._dirty = True
        tty.serial += 1
        tty.state = _AWAITING
        tty.held.clear()
        tty.held_bytes = 0
        self._post(("repaint", tty, tty.serial))

    def _show_screen(self, tty: HandedTty, screen: bytes) -> None:
        held, tty.held, tty.held_bytes = tty.held, [], 0
        tty.state = _LIVE
        tty.queries = QueryFilter()
        self._write(tty, REPAINT_PREFIX + screen)
        for output in held:
            if tty.state is not _LIVE:
                break
            self._write(tty, tty.queries.feed(output))

    def _write(self, tty: HandedTty, data: bytes) -> None:
        if not data or tty.fd < 0:
            return
        if tty.out:  # behind what it owes already
            self._owe(tty, data)
            return
        try:
            written = os.write(tty.fd, data)
        except BlockingIOError:
            written = 0
        except OSError:
            self._release(tty, RELEASED_TTY_CLOSED)
            return
        if written < len(data):
            self._owe(tty, data[written:])

    def _owe(self, tty: HandedTty, data: bytes) -> None:
        """``data`` is for ``tty`` once it can take bytes again."""
        before = len(tty.out)
        tty.out += data
        # What to poll changes as it starts to owe (POLLOUT; off ``_live``), owes enough
        # to hold the master's reading back (_update_masks), or lags to a repaint.
        if not before or before <= OUT_SOFT < len(tty.out):
            self._dirty = True
        if len(tty.out) > OUT_LIMIT:  # the terminal is shown the screen once it can take it
            tty.out.clear()
            tty.state = _LAGGED
            self._dirty = True

    def _flush(self, tty: HandedTty) -> None:
        """Write what the terminal owes, as much as it takes now."""
        if not tty.out:
            self._dirty = True
            if tty.state is _LAGGED:
                self._ask_repaint(tty)
            return
        owed = len(tty.out)
        taken = 0
        with memoryview(tty.out) as view:
            while taken < owed:
                try:
                    written = os.write(tty.fd, view[taken:])
                except BlockingIOError:
                    break
                except OSError:
                    taken = -1
                    break
                if not written:
                    break
                taken += written
        if taken < 0:
            self._release(tty, RELEASED_TTY_CLOSED)
            return
        del tty.out[:taken]
        if owed > OUT_SOFT >= len(tty.out) or not tty.out:
            self._dirty = True  # the master may be read again; no POLLOUT needed

    def _flush_all(self, deadline: float) -> None:
        """What the terminals owe at the output's end, within ``deadline``."""
        while True:
            owing = [t for t in self._ttys.values() if t.out and t.fd >= 0]
            left = deadline - time.monotonic()
            if not owing or left <= 0:
                return
            poller = select.poll()
            for tty in owing:
                poller.register(tty.fd, _OUT)
            for fd, _events in poller.poll(int(left * 1000) + 1):
                ready = self._ttys.get(fd)
                if ready is not None:
                    self._flush(ready)

    def _release(self, tty: HandedTty, reason: str) -> None:
        if tty.fd < 0:
            return  # released already
        self._ttys.pop(tty.fd, None)
        tty.close()
        self._dirty = True
        self._post(("released", tty.peer, reason))

    # -- input ----------------------------------------------------------------------------
    def _read_keys(self, tty: HandedTty) -> None:
        try:
            keys = os.read(tty.fd, KEY_READ)
        except BlockingIOError:
            return
        except OSError:
            keys = b""
        self._keys(tty, keys)

    def _keys(self, tty: HandedTty, keys: bytes) -> None:
        """Keys read from ``tty`` (empty: it ended): to the master, up to a detach key."""
        if not keys:
            self._release(tty, RELEASED_TTY_CLOSED)
            return
        cut = keys.find(tty.detach_key)
        if cut != -1:
            self._type(keys[:cut])
            self._release(tty, RELEASED_DETACHED)
            return
        self._type(keys)
        self._typed(tty)

    def _typed(self, tty: HandedTty) -> None:
        now = time.monotonic()
        if now - tty.typed_posted >= TYPED_EVERY_S:
            tty.typed_posted = now
            self._post(("typed", tty.peer))

    def _type(self, keys: bytes) -> None:
        if not keys:
            return
        if self._input:
            self._input += keys
            return
        try:
            written = os.write(self._session.master_fd, keys)
        except BlockingIOError:
            written = 0
        except OSError as exc:
            if exc.errno == errno.EIO:
                return  # the PTY hung up: the keys have nowhere to go
            raise
        if written < len(keys):
            self._input += keys[written:]
            self._dirty = True

    def _write_input(self) -> None:
        self._dirty = True
        try:
            written = os.write(self._session.master_fd, self._input)
        except BlockingIOError:
            return
        except OSError as exc:
            if exc.errno == errno.EIO:
                self._input.clear()
                return
            raise
        del self._input[:written]
