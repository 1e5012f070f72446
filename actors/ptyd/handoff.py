"""``ptyd``'s side of the fd-keeper protocol: ``KeeperLink`` (deposit, update, withdraw,
reclaim) over one connection to the keeper.

Crash survival: ``ptyd`` hands duplicates of every PTY master (and its output pipe) to
a keeper, the supervisor, so a ``kill -9`` of ``ptyd`` hangs no terminal up; a
restarted ``ptyd`` reclaims them and resumes reading. The protocol itself (messages,
packets, the keeper's table) is ``orca/contracts/fd_keeper.py``; this module only maps
``ptyd``'s ``SessionInfo`` onto it.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from actors.ptyd.info import SessionInfo
from actors.ptyd.spawn import exit_code_of
from orca.contracts.fd_keeper import (
    KEEPER_ENV,
    KEEPER_SOCKET_NAME,
    REPLIES,
    AskExitStatus,
    Deposit,
    ExitStatus,
    KeeperProtocolError,
    Message,
    Reclaim,
    Sessions,
    Update,
    Withdraw,
    close_fds,
    recv_packet,
    send_packet,
)

log = logging.getLogger(__name__)

# A keeper that does not take a packet within this is treated as gone.
SEND_TIMEOUT_S = 1.0


def info_to_record(info: SessionInfo) -> dict[str, Any]:
    return asdict(info)


def info_from_record(record: dict[str, Any]) -> SessionInfo:
    return SessionInfo(**record)


def find_keeper(environ: Mapping[str, str], runtime_dir: Path) -> str | None:
    """The keeper socket to use: ``ORCA_PTYD_FD_KEEPER``, else the supervisor's default."""
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
        self._sock.connect(path)
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

    def close(self) -> None:
        self._sock.close()

    def _send(self, message: Message, fds: Sequence[int] = ()) -> None:
        if self.broken:
            return
        try:
            send_packet(self._sock, message, fds)
        except OSError as exc:
            # The keeper is gone: sessions keep running, only crash survival is lost.
            self.broken = True
            log.error("fd keeper at %s unreachable (%s): crash survival is off", self.path, exc)
