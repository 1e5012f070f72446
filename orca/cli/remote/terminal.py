"""Remote terminals: ``orca term new|attach|send|read HOST:HANDLE`` through a gateway.

``RemoteLink`` is one persistent, blocking CURVE connection to a host's gateway (one
handshake per command, not per call; heartbeats from ``orca.remote.hosts``).
``RemoteStream`` follows one session's output by byte offset with ``gateway.termWait``
(``term.read`` that waits in the remote gateway for output: no polling): after
a link loss it resumes from the last offset it received, so nothing is lost or
repeated; when the gap is past the remote scrollback, ptyd answers with the terminal
model's snapshot and ``gap`` set, and the stream says so (``gaps``) instead of
silently truncating. ``run_remote_term`` is what ``orca term`` calls for a reference
of the form ``HOST:REST`` naming a known host (``orca host add``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import zmq

from orca.contracts import gateway as gw
from orca.contracts import gitwatch, ptyd
from orca.contracts.base import Op, decode_result
from orca.paths import OrcaPaths, resolve_paths
from orca.remote.hosts import RemoteHost, link_client, split_remote_ref
from orca.wire.envelope import decode_reply_raw, encode_request
from orca.wire.errors import BadFrame, BadRequest, OrcaError, Timeout, error_from_wire

R = TypeVar("R")


def _call_timeout() -> float:
    """A reply later than the link's heartbeat timeout (+ slack) means the link is gone."""
    from orca.remote.hosts import Heartbeats

    return Heartbeats.from_env().timeout_s + 2.0


CALL_TIMEOUT_S = 10.0
# An attach waits in the remote gateway (``gateway.termWait``) this long per request
# when the session is idle: one request per WAIT_S, no polling.
WAIT_S = 5.0
# Only against a gateway without ``gateway.termWait``: poll term.read this often.
IDLE_POLL_S = 0.02
READ_LIMIT = 256 * 1024
CLEAR_SCREEN = b"\x1b[H\x1b[2J"
# One keystroke write carries at most this much (a paste is sent in pieces, in order).
MAX_WRITE_BYTES = 64 * 1024
# Keys typed but not yet sent are kept up to this much (while the link is down); beyond
# it the newest are dropped, and the attach says so when it ends.
MAX_PENDING_BYTES = 1024 * 1024
# A write the gateway refused before running it (its rate or in-flight bound) is sent
# again after this long, doubling up to MAX_RETRY_S; one not delivered within
# GIVE_UP_S is dropped and reported.
RETRY_S = 0.02
MAX_RETRY_S = 1.0
GIVE_UP_S = 60.0
# An attach that ends (detach, exit) still delivers what was typed, this long at most.
FLUSH_S = 2.0


class Interrupted(Exception):
    """``on_wake`` asked to stop waiting (the user detached)."""


@dataclass
class _Write:
    data: bytes
    idem: str
    first_sent: float
    rid: str | None = None  # in flight; None: waiting to be sent (again)
    due_at: float = 0.0  # in flight: given up on then; waiting: sent again then
    attempts: int = 0


class KeyWriter:
    """Keys typed into one remote terminal, delivered once each and in order.

    One ``term.write`` is in flight at a time; keys typed meanwhile wait and go together
    as the next write once it is confirmed, so fast typing or a paste costs one request
    per round trip, not one per key, and writes cannot overtake each other in the
    gateways' concurrent relays. Every write carries an idempotency key: one that the
    gateway refused before running it (``unavailable``: its rate or in-flight bound),
    or that went unanswered, is sent again with the same key, and the remote ptyd runs
    it at most once. Keys are only dropped (and reported in ``errors``) when the remote
    side refuses them for good, the pending buffer is full, or nothing got through for
    ``GIVE_UP_S``."""

    def __init__(self, link: RemoteLink, session_id: str) -> None:
        self.link = link
        self.session_id = session_id
        self.pending = bytearray()
        self.inflight: _Write | None = None
        self.errors: list[str] = []
        self.retries = 0
        self._idem_prefix = f"keys-{os.urandom(6).hex()}-"
        self._n = 0

    @property
    def busy(self) -> bool:
        return self.inflight is not None or bool(self.pending)

    def type(self, keys: bytes) -> None:
        if len(self.pending) + len(keys) > MAX_PENDING_BYTES:
            self.errors.append(
                f"{len(keys)} bytes dropped: {len(self.pending)} still waiting to be sent"
            )
        else:
            self.pending += keys
        self.pump()

    def due(self) -> float | None:
        """When ``pump`` has something to do without a reply (a retry or a timeout)."""
        return None if self.inflight is None else self.inflight.due_at

    def pump(self) -> None:
        """Send what is due: the in-flight write again, or the next one."""
        now = time.monotonic()
        w = self.inflight
        if w is not None:
            if now < w.due_at:
                return
            if w.rid is None:
                self._send(w, now)
                return
            self.link.forget(w.rid)
            self._again(w, now, "no reply")
            return
        if not self.pending:
            return
        self._n += 1
        data = bytes(self.pending[:MAX_WRITE_BYTES])
        del self.pending[: len(data)]
        self.inflight = _Write(data=data, idem=f"{self._idem_prefix}{self._n}", first_sent=now)
        self._send(self.inflight, now)

    def _send(self, w: _Write, now: float) -> None:
        args = ptyd.WriteArgs(session_id=self.session_id, data=w.data)
        w.attempts += 1
        rid = self.link.send_nowait(ptyd.WRITE, args, idem=w.idem, on_reply=self._replied)
        if rid is None:  # no connection to queue on (the link is down): later
            self._again(w, now, "link down")
            return
        w.rid, w.due_at = rid, now + _call_timeout()

    def _again(self, w: _Write, now: float, why: str) -> None:
        if now - w.first_sent > GIVE_UP_S:
            self.errors.append(f"{len(w.data)} bytes not delivered in {GIVE_UP_S:g}s ({why})")
            self.inflight = None
            self.pump()
            return
        self.retries += 1
        w.rid = None
        w.due_at = now + min(MAX_RETRY_S, RETRY_S * 2 ** min(w.attempts, 10))

    def _replied(self, reply: Any) -> None:
        w = self.inflight
        if w is None or reply.id != w.rid:
            return  # an attempt given up on: its retry carries the same idempotency key
        now = time.monotonic()
        if reply.ok:
            self.inflight = None
        else:
            error = error_from_wire(reply.error)
            if error.code in ("unavailable", "timeout"):
                self._again(w, now, str(error))
                return
            self.errors.append(f"{len(w.data)} bytes refused: {error}")
            self.inflight = None
        self.pump()


class RemoteLink:
    """A blocking request/reply link to one host's gateway (CURVE, pinned key).

    ``invoke`` waits for its own reply; while it waits, a readable ``wake_fd`` calls
    ``on_wake`` (the attach forwards keys then, through its ``writer``, a
    :class:`KeyWriter`: its replies are handed to it whenever they come, and it is
    pumped for its retries)."""

    def __init__(self, host: RemoteHost, paths: OrcaPaths | None = None) -> None:
        self.host = host
        ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
        self.sock = ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.MAXMSGSIZE, 16 * 1024 * 1024)
        link_client(paths or resolve_paths(), host).apply(self.sock)
        self.sock.connect(host.endpoint)
        self._n = 0
        self._on_reply: dict[str, Callable[[Any], None]] = {}  # rid -> send_nowait's callback
        self.writer: KeyWriter | None = None

    def _rid(self) -> str:
        self._n += 1
        return f"{os.getpid():x}-{self._n}"

    def send_nowait(
        self,
        op: Op[Any, Any],
        args: Any,
        *,
        idem: str | None = None,
        on_reply: Callable[[Any], None],
    ) -> str | None:
        """Send without waiting; ``on_reply(reply)`` when the reply comes. The request
        id, or None when there is no connection to queue it on."""
        rid = self._rid()
        try:
            self.sock.send(encode_request(rid, op.name, args, idem), zmq.NOBLOCK)
        except zmq.Again:
            return None
        self._on_reply[rid] = on_reply
        return rid

    def forget(self, rid: str) -> None:
        self._on_reply.pop(rid, None)

    def _poll_step(self, remaining: float) -> float:
        """How long to wait in one poll: ``remaining``, or until the writer is due."""
        due = self.writer.due() if self.writer is not None else None
        return remaining if due is None else max(0.0, min(remaining, due - time.monotonic()))

    def flush_writes(self, timeout: float) -> None:
        """Deliver what the writer holds (keys typed just before a detach), ``timeout``
        at most: replies taken, retries sent, as ``invoke`` does while it waits."""
        writer = self.writer
        deadline = time.monotonic() + timeout
        while writer is not None and writer.busy and (left := deadline - time.monotonic()) > 0:
            if self.sock.poll(int(self._poll_step(left) * 1000) + 1, zmq.POLLIN):
                self._take(None)
            writer.pump()

    def _take(self, rid: str | None) -> Any:
        """Receive one reply: ``rid``'s (returned), else a ``send_nowait`` one (handed
        to its callback)."""
        try:
            reply = decode_reply_raw(self.sock.recv())
        except BadFrame:
            return None
        if rid is not None and reply.id == rid:
            return reply
        callback = self._on_reply.pop(reply.id, None) if reply.id is not None else None
        if callback is not None:
            callback(reply)
        return None  # a late reply to an attempt that timed out, or a write's

    def invoke(
        self,
        op: Op[Any, R],
        args: Any = None,
        *,
        timeout: float = CALL_TIMEOUT_S,
        wake_fd: int | None = None,
        on_wake: Callable[[], bool] | None = None,
    ) -> R:
        rid = self._rid()
        deadline = time.monotonic() + timeout
        if not self.sock.poll(int(timeout * 1000), zmq.POLLOUT):
            raise Timeout(f"{self.host.name}: no connection within {timeout:g}s")
        self.sock.send(encode_request(rid, op.name, args))
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        if wake_fd is not None:
            poller.register(wake_fd, zmq.POLLIN)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Timeout(f"{self.host.name}: no reply to {op.name} within {timeout:g}s")
            ready = dict(poller.poll(int(self._poll_step(remaining) * 1000) + 1))
            if wake_fd is not None and wake_fd in ready and on_wake is not None and on_wake():
                raise Interrupted()
            if self.writer is not None:
                self.writer.pump()  # a retry or a timeout that fell due
            if self.sock not in ready:
                continue
            reply = self._take(rid)
            if reply is None:
                continue
            if not reply.ok:
                raise error_from_wire(reply.error)
            return decode_result(op, bytes(reply.result), self.host.endpoint)

    def close(self) -> None:
        self.sock.close(linger=0)


@dataclass
class RemoteStream:
    """One remote session's output, in order, across link losses.

    Follows by byte offset with ``gateway.termWait`` (a ``term.read`` that waits in the
    remote gateway until there is output), so an idle stream costs one request per
    ``WAIT_S``; against a gateway without it, ``term.read`` every ``IDLE_POLL_S``."""

    link: RemoteLink
    session_id: str
    offset: int | None = None  # None: start from the screen snapshot
    gaps: list[tuple[int, int]] = field(default_factory=list)
    start: int | None = None  # the stream offset the first bytes shown correspond to
    reconnects: int = 0
    exit_code: int | None = None
    ended: bool = False
    output_ended: bool = False
    waits: bool = True  # False: the remote gateway has no termWait (poll term.read)
    requests: int = 0
    shown: bool = False  # the first answer (the screen) was handed to on_data

    def poll(
        self,
        timeout: float | None = None,
        *,
        wait_s: float = 0.0,
        wake_fd: int | None = None,
        on_wake: Callable[[], bool] | None = None,
    ) -> tuple[bytes, bool]:
        """(new bytes, repaint): ``repaint`` when the bytes are a snapshot after a gap.
        ``wait_s`` > 0: wait that long in the remote gateway for output."""
        self.requests += 1
        budget = timeout or _call_timeout()
        if self.waits and wait_s > 0 and self.offset is not None:
            args: Any = gw.TermWaitArgs(
                session_id=self.session_id, since=self.offset, limit=READ_LIMIT, wait_s=wait_s
            )
            try:
                got = self.link.invoke(
                    gw.TERM_WAIT, args, timeout=budget + wait_s, wake_fd=wake_fd, on_wake=on_wake
                )
            except gw.Forbidden:  # an older gateway: no termWait to call
                self.waits = False
                return b"", False
        else:
            args = ptyd.ReadArgs(session_id=self.session_id, since=self.offset, limit=READ_LIMIT)
            got = self.link.invoke(
                ptyd.READ, args, timeout=budget, wake_fd=wake_fd, on_wake=on_wake
            )
        repaint = False
        if self.offset is not None and got.gap:
            self.gaps.append((self.offset, got.offset))
            repaint = True
        if self.start is None:
            self.start = got.end if self.offset is None else got.offset
        self.offset = got.end
        self.exit_code = got.exit_code
        # Ended once the program exited and every byte was read: its PTY's output can
        # end (the last fd closed) a moment before ptyd reaps it and knows its exit
        # code, and an attach that stopped then said "exited None".
        self.output_ended = got.output_ended
        self.ended = not got.running and (got.output_ended or got.end == got.offset + len(got.data))
        return got.data, repaint

    def follow(
        self,
        on_data: Callable[[bytes, bool], None],
        *,
        until: Callable[[], bool],
        retry_s: float = 0.2,
        wake_fd: int | None = None,
        on_wake: Callable[[], bool] | None = None,
        wait_s: float = WAIT_S,
    ) -> None:
        """Call ``on_data(bytes, repaint)`` until ``until()`` or ``on_wake()`` says stop;
        a lost link is retried from the last offset (``reconnects`` counts failures)."""
        while not until():
            first = not self.shown
            try:
                data, repaint = self.poll(
                    wait_s=0.0 if first else wait_s, wake_fd=wake_fd, on_wake=on_wake
                )
            except Interrupted:
                return
            except (Timeout, OrcaError) as exc:
                if not isinstance(exc, Timeout) and exc.code != "unavailable":
                    raise
                self.reconnects += 1
                time.sleep(retry_s)
                continue
            if data or first:  # the first answer is the screen, shown even when blank
                on_data(data, repaint or first)
                self.shown = True
            elif self.ended:
                return
            elif not self.waits or self.output_ended:
                # (ended output answers a wait at once: the exit is a moment away)
                time.sleep(IDLE_POLL_S)


# -- resolving HOST:HANDLE --------------------------------------------------------------
def remote_terminals(link: RemoteLink) -> tuple[list[ptyd.SessionRow], dict[str, str]]:
    """The host's sessions and their handles, as ``orca term ls`` shows them there."""
    from orca.views.handles import session_handles

    sessions = link.invoke(ptyd.LIST, ptyd.ListArgs()).sessions
    try:
        listed = link.invoke(gitwatch.WORKTREE_LIST, gitwatch.ListArgs()).worktrees
        paths = [(w.id, w.path) for w in listed]
    except OrcaError:
        paths = []
    return sessions, session_handles([(s.session_id, s.worktree_id) for s in sessions], paths)


def resolve_remote_session(link: RemoteLink, ref: str) -> str:
    """The id of the host's session ``ref`` names, by the local rules (running first:
    ``orca.views.handles.resolve_terminal``)."""
    from orca.views.handles import resolve_terminal, session_suffix

    if session_suffix(ref):
        return ref
    sessions, handles = remote_terminals(link)
    try:
        return resolve_terminal(sessions, handles, ref).session_id
    except BadRequest as exc:
        raise type(exc)(f"{exc.message} (on host {link.host.name}; see `orca term ls`)") from None


def _remote(ref: str) -> tuple[RemoteHost, str] | None:
    return split_remote_ref(resolve_paths(), ref)


def remote_new(args: argparse.Namespace) -> int | None:
    """``orca term new HOST:WORKTREE [-- CMD]`` on a remote host; None if not remote."""
    found = _remote(args.worktree)
    if found is None:
        return None
    host, ref = found
    from orca.views.handles import resolve, worktree_target

    link = RemoteLink(host)
    try:
        rows = link.invoke(gitwatch.WORKTREE_LIST, gitwatch.ListArgs()).worktrees
        from orca.views.handles import worktree_handles

        handles = worktree_handles((r.id, r.path) for r in rows)
        targets = [
            worktree_target(r.id, handles[r.id], r.path, r.display_name, r.branch) for r in rows
        ]
        row_id = resolve(targets, ref, "worktree").id
        row = next(r for r in rows if r.id == row_id)
        argv = args.cmd or ["/bin/sh"]  # the command as typed, `term new`'s options out
        spawned = link.invoke(
            ptyd.SPAWN,
            ptyd.SpawnArgs(argv=argv, cwd=args.cwd or row.path, worktree_id=row.id),
        )
        try:  # as `orca term ls` shows it: HOST:<handle there>
            handle = remote_terminals(link)[1].get(spawned.session_id, spawned.session_id)
        except OrcaError:
            handle = spawned.session_id
    finally:
        link.close()
    if getattr(args, "json", False):
        from orca.cli.output import print_json
        from orca.model.codec import to_builtins

        print_json("session", {"handle": f"{host.name}:{handle}", **to_builtins(spawned)})
    else:
        print(f"{host.name}:{handle}")
    return 0


def run_remote_term(command: str, args: argparse.Namespace) -> int | None:
    """Run ``orca term <command>`` on the remote host ``args.id`` names; None if local."""
    found = _remote(args.id)
    if found is None:
        return None
    host, ref = found
    link = RemoteLink(host)
    try:
        session_id = resolve_remote_session(link, ref)
        if command == "_send":
            text = args.text + ("\r" if args.enter else "")
            link.invoke(ptyd.WRITE, ptyd.WriteArgs(session_id=session_id, text=text))
        elif command == "_read":
            got = link.invoke(ptyd.READ, ptyd.ReadArgs(session_id=session_id, since=args.since))
            if got.gap and args.since is not None:
                print(
                    f"orca: output before offset {got.offset} is gone; showing the screen",
                    file=sys.stderr,
                )
            sys.stdout.buffer.write(got.data)
            sys.stdout.buffer.flush()
        elif command == "_kill":
            if args.signal:
                link.invoke(ptyd.SIGNAL, ptyd.SignalArgs(session_id=session_id, signal=args.signal))
            else:
                link.invoke(ptyd.KILL, ptyd.SessionArgs(session_id=session_id))
        elif command == "_close":
            link.invoke(ptyd.CLOSE, ptyd.SessionArgs(session_id=session_id))
        elif command == "_attach":
            return _attach(link, session_id)
        else:
            raise BadRequest(
                f"`orca term {command.lstrip('_')}` does not work on remote terminals yet"
            )
    finally:
        link.close()
    return 0


def _attach(link: RemoteLink, session_id: str) -> int:
    """Stream the remote session (keys typed are sent); Ctrl-] detaches. Resumes from
    the last offset after a link loss and says so when output was lost. Event-driven:
    the process sleeps in one poll on the link and stdin (``gateway.termWait``)."""
    import termios
    import tty

    stream = RemoteStream(link, session_id)
    writer = link.writer = KeyWriter(link, session_id)
    out = sys.stdout.buffer
    tty_in = sys.stdin.isatty()
    stdin = sys.stdin.fileno()
    saved = termios.tcgetattr(stdin) if tty_in else None
    detached = [False]
    stdin_open = [True]

    shown_screen = [False]

    def on_data(data: bytes, repaint: bool) -> None:
        if repaint and shown_screen[0]:
            out.write(
                b"\r\n[orca: output lost while the link was down; redrawn from the screen]\r\n"
            )
        if repaint:
            out.write(CLEAR_SCREEN)  # the screen is redrawn whole, as a local attach does
            shown_screen[0] = True
        out.write(data)
        out.flush()

    def on_wake() -> bool:
        _forward_keys(writer, stdin, detached, stdin_open)
        return detached[0]

    try:
        if tty_in:
            tty.setraw(stdin)
        while not detached[0]:
            stream.follow(
                on_data,
                until=lambda: detached[0],
                wake_fd=stdin if stdin_open[0] else None,
                on_wake=on_wake,
            )
            if stream.ended or detached[0] or stdin_open[0]:
                break
            # stdin reached its end without a detach (a pipe): keep following, keys off
        link.flush_writes(FLUSH_S)  # keys typed just before the detach still arrive
    finally:
        if saved is not None:
            termios.tcsetattr(stdin, termios.TCSADRAIN, saved)
    reason = "detached" if detached[0] else f"exited {stream.exit_code}"
    print(
        f"\r\n[{reason}; stream offsets {stream.start}..{stream.offset};"
        f" {len(stream.gaps)} gap(s); {stream.reconnects} link retries]"
    )
    for error in writer.errors[:3]:
        print(f"orca: keys not delivered: {error}", file=sys.stderr)
    return 0


def _forward_keys(
    writer: KeyWriter, stdin: int, detached: list[bool], stdin_open: list[bool]
) -> None:
    """Send what stdin has (it is readable); Ctrl-] detaches. A closed stdin (a pipe at
    its end) detaches a terminal, and only stops forwarding otherwise."""
    keys = os.read(stdin, 4096)
    if not keys:
        if os.isatty(stdin):
            detached[0] = True
        else:
            stdin_open[0] = False
            raise Interrupted()  # re-enter the wait without stdin
        return
    if b"\x1d" in keys:
        keys = keys.split(b"\x1d", 1)[0]
        detached[0] = True
    if keys:
        writer.type(keys)
