"""``ptyd``'s side of the fd-keeper protocol: ``KeeperLink`` (deposit, update, withdraw,
reclaim) over one connection to the keeper, and ``keep_keeper_seeded``.

Crash survival: ``ptyd`` hands duplicates of every PTY master (and its output pipe) to
the keeper (``actors/keeper``, a process of its own), so a ``kill -9`` of ``ptyd`` hangs
no terminal up; a restarted ``ptyd`` reclaims them and resumes reading. The other way
round, ``ptyd`` still holds every master when the keeper dies: ``keep_keeper_seeded``
notices the hang-up, waits for the new keeper ``orcad`` starts and deposits every live
session again, so the next ``ptyd`` crash is survived too. And when ``ptyd`` stops
(``orcad`` died, or ``orca down``/``restart --all``), ``secure_with_keeper`` makes sure
a live keeper holds every live session before it goes, starting one itself if none
answers: so ``orcad`` and the keeper dying together loses no terminal. The protocol itself
(messages, packets, the keeper's table) is ``orca/contracts/fd_keeper.py``; this module
only maps ``ptyd``'s ``SessionInfo`` onto it.
"""

from __future__ import annotations

import errno
import logging
import os
import select
import socket
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

import trio
import trio.lowlevel

from actors.ptyd.info import SessionInfo
from actors.ptyd.spawn import exit_code_of
from orca.client.keeper import keeper_answers, launch_keeper, wait_keeper_ready
from orca.contracts.fd_keeper import (
    ANCILLARY_SPACE,
    KEEPER_ENV,
    KEEPER_SOCKET_NAME,
    MAX_PACKET,
    MAX_RECORD_BYTES,
    REPLIES,
    AskExitStatus,
    Deposit,
    ExitStatus,
    Hello,
    KeeperHello,
    KeeperProtocolError,
    Message,
    Reclaim,
    Sessions,
    Update,
    Withdraw,
    check_record,
    close_fds,
    fds_from,
    recv_packet,
    send_packet,
)
from orca.contracts.supervisor import SUPERVISOR_PID_ENV

log = logging.getLogger(__name__)

# A keeper that does not take a packet within this is treated as gone.
SEND_TIMEOUT_S = 1.0
# While no keeper answers, look for a new one this often: orcad restarts a dead keeper
# within ~0.1 s, and until ptyd re-seeds it a ptyd crash would hang the terminals up.
KEEPER_RETRY_S = 0.1
# On its way out, how long ptyd waits for some keeper to answer: the one it starts, or
# one orcad started just before it died (both race for the lock; the one ptyd starts
# waits as long for it). orcad gone, nobody stops ptyd, and a keeper's start can take
# seconds on a loaded machine (the suite's -n 3 on two cores); orcad alive (an orderly stop with the keeper
# down), well inside its grace before a SIGKILL (5 s), deposits included.
SECURE_WAIT_S = 10.0
SECURE_WAIT_ORDERLY_S = 2.0
SECURE_POLL_S = 0.05


def info_to_record(info: SessionInfo) -> dict[str, Any]:
    """The keeper's record of ``info``: an argv too long for one (a prompt of 200 KB
    passed on the command line) is kept shortened, so the terminal still survives a ptyd
    crash; ``term ls`` then shows its argv cut, each cut argument ending in ``…``."""
    record = asdict(info)
    try:
        check_record(info.history_key, record)
    except KeeperProtocolError:
        # (characters: 6 bytes each at worst, a JSON escape such as \u0001)
        record["argv"] = _shortened(info.argv, MAX_RECORD_BYTES // 8)
    return record


def _shortened(argv: list[str], budget: int) -> list[str]:
    """``argv`` with every argument cut to an equal share of ``budget`` characters."""
    share = max(16, budget // max(1, len(argv)))
    if len(argv) * 16 > budget:
        argv = argv[: budget // 16]
    return [a if len(a) <= share else a[: share - 1] + "…" for a in argv]


def info_from_record(record: dict[str, Any]) -> SessionInfo:
    return SessionInfo(**record)


def keeper_path(environ: Mapping[str, str], runtime_dir: Path) -> str:
    """Where the keeper listens: ``ORCA_PTYD_FD_KEEPER``, else the profile's default."""
    return environ.get(KEEPER_ENV) or str(runtime_dir / KEEPER_SOCKET_NAME)


def find_keeper(environ: Mapping[str, str], runtime_dir: Path) -> str | None:
    """The keeper socket to use: ``ORCA_PTYD_FD_KEEPER``, else the profile's default."""
    explicit = environ.get(KEEPER_ENV)
    if explicit:
        return explicit
    default = runtime_dir / KEEPER_SOCKET_NAME
    return str(default) if default.exists() else None


class KeeperLink:
    """``ptyd``'s side: deposit, update, withdraw and reclaim over one connection."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock.settimeout(SEND_TIMEOUT_S)
        try:
            self._sock.connect(path)
        except OSError:
            self._sock.close()
            raise
        self.broken = False

    def deposit(self, info: SessionInfo, fds: list[int]) -> None:
        """Hand the keeper duplicates of a session's fds (master first, then the pipe)."""
        self._send(Deposit(key=info.history_key, info=info_to_record(info)), fds)

    def update(self, info: SessionInfo) -> None:
        self._send(Update(key=info.history_key, info=info_to_record(info)))

    def withdraw(self, key: str) -> None:
        self._send(Withdraw(key=key))

    def reclaim(self) -> list[tuple[SessionInfo, list[int]]]:
        """Every kept session with fresh fds (non-blocking, close-on-exec); exits applied."""
        self._send(Reclaim())
        out: list[tuple[SessionInfo, list[int]]] = []
        while True:
            message, fds = recv_packet(self._sock, REPLIES)
            if message is None or not isinstance(message, Sessions):
                close_fds(fds)
                return out  # ``end`` (or the keeper hung up)
            for row in message.sessions:
                mine, fds = fds[: row.fds], fds[row.fds :]
                info = info_from_record(row.info)
                if row.exit_status is not None:
                    info.exit_code = exit_code_of(row.exit_status)
                for fd in mine:
                    os.set_blocking(fd, False)
                out.append((info, mine))
            close_fds(fds)  # more fds than the rows claimed: not ours to keep

    def exit_status(self, key: str) -> int | None:
        """The wait status the keeper recorded for an adopted session's child, if any."""
        self._send(AskExitStatus(key=key))
        if self.broken:
            return None
        try:
            message, _ = recv_packet(self._sock, REPLIES)
        except (OSError, KeeperProtocolError):
            return None
        return message.status if isinstance(message, ExitStatus) else None

    def confirm(self) -> bool:
        """Whether the keeper is alive and has handled everything sent so far (a ``hello``
        round trip: one connection is served in order). Blocking, no checkpoint, so no
        other task reads the reply. A keeper predating ``hello`` does not answer; then
        its listener answering is the best evidence there is."""
        if self.broken:
            return False
        # hung_up() only when something waits: on a socket with a timeout, recvmsg
        # waits for that long instead of raising BlockingIOError.
        if select.select([self._sock], [], [], 0)[0] and self.hung_up():
            return False
        try:
            send_packet(self._sock, Hello())
            if select.select([self._sock], [], [], SEND_TIMEOUT_S)[0]:
                message, fds = recv_packet(self._sock, REPLIES)
                close_fds(fds)
                return isinstance(message, KeeperHello)
        except (OSError, KeeperProtocolError):
            self.broken = True
            return False
        return keeper_answers(self.path)

    def fileno(self) -> int:
        return self._sock.fileno()

    def hung_up(self) -> bool:
        """Whether the keeper closed its end. Called when the socket is readable, between
        requests: every reply is read by the request that asked for it, so what is
        waiting now is either the hang-up or a reply that came after its timeout (dropped)."""
        while True:
            try:
                data, ancdata, _flags, _addr = self._sock.recvmsg(
                    MAX_PACKET, ANCILLARY_SPACE, socket.MSG_DONTWAIT
                )
            except BlockingIOError:
                return False
            except OSError as exc:
                return exc.errno != errno.EINTR
            close_fds(fds_from(ancdata))
            if not data:
                return True

    def close(self) -> None:
        self._sock.close()

    def _send(self, message: Message, fds: Sequence[int] = ()) -> None:
        if self.broken:
            return
        try:
            if isinstance(message, Deposit | Update):
                check_record(message.key, message.info)
            send_packet(self._sock, message, fds)
        except KeeperProtocolError as exc:  # (the keeper would refuse it alike)
            key = getattr(message, "key", "?")
            log.error("session %s not kept by the fd keeper: %s (no crash survival)", key, exc)
        except OSError as exc:
            # The keeper is gone: sessions keep running, only crash survival is lost.
            self.broken = True
            log.error("fd keeper at %s unreachable (%s): crash survival is off", self.path, exc)


# -- re-seeding a restarted keeper --------------------------------------------------
class _Session(Protocol):
    info: SessionInfo
    master_fd: int
    pipe: tuple[int, int] | None

    @property
    def output_done(self) -> trio.Event: ...


class _Table(Protocol):
    def sessions(self) -> Iterable[_Session]: ...


class KeeperHolder(Protocol):
    """What ``keep_keeper_seeded`` needs of ``ptyd``: its link and its sessions."""

    keeper: KeeperLink | None

    @property
    def table(self) -> _Table: ...


def deposit_all(link: KeeperLink, sessions: Iterable[_Session]) -> int:
    """Deposit every session whose master is still open; returns how many."""
    count = 0
    for session in sessions:
        if session.output_done.is_set():
            continue  # hung up: its fds are closed, only its record is left (not re-seeded)
        link.deposit(session.info, [session.master_fd, *(session.pipe or ())])
        count += 1
    return count


async def keep_keeper_seeded(holder: KeeperHolder, path: str) -> None:
    """For ptyd's life: whenever no keeper holds our sessions (it died, or none answered
    at start), wait for one at ``path`` and deposit every live session with it.

    Invariant: ``holder.keeper`` is either None or a link whose keeper has every live
    session (``handlers.spawn`` deposits new ones as they come), except for the moment
    between a keeper's death and this task noticing it.
    """
    while True:
        link = holder.keeper
        if link is not None:
            if not link.broken:
                try:
                    await trio.lowlevel.wait_readable(link.fileno())
                except (OSError, trio.ClosedResourceError):
                    pass
                if not link.hung_up() and not link.broken:
                    continue
            trio.lowlevel.notify_closing(link.fileno())
            link.close()
            if holder.keeper is not link:
                continue  # replaced meanwhile (secure_with_keeper): follow the new link
            log.error("fd keeper at %s is gone: waiting for a new one", link.path)
            holder.keeper = None
        try:
            fresh = KeeperLink(path)
        except OSError:
            await trio.sleep(KEEPER_RETRY_S)
            continue
        count = deposit_all(fresh, holder.table.sessions())
        if fresh.broken:
            fresh.close()
            await trio.sleep(KEEPER_RETRY_S)
            continue
        holder.keeper = fresh
        log.info("fd keeper at %s re-seeded with %d session(s)", path, count)


def secure_with_keeper(holder: KeeperHolder, path: str, log_path: Path) -> int:
    """On ``ptyd``'s way out: leave every live session with a live keeper; returns how
    many were deposited now (0: the keeper had them all already, or nothing is live).

    The link's keeper is asked to confirm (``KeeperLink.confirm``); if it is gone
    (killed with ``orcad``, say), the sessions go to whichever keeper answers at
    ``path``, and if none does, to one started here (``reach_keeper``), which outlives
    ``ptyd`` like any keeper. Blocking: called from a stop callback, when nothing else
    matters. A failure is logged; the terminals then end with ``ptyd``, as before.

    Only for a ``ptyd`` given a keeper (``ORCA_PTYD_FD_KEEPER``, which orcad always
    sets): a standalone one (tests, a debugging run) has none and starts none."""
    if not os.environ.get(KEEPER_ENV):
        return 0
    live = [s for s in holder.table.sessions() if not s.output_done.is_set()]
    if not live:
        return 0
    link = holder.keeper
    if link is not None and link.confirm():
        return 0
    log.error("no keeper holds the %d live session(s): securing them before ptyd stops", len(live))
    budget = SECURE_WAIT_S if orcad_gone() else SECURE_WAIT_ORDERLY_S
    deadline = time.monotonic() + budget
    while (remaining := deadline - time.monotonic()) > 0:
        fresh = reach_keeper(path, log_path, remaining)
        if fresh is None:
            return 0
        count = deposit_all(fresh, live)
        if fresh.confirm():
            holder.keeper = fresh  # the old link is closed by keep_keeper_seeded
            log.info("secured %d live session(s) with the keeper at %s", count, path)
            return count
        # A keeper dying as we connected (its listener takes a connection into its
        # backlog a moment before the kernel closes it): what we sent died with it.
        # Again, with whichever keeper answers next, or one started for it.
        fresh.close()
        log.error("the keeper at %s did not confirm the deposits: trying again", path)
    log.error("no keeper took the terminals within %gs: they end with ptyd", budget)
    return 0


def orcad_gone() -> bool:
    """Whether the orcad that started this ptyd has died (ptyd was reparented)."""
    parent = os.environ.get(SUPERVISOR_PID_ENV)
    return parent is None or not parent.isdigit() or os.getppid() != int(parent)


def reach_keeper(path: str, log_path: Path, budget: float) -> KeeperLink | None:
    """A link to whichever keeper answers at ``path`` within ``budget`` seconds, having
    started one (``launch_keeper``) if none answered at once; None if none did.

    Blocking. Whoever answers is good: orcad may have started a keeper just before it
    was killed, and then that one or ours wins the lock and the other exits, so ptyd
    keeps trying the socket rather than waiting on its own keeper's word alone."""
    deadline = time.monotonic() + budget
    ready_fd: int | None = None
    launched = False
    try:
        while True:
            try:
                return KeeperLink(path)
            except OSError as exc:
                failure = exc
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                log.error(
                    "no keeper answered at %s within %gs (%s): the terminals end with ptyd",
                    path,
                    budget,
                    failure,
                )
                return None
            if not launched:
                launched = True
                try:
                    _pid, ready_fd = launch_keeper(
                        sys.executable,
                        dict(os.environ),
                        log_path,
                        ["--wait-lock", str(budget)],
                    )
                except OSError as exc:
                    log.error("cannot start a keeper (%s): waiting for another", exc)
            pause = min(SECURE_POLL_S, remaining)
            if ready_fd is not None and select.select([ready_fd], [], [], pause)[0]:
                # Our keeper's word ("ready", or why not): logged; the socket decides.
                verdict = wait_keeper_ready(ready_fd, pause)
                ready_fd = None
                log.info("the keeper started for the terminals: %s", verdict)
            elif ready_fd is None:
                time.sleep(pause)
    finally:
        if ready_fd is not None:
            os.close(ready_fd)
