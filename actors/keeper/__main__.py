"""The keeper process: ``python -P -m actors.keeper [--ready-fd N]``.

Started detached (its own session, by ``orcad`` when no keeper answers), one per
profile (``ORCA_HOME``): it holds ``<runtime dir>/keeper.lock`` for its whole life, so
a second one exits at once (code 3) and the kernel frees the lock however it dies.
It watches nobody: ``orcad`` dying, or its terminal closing (SIGHUP is ignored), leaves
it running. It ends on the protocol's ``stop`` (``orca down``) or on SIGTERM/SIGINT,
closing every kept master: the terminals hang up.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys

import trio

from actors.keeper.service import FdKeeper
from orca.actor.app import configure_logging
from orca.contracts.fd_keeper import (
    KEEPER_LOCK_NAME,
    KEEPER_SOCKET_NAME,
    KeeperLockInfo,
    encode_keeper_lock,
    read_keeper_lock,
)
from orca.fsio import FileLock, LockHeld
from orca.paths import resolve_paths

log = logging.getLogger("keeper")

EXIT_ALREADY_RUNNING = 3


async def run(keeper: FdKeeper, ready_fd: int | None) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:
            await nursery.start(keeper.serve)
            if ready_fd is not None:
                try:
                    os.write(ready_fd, b"ready\n")
                except OSError:
                    pass
                os.close(ready_fd)

            async def on_signal() -> None:
                async for signum in signals:
                    log.info("keeper: %s: closing every kept terminal", signal.Signals(signum).name)
                    keeper.stopped.set()
                    return

            nursery.start_soon(on_signal)
            await keeper.stopped.wait()
            nursery.cancel_scope.cancel()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="orca-keeper", description="the Orca PTY fd keeper")
    parser.add_argument(
        "--ready-fd", type=int, default=None, help="write 'ready' here once serving"
    )
    args = parser.parse_args(argv)
    configure_logging("keeper")
    # A keeper outlives the terminal or session that started it.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    paths = resolve_paths().ensure()
    sock_path = str(paths.runtime_dir / KEEPER_SOCKET_NAME)
    lock = FileLock(paths.runtime_dir / KEEPER_LOCK_NAME)
    try:
        lock.acquire(encode_keeper_lock(KeeperLockInfo(pid=os.getpid(), socket=sock_path)))
    except LockHeld:
        holder = read_keeper_lock(paths.runtime_dir / KEEPER_LOCK_NAME)
        print(
            f"orca-keeper: already running (pid {holder.pid if holder else '?'})", file=sys.stderr
        )
        return EXIT_ALREADY_RUNNING
    keeper = FdKeeper(sock_path)
    try:
        trio.run(run, keeper, args.ready_fd)
    finally:
        lock.release()
    log.info("keeper stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
