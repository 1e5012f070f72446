"""ptyd's side of the fd keeper (KeeperLink) against orcad's real keeper (issue 6).

The protocol itself (packets, the keeper's table) is tested in
``tests/unit/contracts/test_fd_keeper.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from actors.ptyd.handoff import KeeperLink
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


# orcad's keeper (actors/supervisor/keeper.py) alone in a process, until SIGTERM.
KEEPER_CHILD = """
import signal, sys
import trio
from actors.keeper.service import FdKeeper

async def main() -> None:
    keeper = FdKeeper(sys.argv[1])
    with trio.open_signal_receiver(signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            await nursery.start(keeper.serve)
            print("ready", flush=True)
            async for _ in signals:
                break
            nursery.cancel_scope.cancel()
    keeper.close_all()

trio.run(main)
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
