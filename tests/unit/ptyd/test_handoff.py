"""ptyd's side of the fd keeper (KeeperLink) against orcad's real keeper (issue 6).

The protocol itself (packets, the keeper's table) is tested in
``tests/unit/contracts/test_fd_keeper.py``.
"""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
import trio
from support.procs import kill_all

from actors.keeper.service import FdKeeper
from actors.ptyd import handoff
from actors.ptyd.handoff import KeeperLink
from actors.ptyd.info import SessionInfo
from orca.contracts.fd_keeper import (
    KEEPER_ENV,
    KEEPER_LOCK_NAME,
    KEEPER_SOCKET_NAME,
    KeeperLockInfo,
    encode_keeper_lock,
)
from orca.fsio import FileLock
from orca.paths import OrcaPaths

ROOT = Path(__file__).resolve().parents[3]


def info(n: int, pid: int = 4242) -> SessionInfo:
    return SessionInfo(
        session_id=f"r::/w@@{n:08x}",
        worktree_id="r::/w",
        pane_key=f"t:{n}",
        tab_id="t",
        argv=["sh"],
        cwd="/",
        pid=pid + n,
        cols=80,
        rows=24,
        launch_token_sha256="0" * 64,
        history_key=f"r::/w@@{n:08x}",
    )


# orcad's keeper (actors/supervisor/keeper.py) alone in a process, until SIGTERM.
KEEPER_CHILD = """
import signal, sys
from actors.keeper.service import FdKeeper

keeper = FdKeeper(sys.argv[1])
signal.signal(signal.SIGTERM, lambda *_: keeper.stop())
keeper.serve(on_ready=lambda: print("ready", flush=True))
"""


def test_fds_survive_the_depositor_between_two_processes(tmp_path: Path) -> None:
    """The fd keeper holds a deposited pipe end after the depositor closed its own, and a
    second connection reclaims it with its record."""
    sock_path = str(tmp_path / "k.sock")
    keeper = subprocess.Popen(
        [sys.executable, "-c", KEEPER_CHILD, sock_path],
        stdout=subprocess.PIPE,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    try:
        assert keeper.stdout is not None
        assert keeper.stdout.readline() == b"ready\n"
        r, w = os.pipe()
        deposited = info(1)
        first = KeeperLink(sock_path)
        first.deposit(deposited, [r, r, w])
        first.close()
        os.close(r)  # only the keeper holds the read end now
        os.write(w, b"kept across")
        second = KeeperLink(sock_path)
        assert second.exit_status(deposited.history_key) is None  # nothing reaped
        reclaimed = second.reclaim()
        second.close()
        assert [i for i, _ in reclaimed] == [deposited], "the record comes back unchanged"
        fds = reclaimed[0][1]
        assert len(fds) == 3
        assert os.read(fds[0], 100) == b"kept across"
        for fd in fds:
            os.close(fd)
        os.close(w)
        keeper.terminate()
        assert keeper.wait(10) == 0
    finally:
        keeper.kill()
        keeper.wait()
        if keeper.stdout:
            keeper.stdout.close()


class _Session:
    """What ``secure_with_keeper`` reads of a ptyd session: its record and its fds."""

    def __init__(self, info: SessionInfo, master_fd: int) -> None:
        self.info, self.master_fd, self.pipe = info, master_fd, None
        self._done = trio.Event()

    @property
    def output_done(self) -> trio.Event:
        return self._done


class _Ptyd:
    def __init__(self, sessions: list[_Session]) -> None:
        self.keeper: KeeperLink | None = None
        self._sessions = sessions

    @property
    def table(self) -> _Ptyd:
        return self

    def sessions(self) -> list[_Session]:
        return self._sessions


@contextmanager
def stopping_ptyd(n: int) -> Iterator[_Ptyd]:
    """A ptyd on its way out holding one live session (a pipe for its master); the
    keeper it may start, its link and the pipe are gone afterwards."""
    r, w = os.pipe()
    ptyd = _Ptyd([_Session(info(n), r)])
    ours = set(psutil.Process().children())
    try:
        yield ptyd
    finally:
        started = [p for p in psutil.Process().children() if p not in ours]
        kill_all([p.pid for p in started])  # the keeper ptyd started
        if ptyd.keeper is not None:
            ptyd.keeper.close()
        os.close(r)
        os.close(w)


def test_a_stopping_ptyd_waits_for_the_keeper_orcad_started_before_it_died(
    orca_paths: OrcaPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    """orcad started a keeper just before it was killed with the old one (the race CI
    hit): that keeper holds the lock but serves only seconds later, so the one ptyd
    starts on its way out loses the lock. ptyd waits for whichever keeper answers, and
    the terminal is kept (before: one look after ~1 s, and the terminal ended)."""
    runtime = orca_paths.runtime_dir
    sock_path = str(runtime / KEEPER_SOCKET_NAME)
    monkeypatch.setenv(KEEPER_ENV, sock_path)
    lock = FileLock(runtime / KEEPER_LOCK_NAME)
    lock.acquire(encode_keeper_lock(KeeperLockInfo(pid=os.getpid(), socket=sock_path)))
    late = FdKeeper(sock_path)
    # Past the ~1.5 s ptyd used to give a keeper, well inside SECURE_WAIT_S.
    serve_after = 3.0

    def serve_late() -> None:
        time.sleep(serve_after)
        late.serve()

    server = threading.Thread(target=serve_late, daemon=True)
    server.start()
    try:
        with stopping_ptyd(7) as ptyd:  # its keeper loses the lock
            keeper_log = orca_paths.log_file("keeper")
            assert handoff.secure_with_keeper(ptyd, sock_path, keeper_log) == 1
            assert late.state.keys() == [info(7).history_key], "the late keeper holds it"
    finally:
        late.stop()
        server.join(10)
        late.close()
        lock.release()


def test_a_keeper_dying_as_ptyd_connects_is_not_taken_for_the_one_holding_the_terminals(
    orca_paths: OrcaPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The keeper killed with orcad: its listener took ptyd's connection into its backlog
    a moment before the kernel closed it, so the deposits went nowhere (CI, run 1 of
    50cd94f: ptyd logged "did not confirm", then "secured", and the terminal ended with
    it). ptyd tries again, starts a keeper of its own, and that one holds the terminal."""
    runtime = orca_paths.runtime_dir
    sock_path = str(runtime / KEEPER_SOCKET_NAME)
    monkeypatch.setenv(KEEPER_ENV, sock_path)
    dying = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    dying.bind(sock_path)
    dying.listen(8)

    def die_after_the_first_connection() -> None:
        select.select([dying], [], [], 30)  # a connection waits in the backlog
        dying.close()  # the kill: never accepted; the stale socket file stays

    killer = threading.Thread(target=die_after_the_first_connection, daemon=True)
    killer.start()
    try:
        with stopping_ptyd(9) as ptyd:
            keeper_log = orca_paths.log_file("keeper")
            assert handoff.secure_with_keeper(ptyd, sock_path, keeper_log) == 1
            assert ptyd.keeper is not None and ptyd.keeper.confirm()
            ptyd.keeper.close()
            ptyd.keeper = None
            check = KeeperLink(sock_path)
            try:
                kept = check.reclaim()
            finally:
                check.close()
            assert [i.history_key for i, _ in kept] == [info(9).history_key]
            for _, fds in kept:
                for fd in fds:
                    os.close(fd)
    finally:
        killer.join(10)
