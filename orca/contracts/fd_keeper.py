"""The fd-keeper protocol: ``ptyd`` hands duplicates of its PTY masters to a keeper.

Why: if the last fd of a PTY master closes, the kernel hangs the terminal up and every
agent on it gets SIGHUP. A ``kill -9`` of ``ptyd`` closes its fds, so a second process
must hold duplicates: the keeper, ``actors/keeper`` (``python -P -m actors.keeper``), a
process of its own with no business logic, so that neither a crash nor an upgrade of
``orcad`` or ``ptyd`` has a reason to stop it. ``ptyd``'s side is
``actors/ptyd/handoff.KeeperLink``. ``ptyd`` deposits a duplicate of every master as
soon as the session exists, keeps the keeper's copy of the session record current, and
withdraws it when the session is closed. A restarted ``ptyd`` reclaims every deposit
with its record and resumes reading: output written meanwhile waited in the kernel's
PTY buffer (the child blocked when it filled), so nothing is lost.

Survival, one process at a time (every master is held twice, by ``ptyd`` and the keeper):

- ``ptyd`` dies: the keeper holds the masters; the restarted ``ptyd`` reclaims them.
- the keeper dies: ``ptyd`` still holds them; ``orcad`` starts a new keeper and ``ptyd``
  re-deposits every session it holds (``KeeperLink`` notices the hang-up, then re-seeds).
- ``orcad`` dies: its actors stop (``ptyd`` included), the keeper does not (its own
  session, not orcad's child process group) and brings orcad back (``watch_orcad``,
  below); the new orcad finds it answering and the new ``ptyd`` reclaims every session.
- ``orcad`` and the keeper die together: the ``ptyd`` that stops finds no keeper and
  starts one before it goes (``secure_with_keeper``, below), which brings orcad back.
- ``ptyd`` and the keeper die together: not survived (both holders); the table of every
  pair is in ``docs/actors.md``.

Transport: a Unix ``SOCK_SEQPACKET`` socket (mode 0600) at
``<runtime dir>/ptyd-keeper.sock`` (``KEEPER_SOCKET_NAME``; ``orcad`` passes its path
to ``ptyd`` in ``ORCA_PTYD_FD_KEEPER``, ``KEEPER_ENV``). One keeper per profile: it
holds ``<runtime dir>/keeper.lock`` (``KEEPER_LOCK_NAME``, ``orca.fsio.FileLock``; the
file names its pid and socket, ``KeeperLockInfo``). One packet is one JSON object
with an ``op`` tag (at most ``MAX_PACKET`` bytes) and its fds as SCM_RIGHTS (at most
``FDS_PER_PACKET``). ``encode_packet``/``decode_packet`` are the one encoder and the
one decoder of a packet, whichever side and whatever socket API (blocking or trio)
sends or receives it: ``decode_packet`` turns what ``recvmsg`` returned into a typed
message and its fds, and closes the fds of a packet it refuses.

Messages, ``ptyd`` → keeper (``Request``):
- ``deposit {key, info}`` + the master fd and, when output is journaled, the output
  pipe's two ends (1..``FDS_PER_SESSION`` fds; a deposit under a kept key replaces it);
- ``update {key, info}``: the session record changed (rename, resize, exit); a
  deposit or update whose record would make a reclaim row over ``MAX_RECORD_BYTES`` is
  refused (``check_record``; ptyd shortens a huge argv before it sends one);
- ``withdraw {key}``: the session is closed, the keeper closes its fds;
- ``exit_status {key}`` → ``exit_status {key, status}``: the wait status the keeper
  recorded for an adopted child it reaped (``null`` if none);
- ``reclaim {}`` → ``sessions {sessions: [{key, info, exitStatus, fds}]}`` packets
  carrying the sessions' fds in order (``fds`` of them each, at most
  ``FDS_PER_PACKET`` fds and ``RECLAIM_BYTES`` of rows a packet: a seqpacket message
  must fit the sender's socket buffer), then one ``end {}`` packet.

``orcad``, the CLI, a new keeper → keeper:
- ``hello {}`` → ``hello {pid, version, build, protocol, capabilities, sessions}``: who
  the keeper is (``build`` as ``sys.hello``'s, ``orca.contracts.sys.build_id``) and
  which messages it understands (``CAPABILITIES``). A keeper that does not answer
  within ``HELLO_TIMEOUT_S`` predates ``hello`` and understands ``BASE_CAPABILITIES``;
- ``hand_over {keys}`` → ``handed_over {ok, missing}``: the upgrade's hand-over
  (``orca restart --all``). The sender, a new keeper started with ``--take-over``,
  already holds duplicates of every session it ``reclaim``ed and names their keys;
  the old keeper answers ``ok`` and exits (closing its copies, releasing its lock)
  only if it holds no other key, else it answers ``missing`` and stays, and the sender
  reclaims again. An old keeper without ``hand_over`` gets ``stop`` after the reclaim
  instead, which is as safe only while no ``ptyd`` deposits (the CLI stops the old tree
  first). ``take_over`` is the sender's side;
- ``exited {pid, status}``: ``orcad`` (the child subreaper, an ancestor of every agent)
  reaped an agent orphaned by a ``ptyd`` crash; the keeper records the wait status on
  the session with that ``pid`` for the restarted ``ptyd`` (unknown pids are ignored);
- ``stop {}``: ``orca down``: close every kept fd (the terminals hang up, which is what
  stopping Orca means) and exit;
- ``watch_orcad {}``: ``orcad``, once a keeper answers it (one it started or one it
  adopted): look at the orcad lock again and watch its holder. When that orcad dies
  without having stopped on purpose (its lock file still names it:
  ``orca.contracts.supervisor.read_abandoned_lock_info``), the keeper starts a new one
  (``actors/keeper/orcad_watch.py``), so the keeper is never the only Orca process
  holding the terminals for longer than a restart takes. A keeper also looks at the
  lock when it starts (the one ``ptyd`` starts after orcad was killed with the old
  keeper finds orcad's abandoned lock and brings it back).

``info`` is ``ptyd``'s session record, opaque to the keeper except for ``pid`` (an int),
which ties a reaped orphan's status to its session.

What the keeper must do (``KeeperState`` is its table; the keeper is a socket loop
around it, ``actors/keeper/service.py``):

1. Listen on the socket; feed each received message and its fds to
   ``KeeperState.handle`` and send back the packets it returns.
2. Never read from or write to a kept fd; close every kept fd on ``stop`` or SIGTERM.
3. Watch orcad (``watch_orcad``) and start a new one when it dies unannounced
   (``actors/keeper/orcad_watch.py``).

Who reaps an agent whose ``ptyd`` died: ``orcad``, the child subreaper (only an
ancestor can be: the kernel re-parents an orphan to its nearest subreaper ancestor),
which forwards the status as ``exited``. If ``orcad`` is gone too, the orphan goes to
the next subreaper up (``systemd --user`` under ``orca service install``) or init; its
output is complete, its exit code unknown (``-1``), unless ``ptyd`` ended it: then the code
of the signal it used (``actors/ptyd/session.Session.kill``).

Upgrades and crashes (``docs/actors.md`` lists every pair of deaths and whether it is
survived): a ``ptyd`` that stops because ``orcad`` died first makes sure a keeper holds
its live sessions (``actors/ptyd/handoff.secure_with_keeper``: if none answers, it
starts one with ``launch_keeper`` and deposits them), so ``orcad`` and the keeper dying
together loses nothing either.

Errors: ``KeeperProtocolError`` (a packet that is not a keeper message: the sender is
at fault; the receiver logs it, drops the packet and keeps serving).
"""

from __future__ import annotations

import array
import os
import select
import socket
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from orca import PROTOCOL_VERSION, __version__
from orca.contracts.sys import build_id
from orca.fsio import read_lock_holder
from orca.pipes import read_ready_line
from orca.wire.codec import FrameDecoder
from orca.wire.errors import BadFrame, BadRequest

KEEPER_ENV = "ORCA_PTYD_FD_KEEPER"
# Where the supervisor listens unless KEEPER_ENV says otherwise (in the runtime dir).
KEEPER_SOCKET_NAME = "ptyd-keeper.sock"
# The keeper's single-instance lock, in the runtime dir.
KEEPER_LOCK_NAME = "keeper.lock"
# The keeper's module (``python -P -m actors.keeper``), named here so no one imports it.
KEEPER_MODULE = "actors.keeper"
# SCM_RIGHTS carries at most 253 fds per message (SCM_MAX_FD); stay well below.
FDS_PER_PACKET = 128
# A session's fds: the PTY master and both ends of its output pipe (ptyd's history.py).
FDS_PER_SESSION = 3
# Largest packet: a batch of FDS_PER_PACKET // FDS_PER_SESSION records (~1 KiB each)
# fits easily.
MAX_PACKET = 1024 * 1024
# How long a keeper may take to answer ``hello`` before it counts as one that predates it.
HELLO_TIMEOUT_S = 1.0
# ``hand_over`` rounds before a take-over gives up (each one reclaims what the old
# keeper got meanwhile; without a ptyd depositing, the first round succeeds).
HAND_OVER_ROUNDS = 5
# What a keeper understands: ``BASE_CAPABILITIES`` since the keeper exists, the rest
# since ``hello`` (a keeper lists them in its ``hello`` reply).
BASE_CAPABILITIES = ("deposit", "update", "withdraw", "exit_status", "reclaim", "exited", "stop")
WATCH_ORCAD = "watch_orcad"
CAPABILITIES = (*BASE_CAPABILITIES, "hello", "hand_over", WATCH_ORCAD)
_FD_SIZE = array.array("i").itemsize
# The ancillary buffer ``recvmsg`` needs for a full packet's fds.
ANCILLARY_SPACE = socket.CMSG_SPACE(FDS_PER_PACKET * _FD_SIZE)

Ancillary = list[tuple[int, int, bytes]]


class KeeperProtocolError(ValueError):
    """A packet that is not a keeper message (the sender is at fault)."""


class KeeperLockInfo(msgspec.Struct, frozen=True, kw_only=True):
    """What the keeper's lock file says: who holds it and where it listens."""

    pid: int | None = None
    socket: str | None = None


_LOCK_DECODER: FrameDecoder[KeeperLockInfo] = FrameDecoder(
    KeeperLockInfo, what="keeper lock file", max_bytes=None, fmt="json"
)


def encode_keeper_lock(info: KeeperLockInfo) -> bytes:
    return msgspec.json.encode(info)


def read_keeper_lock(path: Path) -> KeeperLockInfo | None:
    """The running keeper named by the lock at ``path``; None if nobody holds it."""
    raw = read_lock_holder(path)
    if raw is None:
        return None
    try:
        return _LOCK_DECODER.decode(raw)
    except BadFrame:
        return KeeperLockInfo()  # held, being written: a keeper with no name yet


def keeper_answers(path: str | Path) -> bool:
    """Whether a keeper listens at ``path`` (a stale socket file refuses the connection)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.settimeout(1.0)
        sock.connect(str(path))
    except OSError:
        return False
    finally:
        sock.close()
    return True


class Message(msgspec.Struct, frozen=True, kw_only=True, tag_field="op", rename="camel"):
    """Base of every packet's JSON: an object tagged by ``op``."""


# -- ptyd → keeper ------------------------------------------------------------------
class Deposit(Message, frozen=True, kw_only=True, tag="deposit"):
    key: str
    info: dict[str, Any]


class Update(Message, frozen=True, kw_only=True, tag="update"):
    key: str
    info: dict[str, Any]


class Withdraw(Message, frozen=True, kw_only=True, tag="withdraw"):
    key: str


class Reclaim(Message, frozen=True, kw_only=True, tag="reclaim"):
    pass


class AskExitStatus(Message, frozen=True, kw_only=True, tag="exit_status"):
    key: str


# -- orcad → keeper -----------------------------------------------------------------
class Exited(Message, frozen=True, kw_only=True, tag="exited"):
    pid: int
    status: int


class Stop(Message, frozen=True, kw_only=True, tag="stop"):
    pass


class Hello(Message, frozen=True, kw_only=True, tag="hello"):
    pass


class HandOver(Message, frozen=True, kw_only=True, tag="hand_over"):
    keys: list[str]


class WatchOrcad(Message, frozen=True, kw_only=True, tag=WATCH_ORCAD):
    pass


Request = (
    Deposit | Update | Withdraw | Reclaim | AskExitStatus | Exited | Stop | Hello | HandOver
    | WatchOrcad
)


# -- keeper → ptyd ------------------------------------------------------------------
class KeptSession(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One reclaimed session: its record, the status of its reaped child, its fd count."""

    key: str
    info: dict[str, Any]
    exit_status: int | None = None
    fds: int


class Sessions(Message, frozen=True, kw_only=True, tag="sessions"):
    sessions: list[KeptSession]


class End(Message, frozen=True, kw_only=True, tag="end"):
    pass


class ExitStatus(Message, frozen=True, kw_only=True, tag="exit_status"):
    key: str
    status: int | None = None


class KeeperHello(Message, frozen=True, kw_only=True, tag="hello"):
    pid: int
    version: str
    build: str
    protocol: int
    capabilities: list[str]
    sessions: int


class HandedOver(Message, frozen=True, kw_only=True, tag="handed_over"):
    ok: bool
    missing: list[str] = msgspec.field(default_factory=list)


Reply = Sessions | End | ExitStatus | KeeperHello | HandedOver

M = TypeVar("M", bound=Message)

# The codec's bounded decoder (orca/wire/codec.py), as every socket's: a packet nested
# past the recursion limit (an ``info`` map, a skipped field) is refused, not raised.
REQUESTS: FrameDecoder[Request] = FrameDecoder(
    Request, what="keeper request", max_bytes=MAX_PACKET, fmt="json"
)
REPLIES: FrameDecoder[Reply] = FrameDecoder(
    Reply, what="keeper reply", max_bytes=MAX_PACKET, fmt="json"
)
_ENCODER = msgspec.json.Encoder()


# -- packets ------------------------------------------------------------------------
def close_fds(fds: Iterable[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def fds_from(ancdata: Ancillary) -> list[int]:
    """The fds an SCM_RIGHTS ancillary block carried (a truncated tail is ignored)."""
    fds: list[int] = []
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(data) - len(data) % _FD_SIZE
            fds.extend(array.array("i", data[:usable]))
    return fds


def encode_packet(message: Message, fds: Sequence[int] = ()) -> tuple[list[bytes], Ancillary]:
    """The ``sendmsg`` buffers and ancillary data of one message and its fds."""
    if len(fds) > FDS_PER_PACKET:
        raise ValueError(f"a packet carries at most {FDS_PER_PACKET} fds, not {len(fds)}")
    data = _ENCODER.encode(message)
    if len(data) > MAX_PACKET:
        raise ValueError(f"a {len(data)}-byte packet exceeds MAX_PACKET ({MAX_PACKET})")
    if not fds:
        return [data], []
    return [data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())]


def decode_packet(
    data: bytes, ancdata: Ancillary, decoder: FrameDecoder[M]
) -> tuple[M | None, list[int]]:
    """What ``recvmsg(MAX_PACKET, ANCILLARY_SPACE)`` returned, as a message and its fds.

    ``(None, [])`` when the peer closed (an empty packet). A packet that is not one of
    ``decoder``'s messages raises ``KeeperProtocolError`` after closing its fds, so a
    refused packet never leaks a descriptor.
    """
    fds = fds_from(ancdata)
    if not data:
        close_fds(fds)
        return None, []
    try:
        return decoder.decode(data), fds
    except BadRequest as exc:  # BadFrame, TooLarge: whatever the bytes were
        close_fds(fds)
        raise KeeperProtocolError(f"not a keeper message: {exc.message}") from None


def send_packet(sock: socket.socket, message: Message, fds: Sequence[int] = ()) -> None:
    """Blocking send of one message and its fds."""
    buffers, ancdata = encode_packet(message, fds)
    sock.sendmsg(buffers, ancdata)


def recv_packet(
    sock: socket.socket, decoder: FrameDecoder[M]
) -> tuple[M | None, list[int]]:
    """Blocking receive of one message and its fds; ``(None, [])`` when the peer closed."""
    data, ancdata, _flags, _addr = sock.recvmsg(MAX_PACKET, ANCILLARY_SPACE)
    return decode_packet(data, ancdata, decoder)


# -- the keeper's table -------------------------------------------------------------
@dataclass
class _Kept:
    info: dict[str, Any]
    fds: list[int]  # the PTY master, then the output pipe's read and write ends
    exit_status: int | None = None

    def close(self) -> None:
        close_fds(self.fds)


@dataclass(frozen=True)
class Packet:
    """One packet to send: a message and the fds that travel with it."""

    message: Message
    fds: list[int]


class KeeperState:
    """The keeper's table: one kept master fd and record per session. Pure but for close()."""

    def __init__(self) -> None:
        self._kept: dict[str, _Kept] = {}
        # Set once a ``hand_over`` was accepted: the shell replies, then exits.
        self.handed_over = False

    def __len__(self) -> int:
        return len(self._kept)

    def keys(self) -> list[str]:
        return list(self._kept)

    def seed(self, sessions: Iterable[tuple[KeptSession, list[int]]]) -> None:
        """Hold what a take-over reclaimed from the keeper before us (owns the fds)."""
        for row, fds in sessions:
            old = self._kept.pop(row.key, None)
            if old is not None:
                old.close()
            self._kept[row.key] = _Kept(dict(row.info), list(fds), row.exit_status)

    def handle(self, message: Request, fds: list[int]) -> list[Packet]:
        """Apply one message from ``ptyd``; returns the packets to send back.

        Owns ``fds``: keeps them (a deposit) or closes them, also when it raises.
        """
        if isinstance(message, Deposit):
            if not 1 <= len(fds) <= FDS_PER_SESSION:
                close_fds(fds)
                raise KeeperProtocolError(
                    f"a deposit carries 1 to {FDS_PER_SESSION} fds, not {len(fds)}"
                )
            try:
                check_record(message.key, message.info)
            except KeeperProtocolError:
                close_fds(fds)
                raise
            old = self._kept.pop(message.key, None)
            if old is not None:
                old.close()
            self._kept[message.key] = _Kept(dict(message.info), list(fds))
            return []
        close_fds(fds)  # fds only travel with a deposit
        if isinstance(message, Update):
            check_record(message.key, message.info)  # refused: the kept record stays
            kept = self._kept.get(message.key)
            if kept is not None:  # else withdrawn meanwhile: nothing to update
                kept.info = dict(message.info)
            return []
        if isinstance(message, Withdraw):
            gone = self._kept.pop(message.key, None)
            if gone is not None:
                gone.close()
            return []
        if isinstance(message, Reclaim):
            return list(self._reclaim_packets())
        if isinstance(message, Exited):
            self.record_exit(message.pid, message.status)
            return []
        if isinstance(message, Stop):
            self.close_all()  # the shell exits after it
            return []
        if isinstance(message, WatchOrcad):
            return []  # the shell's orcad watch acts on it (actors/keeper/orcad_watch.py)
        if isinstance(message, Hello):
            hello = KeeperHello(
                pid=os.getpid(),
                version=__version__,
                build=build_id(),
                protocol=PROTOCOL_VERSION,
                capabilities=list(CAPABILITIES),
                sessions=len(self._kept),
            )
            return [Packet(hello, [])]
        if isinstance(message, HandOver):
            missing = sorted(set(self._kept) - set(message.keys))
            if not missing:
                self.handed_over = True  # the shell sends the reply, then exits
            return [Packet(HandedOver(ok=not missing, missing=missing), [])]
        kept = self._kept.get(message.key)
        status = kept.exit_status if kept is not None else None
        return [Packet(ExitStatus(key=message.key, status=status), [])]

    def record_exit(self, pid: int, status: int) -> bool:
        """Remember the wait status of a reaped orphan; False if no session had that pid."""
        for kept in self._kept.values():
            if kept.info.get("pid") == pid and kept.exit_status is None:
                kept.exit_status = status
                return True
        return False

    def close_all(self) -> None:
        for kept in self._kept.values():
            kept.close()
        self._kept.clear()

    def drain(self) -> list[tuple[KeptSession, list[int]]]:
        """Give up every kept session, fds included (the caller owns them now)."""
        out = [
            (KeptSession(key=k, info=v.info, exit_status=v.exit_status, fds=len(v.fds)), v.fds)
            for k, v in self._kept.items()
        ]
        self._kept.clear()
        return out

    def _reclaim_packets(self) -> Iterator[Packet]:
        """The kept sessions in ``sessions`` packets, each within FDS_PER_PACKET fds and
        RECLAIM_BYTES of rows (every row fits one: ``check_record``), then ``end``."""
        rows: list[KeptSession] = []
        fds: list[int] = []
        size = 0
        for key, kept in self._kept.items():
            row = KeptSession(
                key=key, info=kept.info, exit_status=kept.exit_status, fds=len(kept.fds)
            )
            row_size = len(_ENCODER.encode(row)) + 1  # and its comma
            if rows and (
                len(fds) + len(kept.fds) > FDS_PER_PACKET or size + row_size > RECLAIM_BYTES
            ):
                yield Packet(Sessions(sessions=rows), fds)
                rows, fds, size = [], [], 0
            rows.append(row)
            fds.extend(kept.fds)
            size += row_size
        if rows:
            yield Packet(Sessions(sessions=rows), fds)
        yield Packet(End(), [])


# A unix SOCK_SEQPACKET message must fit the sender's send buffer (212,992 bytes by
# default: net.core.wmem_default), else sendmsg fails with EMSGSIZE - which ptyd takes
# for a keeper gone (crash survival off for every session) and which lost a whole
# reclaim. So a ``sessions`` packet's rows stay within RECLAIM_BYTES, and a record
# whose row is over MAX_RECORD_BYTES (a huge argv) is refused at its deposit or update:
# ptyd keeps that one session out of the keeper, the others stay kept.
MAX_RECORD_BYTES = 100 * 1024
RECLAIM_BYTES = 128 * 1024


def check_record(key: str, info: dict[str, Any]) -> None:
    """Raise KeeperProtocolError if ``key``'s record could not come back in a reclaim."""
    worst = KeptSession(key=key, info=info, exit_status=-(2**31), fds=FDS_PER_SESSION)
    size = len(_ENCODER.encode(worst))
    if size > MAX_RECORD_BYTES:
        raise KeeperProtocolError(
            f"a session record of {size} bytes is over MAX_RECORD_BYTES ({MAX_RECORD_BYTES})"
        )


# -- clients: hello, the take-over, launching a keeper --------------------------------
def _connect(path: str | Path, timeout: float) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.settimeout(timeout)
        sock.connect(str(path))
    except OSError:
        sock.close()
        raise
    return sock


def _ask_hello(sock: socket.socket) -> KeeperHello | None:
    """The keeper's ``hello``, or None from one that predates it (no answer in time)."""
    send_packet(sock, Hello())
    if not select.select([sock], [], [], HELLO_TIMEOUT_S)[0]:
        return None
    message, fds = recv_packet(sock, REPLIES)
    close_fds(fds)
    return message if isinstance(message, KeeperHello) else None


def keeper_hello(path: str | Path) -> KeeperHello | None:
    """Ask the keeper at ``path`` who it is; None if none answers or it predates ``hello``."""
    try:
        sock = _connect(path, HELLO_TIMEOUT_S)
    except OSError:
        return None
    try:
        return _ask_hello(sock)
    except (OSError, KeeperProtocolError):
        return None
    finally:
        sock.close()


class TakeOverFailed(RuntimeError):
    """The old keeper did not hand its sessions over; it still holds them."""


@dataclass
class TakenOver:
    """What a take-over got from the keeper before it: its sessions, and who it was."""

    sessions: list[tuple[KeptSession, list[int]]]
    previous: KeeperHello | None  # None: it predates ``hello``
    ended_with: str  # "hand_over", or "stop" for a keeper without it


def reclaim_all(sock: socket.socket) -> list[tuple[KeptSession, list[int]]]:
    """``reclaim`` on an open connection: every kept session with its fds."""
    send_packet(sock, Reclaim())
    out: list[tuple[KeptSession, list[int]]] = []
    while True:
        message, fds = recv_packet(sock, REPLIES)
        if not isinstance(message, Sessions):
            close_fds(fds)
            if message is None:
                for _, mine in out:
                    close_fds(mine)
                raise TakeOverFailed("the keeper hung up during reclaim")
            return out
        for row in message.sessions:
            mine, fds = fds[: row.fds], fds[row.fds :]
            out.append((row, mine))
        close_fds(fds)


def take_over(path: str | Path, timeout: float = 5.0) -> TakenOver | None:
    """Take every session from the keeper at ``path`` and make it exit (blocking).

    None if no keeper answers there. On return the caller holds a duplicate of every
    fd the old keeper held and the old keeper is exiting (its lock is released once it
    is gone). ``TakeOverFailed``: the old keeper kept everything and runs on; the
    caller holds nothing (every received fd is closed).
    """
    try:
        sock = _connect(path, timeout)
    except OSError:
        return None
    sessions: list[tuple[KeptSession, list[int]]] = []

    def let_go() -> None:
        for _, mine in sessions:
            close_fds(mine)
        sessions.clear()

    try:
        previous = _ask_hello(sock)
        caps = set(previous.capabilities) if previous is not None else set(BASE_CAPABILITIES)
        for _ in range(HAND_OVER_ROUNDS):
            sessions = reclaim_all(sock)
            if "hand_over" not in caps:
                send_packet(sock, Stop())  # an old keeper: safe while nobody deposits
                return TakenOver(sessions, previous, "stop")
            send_packet(sock, HandOver(keys=[row.key for row, _ in sessions]))
            reply, fds = recv_packet(sock, REPLIES)
            close_fds(fds)
            if isinstance(reply, HandedOver) and reply.ok:
                return TakenOver(sessions, previous, "hand_over")
            let_go()
            if not isinstance(reply, HandedOver):
                raise TakeOverFailed(f"the keeper at {path} answered {reply!r} to hand_over")
        raise TakeOverFailed(
            f"sessions kept arriving at the keeper at {path} during {HAND_OVER_ROUNDS} rounds"
        )
    except (OSError, KeeperProtocolError) as exc:
        let_go()
        raise TakeOverFailed(f"hand-over from the keeper at {path} failed: {exc}") from None
    finally:
        sock.close()


def deposit_into(path: str | Path, sessions: Iterable[tuple[KeptSession, list[int]]]) -> int:
    """Deposit ``sessions`` (records and fds) with the keeper at ``path``; returns how many.

    The last resort of a take-over that could not get the lock: whoever holds it gets
    the sessions. Raises OSError if no keeper takes them."""
    sock = _connect(path, 2.0)
    count = 0
    try:
        for row, fds in sessions:
            send_packet(sock, Deposit(key=row.key, info=row.info), fds)
            count += 1
    finally:
        sock.close()
    return count


def launch_keeper(
    python: str, env: dict[str, str], log_path: Path, extra_args: Sequence[str] = ()
) -> tuple[int, int]:
    """Start ``python -P -m actors.keeper --ready-fd N [extra_args]`` in a session of its
    own (``setsid``: no signal for the starter's group or terminal reaches it), output
    appended to ``log_path`` (0600). Returns its pid and the read end of its ready pipe
    (``wait_keeper_ready``); the caller closes it."""
    read_fd, write_fd = os.pipe()
    try:
        log_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        raise
    argv = [python, "-P", "-m", KEEPER_MODULE, "--ready-fd", str(write_fd), *extra_args]
    try:
        pid = os.posix_spawn(
            python,
            argv,
            env,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, log_fd, 1),
                (os.POSIX_SPAWN_DUP2, log_fd, 2),
                (os.POSIX_SPAWN_DUP2, write_fd, write_fd),  # clears close-on-exec
            ],
            setsid=True,
        )
    except OSError:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
        os.close(log_fd)
    return pid, read_fd


def wait_keeper_ready(read_fd: int, timeout: float) -> str:
    """The line a launched keeper wrote on its ready fd (blocking): ``ready``, or
    ``failed <why>``; ``timeout`` or ``exited`` if it wrote nothing. Closes ``read_fd``."""
    return read_ready_line(read_fd, timeout) or "exited"
