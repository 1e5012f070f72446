"""A blocking client of the fd keeper (``orca.contracts.fd_keeper``'s protocol): whether
one answers and who it is (orcad, ptyd, the CLI), launching one (orcad, ptyd, ``orca
restart --all``), and the take-over of a keeper by its successor (``take_over``,
``deposit_into``: ``actors/keeper/__main__.py``). Standard library and the contract
only: no trio, nothing under ``actors/``.
"""

from __future__ import annotations

import select
import socket
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from orca.contracts.fd_keeper import (
    BASE_CAPABILITIES,
    HAND_OVER_ROUNDS,
    HELLO_TIMEOUT_S,
    KEEPER_MODULE,
    REPLIES,
    Deposit,
    HandedOver,
    HandOver,
    Hello,
    KeeperHello,
    KeeperProtocolError,
    KeptSession,
    Reclaim,
    Sessions,
    Stop,
    close_fds,
    recv_packet,
    send_packet,
)
from orca.daemon import spawn_detached
from orca.pipes import read_ready_line


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


class TakenOver(NamedTuple):
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
    """Start ``python -P -m actors.keeper --ready-fd N [extra_args]`` detached
    (``orca.daemon.spawn_detached``: a session of its own, so no signal for the starter's
    group or terminal reaches it), output appended to ``log_path`` (0600). Returns its
    pid and the read end of its ready pipe (``wait_keeper_ready``); the caller closes it."""
    from orca.build import BUILD_ENV, starter_build

    env = {**env, BUILD_ENV: starter_build()}  # the keeper need not hash the same files
    pid, read_fd, _ = spawn_detached(python, ("-P", "-m", KEEPER_MODULE), env, log_path, extra_args)
    return pid, read_fd


def wait_keeper_ready(read_fd: int, timeout: float) -> str:
    """The line a launched keeper wrote on its ready fd (blocking): ``ready``, or
    ``failed <why>``; ``timeout`` or ``exited`` if it wrote nothing. Closes ``read_fd``."""
    return read_ready_line(read_fd, timeout) or "exited"
