"""The keeper process: ``python -P -m actors.keeper [--ready-fd N] [--take-over]
[--wait-lock S]``.

Started detached (its own session, by ``orcad`` when no keeper answers), one per
profile (``ORCA_HOME``): it holds ``<runtime dir>/keeper.lock`` for its whole life, so
a second one exits at once (code 3) and the kernel frees the lock however it dies.
``orcad`` dying, or its terminal closing (SIGHUP is ignored), leaves it running; it
watches orcad and starts a new one when orcad dies without stopping on purpose
(``orcad_watch.py``). It ends on the protocol's ``stop`` (``orca down``) or on
SIGTERM/SIGINT, closing every kept master: the terminals hang up.

``--take-over`` (``orca restart --all``, once the old tree has stopped): before taking
the lock, take every session from the keeper running now (``orca.client.keeper.take_over``:
``hello`` decides between ``hand_over`` and, for a keeper that predates it, ``stop``),
wait for it to exit and its lock to be free, then serve them. If the old keeper refuses,
nothing changed: it still holds everything, and this one exits (code 4) after writing
``failed <why>`` on the ready fd. If another keeper wins the lock meanwhile, the taken
sessions are deposited with it before exiting (code 3), so none is dropped.
``--after-orcad S`` (with ``--take-over``): first wait up to S seconds for no ``orcad`` to
hold its instance lock, so the CLI can start this keeper (and pay for its imports) while
the old tree is still stopping. ``--wait-lock S``: wait up to S seconds for the lock instead of exiting at once (a
``ptyd`` securing its sessions starts a keeper while a killed one may still be exiting).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time

from actors.keeper.orcad_watch import OrcadWatch
from actors.keeper.service import FdKeeper
from actors.keeper.table import KeeperState
from orca.build import BUILD_ENV, adopt_build
from orca.client.keeper import TakeOverFailed, deposit_into, take_over
from orca.contracts.fd_keeper import (
    KEEPER_LOCK_NAME,
    KEEPER_SOCKET_NAME,
    KeeperLockInfo,
    close_fds,
    encode_keeper_lock,
    read_keeper_lock,
)
from orca.fsio import FileLock, LockHeld, read_lock_holder
from orca.logs import configure_logging
from orca.paths import resolve_paths

log = logging.getLogger("keeper")

EXIT_ALREADY_RUNNING = 3
EXIT_TAKE_OVER_FAILED = 4
# A take-over waits this long for the old keeper to exit and free its lock.
TAKE_OVER_LOCK_WAIT_S = 10.0
LOCK_RETRY_S = 0.02


def _say(ready_fd: int | None, line: str) -> None:
    if ready_fd is None:
        return
    try:
        os.write(ready_fd, line.encode() + b"\n")
    except OSError:
        pass
    os.close(ready_fd)


def _acquire(lock: FileLock, holder: bytes, wait_s: float) -> bool:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            lock.acquire(holder)
            return True
        except LockHeld:
            if time.monotonic() >= deadline:
                return False
            time.sleep(LOCK_RETRY_S)


def run(keeper: FdKeeper, ready_fd: int | None, orcad: OrcadWatch) -> None:
    """Serve until ``stop``, SIGTERM or SIGINT; the orcad watch runs beside, in a daemon
    thread started once the socket answers."""

    def on_signal(signum: int, _frame: object) -> None:
        keeper.stop(signal.Signals(signum).name)  # a flag and a byte: nothing that locks

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    def ready() -> None:
        _say(ready_fd, "ready")
        threading.Thread(target=orcad.run, name="orcad-watch", daemon=True).start()

    keeper.serve(on_ready=ready)
    if keeper.stop_reason in ("SIGTERM", "SIGINT"):
        log.info("%s: every kept terminal closed", keeper.stop_reason)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="orca-keeper", description="the Orca PTY fd keeper")
    parser.add_argument(
        "--ready-fd", type=int, default=None, help="write 'ready' here once serving"
    )
    parser.add_argument(
        "--take-over",
        action="store_true",
        help="first take every session from the running keeper (an upgrade)",
    )
    parser.add_argument(
        "--wait-lock", type=float, default=0.0, help="wait this long for the lock (seconds)"
    )
    parser.add_argument(
        "--after-orcad",
        type=float,
        default=0.0,
        help="with --take-over: first wait this long for orcad to have exited (seconds)",
    )
    args = parser.parse_args(argv)
    # The build its starter hashed, if these are the same files; popped: an orcad this
    # keeper starts again hands down its own.
    adopt_build(os.environ.pop(BUILD_ENV, None))
    configure_logging("keeper")
    # A keeper outlives the terminal or session that started it.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    paths = resolve_paths().ensure()
    sock_path = str(paths.runtime_dir / KEEPER_SOCKET_NAME)
    lock = FileLock(paths.runtime_dir / KEEPER_LOCK_NAME)
    state = KeeperState()
    wait_s = args.wait_lock
    if args.take_over and args.after_orcad > 0:
        deadline = time.monotonic() + args.after_orcad
        while read_lock_holder(paths.lock_file) is not None:
            if time.monotonic() >= deadline:
                _say(args.ready_fd, f"failed orcad still runs after {args.after_orcad:g}s")
                return EXIT_TAKE_OVER_FAILED
            time.sleep(LOCK_RETRY_S)
    if args.take_over:
        try:
            taken = take_over(sock_path)
        except TakeOverFailed as exc:
            log.error("take-over refused: %s (the running keeper keeps every terminal)", exc)
            _say(args.ready_fd, f"failed {exc}")
            return EXIT_TAKE_OVER_FAILED
        if taken is not None:
            state.seed(taken.sessions)
            before = taken.previous
            log.info(
                "took %d session(s) over from keeper %s (build %s) by %s",
                len(taken.sessions),
                before.pid if before else "(predates hello)",
                before.build if before else "?",
                taken.ended_with,
            )
            wait_s = max(wait_s, TAKE_OVER_LOCK_WAIT_S)
    holder = encode_keeper_lock(KeeperLockInfo(pid=os.getpid(), socket=sock_path))
    if not _acquire(lock, holder, wait_s):
        running = read_keeper_lock(paths.runtime_dir / KEEPER_LOCK_NAME)
        if len(state):
            # Whoever holds the lock gets what we took: never drop a terminal.
            sessions = state.drain()
            try:
                deposit_into(sock_path, sessions)
            except OSError as exc:
                log.error("could not pass %d session(s) on: %s", len(sessions), exc)
            for _, fds in sessions:
                close_fds(fds)
        print(
            f"orca-keeper: already running (pid {running.pid if running else '?'})",
            file=sys.stderr,
        )
        _say(args.ready_fd, f"failed already running (pid {running.pid if running else '?'})")
        return EXIT_ALREADY_RUNNING
    orcad = OrcadWatch(paths)
    keeper = FdKeeper(sock_path, state, on_watch_orcad=orcad.nudge)
    try:
        run(keeper, args.ready_fd, orcad)
    finally:
        lock.release()
    log.info("keeper stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
