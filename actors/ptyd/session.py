"""One live PTY session: the eager reader, the input writer and the exit watch (trio).

Essay: why the reader is shaped the way it is (and ``history.py`` for why, with a
journal, the bytes travel by ``splice`` instead of ``read``).

A PTY has a small kernel buffer (a few KiB per direction on Linux, ``N_TTY`` 4 KiB
plus the master's flip buffers). When it is full the child blocks in ``write()``.
Reading late therefore does not just add latency, it throttles the child: a reader
that waits for a tick or yields to other work between small reads cuts throughput by
an order of magnitude. So the reader takes everything the kernel has (non-blocking
``splice``/``read`` calls until one would block, up to 64 KiB) and only parks in
``wait_readable`` when there is nothing; between batches it does just the work that
must happen before the next one (journal, OSC scan, scrollback append, fan-out), all
of it non-blocking, and one ``checkpoint`` so other sessions and RPCs are served.

Fan-out never blocks: events go to the PUB socket (which drops for a slow subscriber)
and to in-process subscriptions through ``send_nowait`` (a full subscription is
marked lagged and skipped). Either kind of reader notices its gap by offset and
catches up with :meth:`Session.read_since` (see :mod:`orca.client.cursor`).

Input is queued (bounded) and written by a task of its own, so an op handler never
waits for a child that does not read its stdin.
"""

from __future__ import annotations

import errno
import logging
import os
import signal
import time
import zlib
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

import trio

from actors.ptyd import spawn
from actors.ptyd.history import RawJournal
from actors.ptyd.info import SessionInfo
from actors.ptyd.osc import OscScanner
from actors.ptyd.relay import RELEASED_OUTPUT_ENDED, HandedTty, Relay
from actors.ptyd.scrollback import Chunk, Gap, Scrollback
from actors.ptyd.subscription import SUBSCRIPTION_QUEUE, StreamPeer, Subscription
from actors.ptyd.terminal_model import SCREEN_SWITCH, TerminalModel
from orca.actor import memory
from orca.model.vt import ends_inside_sequence

if TYPE_CHECKING:
    from actors.ptyd.handed import HandedPeer

log = logging.getLogger(__name__)

# One batch takes what the kernel has, up to this much (a PTY hands out a few KiB per
# read): large enough that per-batch costs are amortised, small enough that one event
# stays far below ZMQ_MAXMSGSIZE and equal to the output pipe's capacity.
READ_SIZE = 64 * 1024
# A PTY read this short took what the master had (a flood comes in reads of a few KiB):
# the reader does not try again at once (poll says when there is more).
SMALL_READ = 1024
# Unwritten input per session before writes are refused: a paste of a large file is
# fine, an endless stream into a child that never reads is the caller's problem.
MAX_INPUT_BACKLOG = 4 * 1024 * 1024
# A session whose output has been quiet this long compacts its scrollback (zlib);
# the next output unpacks it. Agents waiting for input are the common case.
IDLE_COMPACT_S = 2.0
# Quiet this long, a session goes cold: its terminal model is freed (kept as its
# compressed checkpoint, ~60 KiB) and its compacted scrollback waits in a file beside
# the journal, so an idle session costs ptyd about what its bookkeeping does
# (bench/pty.py: RSS with 20 idle sessions). The next output, attach or read warms it
# (measured: ~10 ms to restore a model with a full history). Not at IDLE_COMPACT_S: a
# session that prints every few seconds would pay the round trip each time.
COLD_AFTER_S = 30.0
# Grace between SIGTERM/SIGHUP and SIGKILL when a session is killed.
KILL_GRACE_S = 2.0
# Attachment leases kept per session (``term.attach``): beyond it the oldest is dropped.
MAX_ATTACHMENTS = 64
# Output nobody follows live (no attached client, no subscriber of its events) is read
# at most this often after a short batch: an agent printing a line every 10 ms then
# costs ptyd a wake-up every 25 ms, not every line (bench/pty.py --phases cpu: with 20
# such sessions ptyd's CPU halved). A client that attaches ends the wait at once.
UNWATCHED_READ_S = 0.025


class SessionListener(Protocol):
    """Where a session reports what happened (the actor publishes; tests record)."""

    def on_output(self, session: Session, chunk: Chunk) -> None: ...
    def on_osc(self, session: Session, payload: bytes) -> None: ...
    def on_exit(self, session: Session) -> None: ...
    def follows_output(self, session: Session) -> bool:
        """Whether someone outside the session (an event subscriber) follows its output."""
        ...


class InputBacklogFull(Exception):
    """The child is not reading its input and the backlog bound is reached."""


class SessionEnded(Exception):
    """The operation needs a live PTY and this session's has closed."""


class Session:
    """A running (or exited) child on a PTY master this process reads."""

    # What one batch takes from the master at most, and a read short enough to say the
    # master is empty now (the relay's native step reads by the same rules).
    read_size = READ_SIZE
    small_read = SMALL_READ

    def __init__(
        self,
        info: SessionInfo,
        master_fd: int,
        listener: SessionListener,
        *,
        scrollback: Scrollback,
        journal: RawJournal | None = None,
        pipe: tuple[int, int] | None = None,
        scanner: OscScanner | None = None,
        model: TerminalModel | None = None,
        cold_after_s: float = COLD_AFTER_S,
    ) -> None:
        self.info = info
        self.cold_after_s = max(cold_after_s, IDLE_COMPACT_S)
        self.master_fd = master_fd
        self.scrollback = scrollback
        self.journal = journal
        # (read end, write end) of the pipe output is spliced through; None: plain reads.
        self.pipe = pipe if journal is not None else None
        self._splice = self.pipe is not None  # False once the kernel refused a splice
        # Stripped-stream offset after everything the reader scanned (ahead of the
        # scrollback while the relay thread reads: its batches are published after).
        self._scanned_end = scrollback.end
        self.scanner = scanner or OscScanner()
        # The screen as the output drew it (fed inline; answers the program's queries);
        # while the session is cold, only its checkpoint, zlib'd (``model`` restores it).
        self._model: TerminalModel | None = model or TerminalModel(info.cols, info.rows)
        self._cold_model: bytes | None = None
        self._idle_checkpoint: bytes | None = None  # the model's, as of the last compaction
        # An ended session rests cold until it is closed (``rest_cold``); closing cancels
        # this scope (before or after the rest began).
        self.rest_scope = trio.CancelScope()
        self.replies_failed = 0
        self._listener = listener
        self._subscriptions: set[Subscription] = set()
        # Attach-stream clients (``stream.py``), in attach order.
        self.streams: list[StreamPeer] = []
        # The answerer of the last chunk while it ended inside a sequence: a query split
        # across chunks is shown whole to one terminal (a switch there could make two).
        self._answerer_mid_sequence: StreamPeer | None = None
        # Handed terminals (issue 24, ``handed.py``): attached ones, in attach order;
        # those waiting for the relay thread to start; the relay while it runs.
        self.handed: list[HandedPeer] = []
        self._to_hand: list[HandedTty] = []
        self.relay: Relay | None = None
        self._idle_wait: trio.CancelScope | None = None  # the reader parked on the master
        self._watcher_came = trio.Event()  # set by watcher_came (UNWATCHED_READ_S)
        self._leases: dict[str, float] = {}  # attachment id -> expiry (monotonic)
        self._input: deque[bytes] = deque()
        self._input_bytes = 0
        self._input_ready = trio.Event()
        self._master_closed = False
        self.exited = trio.Event()
        self.output_done = trio.Event()
        # Set by new output or a restore; re-armed by the compactor, then by rest_cold.
        self._activity = trio.Event()
        self._last_output = time.monotonic()
        # For an adopted child: asks whoever reaped it (the fd keeper) for its exit code.
        self.foreign_exit: Callable[[], Awaitable[int | None]] | None = None
        # The signal ``kill`` expects to end the child (issue 23): the exit code recorded
        # when nobody can tell the real one (an adopted child init reaped).
        self._ending_signal: int | None = None

    @property
    def session_id(self) -> str:
        return self.info.session_id

    @property
    def model(self) -> TerminalModel:
        """The terminal model (restored first if the session is cold)."""
        if self._model is None:
            assert self._cold_model is not None
            data = zlib.decompress(self._cold_model)
            self._model = TerminalModel.restore(data)
            self._cold_model = None
            # Still what the model holds until output or a resize moves it on (they
            # clear it), so the session can go cold again without a new checkpoint.
            self._idle_checkpoint = data
            self._activity.set()  # the compactor, or an ended session's rest: cold again
        return self._model

    @property
    def cold(self) -> bool:
        """Whether the terminal model is freed (only its compressed checkpoint kept)."""
        return self._model is None

    @property
    def watched(self) -> bool:
        """Whether anyone follows the output live (a client, a lease, a subscriber)."""
        if self.streams or self.handed or self._subscriptions:
            return True
        now = time.monotonic()
        if any(until > now for until in self._leases.values()):
            return True
        return self._listener.follows_output(self)

    def watcher_came(self) -> None:
        """A client attached: output waiting for the next unwatched read goes now."""
        self._watcher_came.set()

    @property
    def subscribers(self) -> int:
        """Clients attached now: live attachment leases plus in-process subscriptions."""
        now = time.monotonic()
        self._leases = {a: t for a, t in self._leases.items() if t > now}
        return len(self._subscriptions) + len(self._leases) + len(self.streams) + len(self.handed)

    def hand(self, peer: HandedPeer, tty: HandedTty) -> None:
        """Attach a handed terminal: the relay thread (started if need be, by the reader
        between two batches) reads its keys and writes the output to it."""
        self.handed.append(peer)
        if self.relay is not None and self.relay.add(tty):
            return
        self._to_hand.append(tty)
        if self._idle_wait is not None:
            self._idle_wait.cancel()

    def release(self, peer: HandedPeer, reason: str) -> None:
        """Stop using a handed terminal; the peer is told ``released`` once the relay
        has let go of it (at once if it never had it)."""
        for tty in self._to_hand:
            if tty.peer is peer:
                self._to_hand.remove(tty)
                tty.close()
                self.handed_released(peer, reason)
                return
        if self.relay is not None and self.relay.drop(peer, reason):
            return
        self.handed_released(peer, reason)

    def handed_released(self, peer: HandedPeer, reason: str) -> None:
        """The relay let go of ``peer``'s terminal (or never had it)."""
        if reason == RELEASED_OUTPUT_ENDED:
            return  # still attached: told the exit code by end_streams
        if peer in self.handed:
            self.handed.remove(peer)
        peer.released(reason)

    def hold_lease(self, attachment_id: str, lease_s: float) -> None:
        """Count ``attachment_id`` as attached for ``lease_s`` more (take or renew)."""
        self._leases.pop(attachment_id, None)
        if len(self._leases) >= MAX_ATTACHMENTS:
            del self._leases[min(self._leases, key=self._leases.__getitem__)]
        self._leases[attachment_id] = time.monotonic() + lease_s
        self.watcher_came()

    def release_lease(self, attachment_id: str) -> None:
        self._leases.pop(attachment_id, None)

    # -- running -------------------------------------------------------------------
    async def run(self) -> None:
        """Read, write and watch the exit until the PTY is closed for good."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._watch_exit)
            nursery.start_soon(self._write_input)
            nursery.start_soon(self._compact_when_idle)
            await self._read_output()
        # Both the output ended (hang-up) and the exit is recorded: the PTY is done.
        self._close_master()

    async def _read_output(self) -> None:
        # Invariant: one reader of the master at a time, this task or (while handed
        # terminals are attached) the relay thread it waits for (``relay.py``); the
        # hand-over happens here, between two batches, so neither sees half of one.
        if self._splice:
            assert self.pipe is not None
            raw = self._pipe_contents(self.pipe[0])  # what a previous ptyd left in the pipe
            if raw:
                self._ingest(raw)
        while not await self._read_until_handed():
            if self._to_hand and await self._relay_output():
                break
        for tty in self._to_hand:  # handed while the output ended: never relayed
            tty.close()
        self._to_hand.clear()
        tail = self.scanner.finish()
        if tail:
            self._publish(tail)
        self.output_done.set()
        self._activity.set()  # wakes the compactor so it can finish

    async def _read_until_handed(self) -> bool:
        """Read batches until a terminal is handed (False) or the output ends (True).

        Measured with 20 sessions printing 100 short lines a second each (``bench/pty.py
        --phases cpu``), two things cost more than the batches themselves: a cancel scope
        per wait (one per ``hand()`` now: it cancels this whole loop, whose awaits fall
        between batches) and a second read after every short one only to learn that the
        master is empty (``wait_readable`` says so for free, and returns at once if not).
        Then the wake-ups themselves: output no one follows waits ``UNWATCHED_READ_S``.
        """
        fd = self.master_fd
        try:
            with trio.CancelScope() as self._idle_wait:  # cancelled by a hand()
                while not self._to_hand:
                    raw, ended = self.take_raw()
                    if raw:
                        self._ingest(raw)
                    if ended:
                        return True
                    if len(raw) >= SMALL_READ:
                        await trio.lowlevel.checkpoint()  # a flood: read on after the others
                        continue
                    if raw and not self.watched:  # let an unwatched printer's lines gather
                        if self._watcher_came.is_set():
                            self._watcher_came = trio.Event()
                        with trio.move_on_after(UNWATCHED_READ_S):
                            await self._watcher_came.wait()
                    # nothing, or a short read that took what the master had
                    await trio.lowlevel.wait_readable(fd)
        finally:
            self._idle_wait = None
        return False

    async def _relay_output(self) -> bool:
        """Let the relay thread read the master while handed terminals are attached;
        True if the output ended meanwhile."""
        relay = Relay(self, trio.lowlevel.current_trio_token())
        for tty in self._to_hand:
            relay.add(tty)
        self._to_hand.clear()
        self.relay = relay
        try:
            return await relay.serve()
        finally:
            self.relay = None

    async def _compact_when_idle(self) -> None:
        # Woken by output only when parked after a compaction: a busy session (every
        # keystroke's echo is output) costs the compactor no wake-up per chunk.
        while not self.output_done.is_set():
            idle_for = time.monotonic() - self._last_output
            if idle_for < IDLE_COMPACT_S:
                with trio.move_on_after(IDLE_COMPACT_S - idle_for):
                    await self.output_done.wait()
                continue
            self._compact()
            self._activity = trio.Event()
            with trio.move_on_after(self.cold_after_s - IDLE_COMPACT_S):
                await self._activity.wait()
            if not self._activity.is_set():
                self._go_cold()
                await self._activity.wait()  # until output resumes or a read restores it
        self._compact()

    async def rest_cold(self) -> None:
        """The output has ended: nothing feeds the model again, only reads (the final
        screen, the scrollback) touch it. ``cold_after_s`` after the end, and again after
        each read that restored it, the session goes cold, so an ended terminal kept for
        its pane costs its compressed checkpoint, not its model and scrollback (60
        ended sessions of a printer held ~0.7 MiB each, for as long as ptyd ran). Runs
        until cancelled (``rest_scope``: the session closed, or ptyd stopping)."""
        while True:
            await trio.sleep(self.cold_after_s)
            self._go_cold()
            # The compactor has finished: from the end on, only a restore sets this.
            self._activity = trio.Event()
            await self._activity.wait()

    def _compact(self) -> None:
        if not self.scrollback.compacted:
            self.scrollback.compact()
            self.model.compress()
            self.checkpoint_model()
            memory.release_free_memory()

    def checkpoint_model(self) -> None:
        """Save the model with its stream offset beside the journal (idle sessions)."""
        data = self._idle_checkpoint = self.model.checkpoint()
        if data is None or self.journal is None:
            return  # inside a sequence: the next idle period tries again
        self.journal.checkpoint(self.scrollback.end, data)

    def _go_cold(self) -> None:
        """Free what an idle session can rebuild: the model (its checkpoint kept, as of
        the last compaction: nothing reached the model since) and the scrollback's memory."""
        data = self._idle_checkpoint
        if self._model is None or data is None:
            return  # cold already, or the model was inside a sequence
        self._cold_model = zlib.compress(data, 1)
        self._model.close()
        self._model = None
        self._idle_checkpoint = None
        self.scrollback.go_cold()
        memory.release_free_memory()

    async def activity(self) -> tuple[int, list[str]]:
        """(ms since the last output, the screen as text): what an answered prompt is
        settled by (``term.activity``). The text is read from a copy of the model in a
        worker thread, as a snapshot's is."""
        quiet_ms = int((time.monotonic() - self._last_output) * 1000)
        data = self.model.checkpoint()
        if data is None:  # inside a sequence: the live model, on the loop
            return quiet_ms, self.model.text_lines()

        def read_copy() -> list[str]:
            copy = TerminalModel.restore(data)
            try:
                return copy.text_lines()
            finally:
                copy.close()

        return quiet_ms, await trio.to_thread.run_sync(read_copy)

    def screen_snapshot(self) -> tuple[int, bytes]:
        """(offset, escape stream): the screen as of ``offset``; live output follows."""
        return self.scrollback.end, self.model.snapshot()

    def take_raw(self) -> tuple[bytes, bool]:
        """What the kernel has now (up to ``READ_SIZE``), journaled: (raw bytes, whether
        the PTY hung up). Never waits. Called by whichever side reads (see _read_output).

        Takes everything the kernel has before returning, so per-batch costs (scan,
        publish) are paid per 64 KiB, not per PTY read of a few KiB.
        """
        if self.journal is not None:
            self.journal.rotate_if_due(self._scanned_end, self.scanner.at_boundary)
        if self._splice:
            return self._take_spliced()
        fd = self.master_fd
        parts: list[bytes] = []
        size, ended = 0, False
        while size < READ_SIZE:
            try:
                data = os.read(fd, READ_SIZE - size)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno != errno.EIO:  # EIO: every slave fd closed (hang-up)
                    raise
                ended = True
                break
            if not data:
                ended = True
                break
            parts.append(data)
            size += len(data)
            if len(data) < SMALL_READ:
                break  # a key's echo: no second read to learn the master is empty
        batch = b"".join(parts)
        if batch and self.journal is not None:
            self.journal.append(batch)
        return batch, ended

    def _take_spliced(self) -> tuple[bytes, bool]:
        # See history.py: output goes master -> pipe -> journal file inside the
        # kernel, so a kill -9 between two syscalls leaves it in the kept pipe.
        # The pipe is empty here (drained below), so EAGAIN means the master is.
        assert self.pipe is not None
        pipe_r, pipe_w = self.pipe
        fd = self.master_fd
        moved, ended = 0, False
        while moved < READ_SIZE:
            try:
                n = os.splice(fd, pipe_w, READ_SIZE - moved, flags=os.SPLICE_F_NONBLOCK)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.EINVAL:
                    # A kernel whose tty driver cannot splice: read instead (the
                    # journal then trails the read by one syscall; see history.py).
                    log.warning("PTY splice unsupported (%s); reading instead", exc)
                    self._splice = False
                    spliced = self._pipe_contents(pipe_r)
                    rest, ended = self.take_raw()
                    return spliced + rest, ended
                if exc.errno != errno.EIO:
                    raise
                ended = True
                break
            if not n:
                ended = True
                break
            moved += n
            if n < SMALL_READ:
                break  # a key's echo: no second splice to learn the master is empty
        data = self._pipe_contents(pipe_r, moved) if moved else b""
        if ended:
            data += self._pipe_contents(pipe_r)
        return data, ended

    def native_target(self) -> tuple[int, int] | None:
        """Where the relay's native step journals the master's output (fd, offset), a
        due rotation done first; None when ``take_raw`` must read it (no splice)."""
        if not self._splice or self.journal is None:
            return None
        self.journal.rotate_if_due(self._scanned_end, self.scanner.at_boundary)
        return self.journal.splice_target()

    def took_native(self, batch: bytes, pipe_left: int, ended: bool, unread: int = 0) -> bytes:
        """The native step journaled ``batch`` (``take_raw``'s work): count it, read back
        what it journaled and could not read (``unread``: an EIO; raises if it lasts),
        and journal what it left in the pipe (a refused splice) or the PTY's last bytes."""
        assert self.journal is not None and self.pipe is not None
        self.journal.spliced(len(batch))
        if unread:
            batch += self.journal.read_back(unread)
        if pipe_left:
            batch += self._pipe_contents(self.pipe[0], pipe_left)
        if ended:
            batch += self._pipe_contents(self.pipe[0])
        return batch

    def _pipe_contents(self, pipe_r: int, moved: int | None = None) -> bytes:
        """Journal what the pipe holds and return it: ``moved`` bytes if known (only the
        reader fills the pipe: then no splice is made to learn it is empty)."""
        assert self.journal is not None
        parts: list[bytes] = []
        while moved is None or moved > 0:
            try:
                data = self.journal.splice_from(pipe_r, READ_SIZE)
            except BlockingIOError:
                break
            if not data:
                break
            if moved is not None:
                moved -= len(data)
            parts.append(data)
        return b"".join(parts)

    def scan(self, raw: bytes) -> tuple[bytes, list[bytes]]:
        """(output, OSC 9999 payloads) of raw PTY bytes; the reader's side, in order."""
        result = self.scanner.feed(raw)
        self._scanned_end += len(result.output)
        return result.output, result.payloads

    def _ingest(self, raw: bytes) -> None:
        output, payloads = self.scan(raw)
        self.take_in(output, payloads)

    def take_in(self, output: bytes, payloads: list[bytes]) -> None:
        """Publish scanned output and hand on its OSC payloads (on the trio loop)."""
        if output:
            self._publish(output)
        for payload in payloads:
            self._listener.on_osc(self, payload)

    def _publish(self, output: bytes) -> None:
        self._last_output = time.monotonic()
        self._activity.set()  # a no-op unless the compactor is parked
        model = self.model  # restored first if cold (which sets the checkpoint cleared next)
        self._idle_checkpoint = None  # the model moves on (and the next idle period saves it)
        streams = self.streams
        flat = any(p.flat for p in streams)  # flat clients are repainted on a screen switch
        was_alt = flat and model.alt_screen
        model.feed(output)
        replies = model.take_replies()
        chunk = self.scrollback.append(output)
        answered = False
        if streams:  # first: an attached terminal's echo waits for nothing else
            switched = flat and (
                was_alt != self.model.alt_screen or SCREEN_SWITCH.search(output) is not None
            )
            answered = self._deliver_to_streams(chunk, switched)
        self._listener.on_output(self, chunk)
        for sub in self._subscriptions:
            sub.offer(chunk)
        if not answered:
            self._answer_queries(replies)

    def _deliver_to_streams(self, chunk: Chunk, switched: bool) -> bool:
        """Send ``chunk`` to the attach-stream clients; True if the one that answers the
        terminal's queries (the most recent to type) got it unfiltered."""
        answerer = self._answerer_mid_sequence
        if answerer is None or answerer not in self.streams or not answerer.can_answer:
            live = [p for p in self.streams if p.can_answer]
            answerer = max(live, key=lambda p: p.answer_rank) if live else None
            # A handed terminal never answers (it is shown no query): while one typed
            # last, the model does.
            handed_typed = max((h.typed_at for h in self.handed), default=0.0)
            if answerer is not None and handed_typed > answerer.answer_rank:
                answerer = None
        data = chunk.data
        inside = ends_inside_sequence(data) or (
            self._answerer_mid_sequence is not None and b"\x1b" not in data and b"\x07" not in data
        )
        self._answerer_mid_sequence = answerer if inside else None
        answered = False
        for peer in list(self.streams):  # a send may detach a peer that went away
            sent = peer.deliver(chunk, answer=peer is answerer, switched=switched)
            answered = answered or (sent and peer is answerer)
        return answered

    def end_streams(self) -> None:
        """Tell the attach-stream clients the output is final (after its last chunk)."""
        for peer in list(self.streams):
            peer.ended(self.info.exit_code, self.scrollback.end)
        for handed in list(self.handed):
            handed.ended(self.info.exit_code, self.scrollback.end)

    def _answer_queries(self, replies: list[bytes]) -> None:
        """Write the model's answers to the program's queries (DSR, DA, OSC 10/11).

        Invariant: exactly one answer per query. While an attach-stream client can
        answer, its terminal does (``_deliver_to_streams``); otherwise the model answers,
        and every client strips queries from what it shows
        (``orca.model.vt.QueryFilter``), so no terminal answers a second time.
        """
        for reply in replies:
            try:
                self.write_nowait(reply)
            except (SessionEnded, InputBacklogFull, OSError):
                self.replies_failed += 1

    async def _watch_exit(self) -> None:
        if self.info.exit_code is not None:
            # Adopted after a restart with the status the keeper reaped: the pid may
            # already belong to someone else, so it must not be watched.
            self.exited.set()
            self._listener.on_exit(self)
            return
        pidfd = spawn.open_exit_watch(self.info.pid)
        if pidfd is not None:
            try:
                await trio.lowlevel.wait_readable(pidfd)
            finally:
                trio.lowlevel.notify_closing(pidfd)
                os.close(pidfd)
        status = spawn.collect_exit(self.info.pid)
        if status is None:  # pidfd said exited; waitpid disagrees only if a race reaped it
            status = -1
        if status == -1 and self.foreign_exit is not None:
            # Not our child (adopted after a restart): the keeper reaped it.
            code = await self.foreign_exit()
            self.deliver_exit(self._unseen_exit_code() if code is None else code)
            return
        self.deliver_exit(self._unseen_exit_code() if status == -1 else spawn.exit_code_of(status))

    def _unseen_exit_code(self) -> int:
        """The exit code when no wait status reached us (an adopted child reaped by init,
        ``orca down --keep-terminals`` + ``up`` away from its ptyd): 128 + the signal
        ``kill`` ended it with, if Orca ended it, else -1 (unknown)."""
        return -1 if self._ending_signal is None else 128 + self._ending_signal

    def deliver_exit(self, exit_code: int) -> None:
        """Record the child's exit (from our waitpid, or from the supervisor after adoption)."""
        if self.exited.is_set():
            return
        self.info.exit_code = exit_code
        self.exited.set()
        self._listener.on_exit(self)

    async def _write_input(self) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._write_input_loop)
            await self.output_done.wait()
            nursery.cancel_scope.cancel()  # the PTY hung up: nothing more to write to

    async def _write_input_loop(self) -> None:
        fd = self.master_fd
        while True:
            while not self._input:
                self._input_ready = trio.Event()
                await self._input_ready.wait()
            data = self._input[0]
            try:
                written = os.write(fd, data)
            except BlockingIOError:
                await trio.lowlevel.wait_writable(fd)
                continue
            except OSError as exc:
                if exc.errno == errno.EIO:
                    return  # the PTY hung up; pending input has nowhere to go
                raise
            self._input_bytes -= written
            if written == len(data):
                self._input.popleft()
            else:
                self._input[0] = data[written:]

    # -- control ---------------------------------------------------------------------
    def write_nowait(self, data: bytes) -> None:
        """Queue input for the child; raises if the session ended or the backlog is full."""
        if self._master_closed or self.output_done.is_set():
            raise SessionEnded(f"session {self.session_id} has ended")
        if self._input_bytes + len(data) > MAX_INPUT_BACKLOG:
            raise InputBacklogFull(
                f"session {self.session_id} is not reading input ({self._input_bytes} bytes queued)"
            )
        if data and not self._input:
            # Nothing queued: write now (a keystroke then costs no task switch); only
            # what the PTY does not take at once is queued for the writer task.
            try:
                data = data[os.write(self.master_fd, data) :]
            except BlockingIOError:
                pass
            except OSError as exc:
                if exc.errno == errno.EIO:
                    raise SessionEnded(f"session {self.session_id} has hung up") from None
                raise
        if data:
            self._input.append(data)
            self._input_bytes += len(data)
            self._input_ready.set()

    def resize(self, cols: int, rows: int) -> None:
        if self._master_closed:
            raise SessionEnded(f"session {self.session_id} has ended")
        spawn.resize(self.master_fd, self.info.pid, cols, rows)
        self.info.cols, self.info.rows = cols, rows
        self.model.resize(cols, rows)
        self._idle_checkpoint = None  # no longer what the model holds

    def send_signal(self, signum: int) -> bool:
        """Signal the child's process group; False if it no longer exists."""
        if self.exited.is_set():
            return False
        return spawn.signal_group(self.info.pid, signum)

    async def kill(self, grace: float = KILL_GRACE_S) -> None:
        """SIGHUP + SIGTERM the group, SIGKILL after ``grace`` unless it exited.

        Every way Orca ends a terminal comes here (``term.kill``/``term.close``, ``orca
        down --kill-terminals``, a pane's retirement, a GC reap), so here it is noted
        which signal ends the child: of two pending signals the kernel delivers the
        lower-numbered first, so the first of SIGHUP, SIGTERM the child does not ignore
        (a handler that exits otherwise is the one case this names wrongly), else the
        SIGKILL after the grace. It becomes the exit code only if the real status is
        out of reach (``_unseen_exit_code``)."""
        if not self.exited.is_set():
            ignored = spawn.ignored_signals(self.info.pid)
            fatal = [s for s in (signal.SIGHUP, signal.SIGTERM) if s not in ignored]
            self._ending_signal = fatal[0] if fatal else None
        for signum in (signal.SIGHUP, signal.SIGTERM):
            self.send_signal(signum)
        with trio.move_on_after(grace):
            await self.exited.wait()
            return
        self._ending_signal = signal.SIGKILL
        self.send_signal(signal.SIGKILL)

    # -- reading -----------------------------------------------------------------------
    def subscribe(self, capacity: int = SUBSCRIPTION_QUEUE) -> tuple[Chunk, Subscription]:
        """Attach: the snapshot and a live subscription that continues exactly after it."""
        sub = Subscription(capacity)
        self._subscriptions.add(sub)
        self.watcher_came()
        return self.scrollback.snapshot(), sub

    def unsubscribe(self, sub: Subscription) -> None:
        self._subscriptions.discard(sub)
        sub.close()

    def read_since(self, offset: int, limit: int | None = None) -> Chunk | Gap:
        return self.scrollback.read_since(offset, limit)

    def _close_master(self) -> None:
        if not self._master_closed:
            self._master_closed = True
            trio.lowlevel.notify_closing(self.master_fd)
            os.close(self.master_fd)
            for fd in self.pipe or ():
                os.close(fd)
            if self.journal is not None:
                self.journal.close()  # the files stay for reading until term.close
        for sub in list(self._subscriptions):
            self.unsubscribe(sub)
