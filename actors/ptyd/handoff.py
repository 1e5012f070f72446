"""Crash survival: PTY master fds kept by a *keeper* (the supervisor) across ``ptyd`` deaths.

If the last fd of a PTY master closes, the kernel hangs the terminal up and every
agent on it gets SIGHUP. A ``kill -9`` of ``ptyd`` closes its fds, so a second
process must hold duplicates: the keeper. ``ptyd`` deposits a duplicate of every
master (SCM_RIGHTS over a Unix ``SOCK_SEQPACKET`` socket, one JSON message per packet)
as soon as the session exists, keeps the keeper's copy of the session record current,
and withdraws it when the session is closed. A restarted ``ptyd`` reclaims every
deposit with its record and resumes reading: output written meanwhile waited in the
kernel's PTY buffer (the child blocked when it filled), so nothing is lost.

What the keeper (the supervisor) must do - all of it is in :class:`KeeperState` plus a
socket loop (``serve_keeper_connection`` is a blocking reference shell):

1. ``prctl(PR_SET_CHILD_SUBREAPER, 1)`` before starting ``ptyd``, so the agents
   orphaned by a ``ptyd`` crash are re-parented to it, not to init.
2. Listen on a Unix SEQPACKET socket (0600) at ``<runtime dir>/ptyd-keeper.sock``
   (``KEEPER_SOCKET_NAME``; another path can be passed in ``ORCA_PTYD_FD_KEEPER``); feed each received packet and its fds to
   :meth:`KeeperState.handle` and send back what it returns.
3. On SIGCHLD, ``waitpid(-1, WNOHANG)`` in a loop; for a pid that is not one of its
   own actors, call :meth:`KeeperState.record_exit` (it keeps the status for the
   session whose child it was; statuses of unknown pids are ignored).
4. Never read from or write to a kept fd; close every kept fd on ``orca down`` (that
   hangs the terminals up, which is what stopping Orca means).

Messages (``ptyd`` → keeper): ``deposit`` {key, info} + the master fd and, when
output is journaled, the output pipe's two ends; ``update`` {key, info};
``withdraw`` {key}; ``exit_status`` {key} → {status: wait status or null} (for an
adopted child the keeper reaped); ``reclaim`` {} → keeper replies with ``sessions`` packets
{sessions: [{key, info, exitStatus?, fds: count}]} carrying their fds in order (at most
``FDS_PER_PACKET`` each) and a final ``end`` packet.
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from actors.ptyd.info import SessionInfo
from actors.ptyd.spawn import exit_code_of

log = logging.getLogger(__name__)

KEEPER_ENV = "ORCA_PTYD_FD_KEEPER"
# Where the supervisor listens unless KEEPER_ENV says otherwise (in the runtime dir).
KEEPER_SOCKET_NAME = "ptyd-keeper.sock"
# SCM_RIGHTS carries at most 253 fds per message (SCM_MAX_FD); stay well below.
FDS_PER_PACKET = 128
# A session's fds: the PTY master and both ends of its output pipe (history.py).
FDS_PER_SESSION = 3
# Largest packet: a batch of FDS_PER_PACKET records (~1 KiB each) fits easily.
MAX_PACKET = 1024 * 1024
# A keeper that does not take a packet within this is treated as gone.
SEND_TIMEOUT_S = 1.0


class KeeperProtocolError(ValueError):
    """A packet that is not a keeper message (the sender is at fault)."""


def send_packet(sock: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    """Send one JSON message with ``fds`` attached as SCM_RIGHTS."""
    data = json.dumps(message).encode()
    if fds:
        socket.send_fds(sock, [data], fds)
    else:
        sock.sendall(data)


def recv_packet(sock: socket.socket) -> tuple[dict[str, Any] | None, list[int]]:
    """Receive one message and its fds; (None, []) when the peer closed."""
    data, fds, _flags, _addr = socket.recv_fds(sock, MAX_PACKET, FDS_PER_PACKET)
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    try:
        message = json.loads(data)
    except ValueError as exc:
        for fd in fds:
            os.close(fd)
        raise KeeperProtocolError(f"not a JSON packet: {exc}") from None
    if not isinstance(message, dict) or not isinstance(message.get("op"), str):
        for fd in fds:
            os.close(fd)
        raise KeeperProtocolError("a packet is a JSON object with an 'op'")
    return message, list(fds)


def info_to_record(info: SessionInfo) -> dict[str, Any]:
    return asdict(info)


def info_from_record(record: dict[str, Any]) -> SessionInfo:
    return SessionInfo(**record)


@dataclass
class _Kept:
    info: dict[str, Any]
    fds: list[int]  # the PTY master, then the output pipe's read and write ends
    exit_status: int | None = None

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)


@dataclass(frozen=True)
class Reply:
    message: dict[str, Any]
    fds: list[int]


class KeeperState:
    """The keeper's table: one kept master fd and record per session. Pure but for close()."""

    def __init__(self) -> None:
        self._kept: dict[str, _Kept] = {}

    def __len__(self) -> int:
        return len(self._kept)

    def handle(self, message: dict[str, Any], fds: list[int]) -> list[Reply]:
        """Apply one packet from ``ptyd``; returns the packets to send back."""
        op = message.get("op")
        key = message.get("key")
        if op == "deposit" and isinstance(key, str) and 1 <= len(fds) <= FDS_PER_SESSION:
            old = self._kept.pop(key, None)
            if old is not None:
                old.close()
            self._kept[key] = _Kept(dict(message.get("info") or {}), list(fds))
            return []
        for fd in fds:  # fds only travel with a deposit
            os.close(fd)
        if op == "update" and isinstance(key, str):
            if key in self._kept:  # else withdrawn meanwhile: nothing to update
                self._kept[key].info = dict(message.get("info") or {})
            return []
        if op == "withdraw" and isinstance(key, str):
            kept = self._kept.pop(key, None)
            if kept is not None:
                kept.close()
            return []
        if op == "reclaim":
            return list(self._reclaim_packets())
        if op == "exit_status" and isinstance(key, str):
            kept = self._kept.get(key)
            status = kept.exit_status if kept is not None else None
            return [Reply({"op": "exit_status", "key": key, "status": status}, [])]
        raise KeeperProtocolError(f"unknown or malformed keeper op {op!r}")

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

    def _reclaim_packets(self) -> Iterator[Reply]:
        items = list(self._kept.items())
        per_packet = FDS_PER_PACKET // FDS_PER_SESSION
        for i in range(0, len(items), per_packet):
            batch = items[i : i + per_packet]
            rows = [
                {
                    "key": key,
                    "info": kept.info,
                    "exitStatus": kept.exit_status,
                    "fds": len(kept.fds),
                }
                for key, kept in batch
            ]
            fds = [fd for _, kept in batch for fd in kept.fds]
            yield Reply({"op": "sessions", "sessions": rows}, fds)
        yield Reply({"op": "end"}, [])


def serve_keeper_connection(conn: socket.socket, state: KeeperState) -> None:
    """Blocking reference shell: serve one ``ptyd`` connection until it closes."""
    while True:
        message, fds = recv_packet(conn)
        if message is None:
            return
        for reply in state.handle(message, fds):
            send_packet(conn, reply.message, reply.fds)


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
        self._send({"op": "deposit", "key": info.history_key, "info": info_to_record(info)}, fds)

    def update(self, info: SessionInfo) -> None:
        self._send({"op": "update", "key": info.history_key, "info": info_to_record(info)})

    def withdraw(self, key: str) -> None:
        self._send({"op": "withdraw", "key": key})

    def reclaim(self) -> list[tuple[SessionInfo, list[int]]]:
        """Every kept session with fresh fds (non-blocking, close-on-exec); exits applied."""
        self._send({"op": "reclaim"})
        out: list[tuple[SessionInfo, list[int]]] = []
        while True:
            message, fds = recv_packet(self._sock)
            if message is None or message["op"] == "end":
                return out
            for row in message["sessions"]:
                count = int(row["fds"])
                mine, fds = fds[:count], fds[count:]
                info = info_from_record(row["info"])
                if row.get("exitStatus") is not None:
                    info.exit_code = exit_code_of(int(row["exitStatus"]))
                for fd in mine:
                    os.set_blocking(fd, False)
                out.append((info, mine))

    def exit_status(self, key: str) -> int | None:
        """The wait status the keeper recorded for an adopted session's child, if any."""
        self._send({"op": "exit_status", "key": key})
        if self.broken:
            return None
        try:
            message, _ = recv_packet(self._sock)
        except (OSError, KeeperProtocolError):
            return None
        status = message.get("status") if message else None
        return status if isinstance(status, int) else None

    def close(self) -> None:
        self._sock.close()

    def _send(self, message: dict[str, Any], fds: list[int] | None = None) -> None:
        if self.broken:
            return
        try:
            send_packet(self._sock, message, fds)
        except OSError as exc:
            # The keeper is gone: sessions keep running, only crash survival is lost.
            self.broken = True
            log.error("fd keeper at %s unreachable (%s): crash survival is off", self.path, exc)
