"""The keeper's table (``KeeperState``): one kept master fd and record per session, and
the answer to each message of the keeper protocol (``orca.contracts.fd_keeper``). Pure
but for closing fds; the keeper's shell (``actors/keeper/service.py``) is a socket loop
around it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from orca import PROTOCOL_VERSION, __version__
from orca.build import build_id
from orca.contracts.fd_keeper import (
    CAPABILITIES,
    FDS_PER_PACKET,
    FDS_PER_SESSION,
    RECLAIM_BYTES,
    Deposit,
    End,
    Exited,
    ExitStatus,
    HandedOver,
    HandOver,
    Hello,
    KeeperHello,
    KeeperProtocolError,
    KeptSession,
    Message,
    Reclaim,
    Request,
    Sessions,
    Stop,
    Update,
    WatchOrcad,
    Withdraw,
    check_record,
    close_fds,
)
from orca.wire.records import encode

# No dataclasses here: the keeper stays off their imports (``inspect``, ``ast``: 1 MiB).


class _Kept:
    __slots__ = ("exit_status", "fds", "info")

    def __init__(self, info: dict[str, Any], fds: list[int], exit_status: int | None = None):
        self.info = info
        self.fds = fds  # the PTY master, then the output pipe's read and write ends
        self.exit_status = exit_status

    def close(self) -> None:
        close_fds(self.fds)


class Packet(NamedTuple):
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
            row_size = len(encode(row)) + 1  # and its comma
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
