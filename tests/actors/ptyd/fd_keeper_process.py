"""A minimal fd keeper + ptyd restarter: what the supervisor must do for crash survival.

Run as ``python fd_keeper_process.py SOCKET_PATH PIDFILE``. It becomes a child
subreaper, serves the keeper socket with the keeper's ``KeeperState``
(``actors/keeper/table.py``, the same table the keeper uses), starts
``python -m actors.ptyd`` with ``ORCA_PTYD_FD_KEEPER`` set, reaps orphans (recording
their statuses) and restarts ptyd whenever it dies, writing ptyd's pid to PIDFILE
(atomically) each time. SIGTERM: stop ptyd, close every kept fd, exit.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import socket
import subprocess
import sys
from pathlib import Path

from actors.keeper.table import KeeperState
from orca.contracts.fd_keeper import (
    KEEPER_ENV,
    REQUESTS,
    KeeperProtocolError,
    recv_packet,
    send_packet,
)

PR_SET_CHILD_SUBREAPER = 36


def main() -> int:
    sock_path, pidfile = sys.argv[1], Path(sys.argv[2])
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    stopping = False

    def on_term(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGCHLD, lambda s, f: None)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(sock_path)
    listener.listen(4)
    state = KeeperState()
    conns: list[socket.socket] = []

    def start_ptyd() -> subprocess.Popen[bytes]:
        env = dict(os.environ, **{KEEPER_ENV: sock_path})
        proc = subprocess.Popen([sys.executable, "-m", "actors.ptyd"], env=env)
        tmp = pidfile.with_suffix(".tmp")
        tmp.write_text(str(proc.pid))
        os.replace(tmp, pidfile)
        return proc

    ptyd = start_ptyd()
    while not stopping:
        try:
            ready, _, _ = select.select([listener, wake_r, *conns], [], [])
        except InterruptedError:
            continue
        for r in ready:
            if r is listener:
                conn, _ = listener.accept()
                conns.append(conn)
            elif r is wake_r:
                os.read(wake_r, 1024)
            else:
                assert isinstance(r, socket.socket)
                try:
                    message, fds = recv_packet(r, REQUESTS)
                except (OSError, KeeperProtocolError):
                    message, fds = None, []
                if message is None:
                    conns.remove(r)
                    r.close()
                    continue
                try:
                    replies = state.handle(message, fds)
                except KeeperProtocolError:
                    continue
                for reply in replies:
                    send_packet(r, reply.message, reply.fds)
        # Reap: ptyd itself (restart it) and orphaned agents (record their status).
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid == ptyd.pid:
                ptyd.returncode = os.waitstatus_to_exitcode(status)
                if not stopping:
                    ptyd = start_ptyd()
            else:
                state.record_exit(pid, status)
    if ptyd.poll() is None:
        ptyd.terminate()
        ptyd.wait()
    state.close_all()
    listener.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
