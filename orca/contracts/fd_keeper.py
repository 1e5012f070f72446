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
  the keeper is (``build`` as ``sys.hello``'s, ``orca.build.build_id``) and
  which messages it understands (``CAPABILITIES``). A keeper that does not answer
  within ``HELLO_TIMEOUT_S`` predates ``hello`` and understands ``BASE_CAPABILITIES``;
- ``hand_over {keys}`` → ``handed_over {ok, missing}``: the upgrade's hand-over
  (``orca restart --all``). The sender, a new keeper started with ``--take-over``,
  already holds duplicates of every session it ``reclaim``ed and names their keys;
  the old keeper answers ``ok`` and exits (closing its copies, releasing its lock)
  only if it holds no other key, else it answers ``missing`` and stays, and the sender
  reclaims again. An old keeper without ``hand_over`` gets ``stop`` after the reclaim
  instead, which is as safe only while no ``ptyd`` deposits (the CLI stops the old tree
  first). ``orca.client.keeper.take_over`` is the sender's side;
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

What the keeper must do (``KeeperState`` in ``actors/keeper/table.py`` is its table;
the keeper is a socket loop around it, ``actors/keeper/service.py``):

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
starts one with ``orca.client.keeper.launch_keeper`` and deposits them), so ``orcad`` and the keeper dying
together loses nothing either.

Errors: ``KeeperProtocolError`` (a packet that is not a keeper message: the sender is
at fault; the receiver logs it, drops the packet and keeps serving).
"""

from __future__ import annotations

import array
import os
import socket
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from orca.fsio import read_lock_holder
from orca.wire.errors import BadFrame, BadRequest
from orca.wire.records import JsonRecord, RecordDecoder, encode

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


class KeeperLockInfo(JsonRecord):
    """What the keeper's lock file says: who holds it and where it listens."""

    pid: int | None = None
    socket: str | None = None


_LOCK_DECODER: RecordDecoder[KeeperLockInfo] = RecordDecoder(
    [KeeperLockInfo], what="keeper lock file", max_bytes=None
)


def encode_keeper_lock(info: KeeperLockInfo) -> bytes:
    return encode(info)


def read_keeper_lock(path: Path) -> KeeperLockInfo | None:
    """The running keeper named by the lock at ``path``; None if nobody holds it."""
    raw = read_lock_holder(path)
    if raw is None:
        return None
    try:
        return _LOCK_DECODER.decode(raw)
    except BadFrame:
        return KeeperLockInfo()  # held, being written: a keeper with no name yet


class Message(JsonRecord, camel=True):
    """Base of every packet's JSON: an object tagged by ``op``."""


# -- ptyd → keeper ------------------------------------------------------------------
class Deposit(Message, tag="deposit"):
    key: str
    info: dict[str, Any]


class Update(Message, tag="update"):
    key: str
    info: dict[str, Any]


class Withdraw(Message, tag="withdraw"):
    key: str


class Reclaim(Message, tag="reclaim"):
    pass


class AskExitStatus(Message, tag="exit_status"):
    key: str


# -- orcad → keeper -----------------------------------------------------------------
class Exited(Message, tag="exited"):
    pid: int
    status: int


class Stop(Message, tag="stop"):
    pass


class Hello(Message, tag="hello"):
    pass


class HandOver(Message, tag="hand_over"):
    keys: list[str]


class WatchOrcad(Message, tag=WATCH_ORCAD):
    pass


Request = (
    Deposit
    | Update
    | Withdraw
    | Reclaim
    | AskExitStatus
    | Exited
    | Stop
    | Hello
    | HandOver
    | WatchOrcad
)


# -- keeper → ptyd ------------------------------------------------------------------
class KeptSession(JsonRecord, camel=True):
    """One reclaimed session: its record, the status of its reaped child, its fd count."""

    key: str
    info: dict[str, Any]
    exit_status: int | None = None
    fds: int


class Sessions(Message, tag="sessions"):
    sessions: list[KeptSession]


class End(Message, tag="end"):
    pass


class ExitStatus(Message, tag="exit_status"):
    key: str
    status: int | None = None


class KeeperHello(Message, tag="hello"):
    pid: int
    version: str
    build: str
    protocol: int
    capabilities: list[str]
    sessions: int


class HandedOver(Message, tag="handed_over"):
    ok: bool
    missing: list[str] = []  # noqa: RUF012 (a JsonRecord copies a list default per instance)


Reply = Sessions | End | ExitStatus | KeeperHello | HandedOver

M = TypeVar("M", bound=Message)

# Bounded decoders (orca/wire/records.py, the standard library's json: the keeper
# imports no msgspec): a packet nested past the recursion limit is refused, not raised.
REQUESTS: RecordDecoder[Request] = RecordDecoder(
    [Deposit, Update, Withdraw, Reclaim, AskExitStatus, Exited, Stop, Hello, HandOver, WatchOrcad],
    what="keeper request",
    max_bytes=MAX_PACKET,
)
REPLIES: RecordDecoder[Reply] = RecordDecoder(
    [Sessions, End, ExitStatus, KeeperHello, HandedOver], what="keeper reply", max_bytes=MAX_PACKET
)


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
    data = encode(message)
    if len(data) > MAX_PACKET:
        raise ValueError(f"a {len(data)}-byte packet exceeds MAX_PACKET ({MAX_PACKET})")
    if not fds:
        return [data], []
    return [data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())]


def decode_packet(
    data: bytes, ancdata: Ancillary, decoder: RecordDecoder[M]
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


def recv_packet(sock: socket.socket, decoder: RecordDecoder[M]) -> tuple[M | None, list[int]]:
    """Blocking receive of one message and its fds; ``(None, [])`` when the peer closed."""
    data, ancdata, _flags, _addr = sock.recvmsg(MAX_PACKET, ANCILLARY_SPACE)
    return decode_packet(data, ancdata, decoder)


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
    try:
        size = len(encode(worst))
    except (ValueError, TypeError) as exc:  # not JSON: no reclaim could carry it back
        raise KeeperProtocolError(f"a session record that is not JSON: {exc}") from None
    if size > MAX_RECORD_BYTES:
        raise KeeperProtocolError(
            f"a session record of {size} bytes is over MAX_RECORD_BYTES ({MAX_RECORD_BYTES})"
        )
