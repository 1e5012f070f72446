"""The fd keeper protocol: deposit, update, withdraw, reclaim, orphan exits (issue 6)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from actors.ptyd.handoff import (
    FDS_PER_PACKET,
    FDS_PER_SESSION,
    KeeperLink,
    KeeperState,
    recv_packet,
    send_packet,
)
from actors.ptyd.info import SessionInfo

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


def test_reclaim_returns_every_deposit_with_working_fds() -> None:
    """Deposited fds come back (in batches) and still reach the same pipe."""
    state = KeeperState()
    pipes = []
    for n in range(FDS_PER_PACKET):  # more sessions than fit one packet
        r, w = os.pipe()
        pipes.append((r, w))
        state.handle({"op": "deposit", "key": f"k{n}", "info": {"pid": n}}, [os.dup(r)])
    replies = state.handle({"op": "reclaim"}, [])
    assert replies[-1].message == {"op": "end"}
    rows = [row for reply in replies[:-1] for row in reply.message["sessions"]]
    fds = [fd for reply in replies[:-1] for fd in reply.fds]
    assert len(replies) - 1 == -(-FDS_PER_PACKET // (FDS_PER_PACKET // FDS_PER_SESSION))
    assert [row["key"] for row in rows] == [f"k{n}" for n in range(FDS_PER_PACKET)]
    os.write(pipes[7][1], b"still here")
    assert os.read(fds[7], 100) == b"still here"
    state.close_all()
    for r, w in pipes:
        os.close(r)
        os.close(w)


def test_withdraw_closes_the_kept_fd() -> None:
    """After withdraw the keeper no longer holds the pipe open (the reader sees EOF)."""
    state = KeeperState()
    r, w = os.pipe()
    state.handle({"op": "deposit", "key": "k", "info": {}}, [w])
    state.handle({"op": "withdraw", "key": "k"}, [])
    assert os.read(r, 10) == b""  # no writer left
    os.close(r)
    assert len(state) == 0


def test_orphan_exit_recorded_for_its_session_only() -> None:
    """A reaped orphan's status is kept for the session with that pid; others ignored."""
    state = KeeperState()
    r, w = os.pipe()
    state.handle({"op": "deposit", "key": "k", "info": {"pid": 99}}, [r])
    assert not state.record_exit(100, 0)
    assert state.record_exit(99, 7 << 8)
    reply = state.handle({"op": "exit_status", "key": "k"}, [])
    assert reply[0].message["status"] == 7 << 8
    state.close_all()
    os.close(w)


KEEPER_CHILD = """
import socket, sys
from actors.ptyd.handoff import KeeperState, serve_keeper_connection
listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
listener.bind(sys.argv[1]); listener.listen(1)
print("ready", flush=True)
state = KeeperState()
for _ in range(2):
    conn, _ = listener.accept()
    serve_keeper_connection(conn, state)
    conn.close()
"""


def test_fds_survive_the_depositor_between_two_processes(tmp_path: Path) -> None:
    """A keeper process holds a deposited pipe end after the depositor closed its own."""
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
        first = KeeperLink(sock_path)
        first.deposit(info(1), [r, r, w])
        first.close()
        os.close(r)  # only the keeper holds the read end now
        os.write(w, b"kept across")
        second = KeeperLink(sock_path)
        reclaimed = second.reclaim()
        second.close()
        assert [i.session_id for i, _ in reclaimed] == [info(1).session_id]
        fds = reclaimed[0][1]
        assert len(fds) == 3
        assert os.read(fds[0], 100) == b"kept across"
        for fd in fds:
            os.close(fd)
        os.close(w)
        assert keeper.wait(10) == 0
    finally:
        keeper.kill()
        keeper.wait()
        if keeper.stdout:
            keeper.stdout.close()


def test_packets_carry_json_and_fds(tmp_path: Path) -> None:
    """send_packet/recv_packet round-trip a message and its fds over SEQPACKET."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    r, w = os.pipe()
    send_packet(a, {"op": "deposit", "key": "k"}, [r])
    message, fds = recv_packet(b)
    assert message == {"op": "deposit", "key": "k"} and len(fds) == 1
    os.write(w, b"z")
    assert os.read(fds[0], 1) == b"z"
    for fd in (r, w, *fds):
        os.close(fd)
    a.close()
    b.close()
