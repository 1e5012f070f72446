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
  session, not orcad's child process group, nothing watching orcad); the next
  ``orca up`` finds it answering and the new ``ptyd`` reclaims every session.

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
- ``update {key, info}``: the session record changed (rename, resize, exit);
- ``withdraw {key}``: the session is closed, the keeper closes its fds;
- ``exit_status {key}`` → ``exit_status {key, status}``: the wait status the keeper
  recorded for an adopted child it reaped (``null`` if none);
- ``reclaim {}`` → ``sessions {sessions: [{key, info, exitStatus, fds}]}`` packets
  carrying the sessions' fds in order (``fds`` of them each, at most
  ``FDS_PER_PACKET`` a packet), then one ``end {}`` packet.

``orcad`` → keeper:
- ``exited {pid, status}``: ``orcad`` (the child subreaper, an ancestor of every agent)
  reaped an agent orphaned by a ``ptyd`` crash; the keeper records the wait status on
  the session with that ``pid`` for the restarted ``ptyd`` (unknown pids are ignored);
- ``stop {}``: ``orca down``: close every kept fd (the terminals hang up, which is what
  stopping Orca means) and exit.

``info`` is ``ptyd``'s session record, opaque to the keeper except for ``pid`` (an int),
which ties a reaped orphan's status to its session.

What the keeper must do (``KeeperState`` is its table; the keeper is a socket loop
around it, ``actors/keeper/service.py``):

1. Listen on the socket; feed each received message and its fds to
   ``KeeperState.handle`` and send back the packets it returns.
2. Never read from or write to a kept fd; close every kept fd on ``stop`` or SIGTERM.

Who reaps an agent whose ``ptyd`` died: ``orcad``, the child subreaper (only an
ancestor can be: the kernel re-parents an orphan to its nearest subreaper ancestor),
which forwards the status as ``exited``. If ``orcad`` is gone too, the orphan goes to
the next subreaper up (``systemd --user`` under ``orca service install``) or init; its
output is complete, its exit code unknown (``-1``).

Errors: ``KeeperProtocolError`` (a packet that is not a keeper message: the sender is
at fault; the receiver logs it, drops the packet and keeps serving).
"""

from __future__ import annotations

import array
import os
import socket
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from orca.fsio import read_lock_holder

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


_LOCK_DECODER = msgspec.json.Decoder(KeeperLockInfo)


def encode_keeper_lock(info: KeeperLockInfo) -> bytes:
    return msgspec.json.encode(info)


def read_keeper_lock(path: Path) -> KeeperLockInfo | None:
    """The running keeper named by the lock at ``path``; None if nobody holds it."""
    raw = read_lock_holder(path)
    if raw is None:
        return None
    try:
        return _LOCK_DECODER.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
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


Request = Deposit | Update | Withdraw | Reclaim | AskExitStatus | Exited | Stop


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


Reply = Sessions | End | ExitStatus

M = TypeVar("M", bound=Message)

REQUESTS: msgspec.json.Decoder[Request] = msgspec.json.Decoder(Request)
REPLIES: msgspec.json.Decoder[Reply] = msgspec.json.Decoder(Reply)
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
    data: bytes, ancdata: Ancillary, decoder: msgspec.json.Decoder[M]
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
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        close_fds(fds)
        raise KeeperProtocolError(f"not a keeper message: {exc}") from None


def send_packet(sock: socket.socket, message: Message, fds: Sequence[int] = ()) -> None:
    """Blocking send of one message and its fds."""
    buffers, ancdata = encode_packet(message, fds)
    sock.sendmsg(buffers, ancdata)


def recv_packet(
    sock: socket.socket, decoder: msgspec.json.Decoder[M]
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

    def __len__(self) -> int:
        return len(self._kept)

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
            old = self._kept.pop(message.key, None)
            if old is not None:
                old.close()
            self._kept[message.key] = _Kept(dict(message.info), list(fds))
            return []
        close_fds(fds)  # fds only travel with a deposit
        if isinstance(message, Update):
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

    def _reclaim_packets(self) -> Iterator[Packet]:
        items = list(self._kept.items())
        per_packet = FDS_PER_PACKET // FDS_PER_SESSION
        for i in range(0, len(items), per_packet):
            batch = items[i : i + per_packet]
            rows = [
                KeptSession(
                    key=key, info=kept.info, exit_status=kept.exit_status, fds=len(kept.fds)
                )
                for key, kept in batch
            ]
            fds = [fd for _, kept in batch for fd in kept.fds]
            yield Packet(Sessions(sessions=rows), fds)
        yield Packet(End(), [])
