"""``orcad``: the supervisor process (``python -m actors.supervisor``).

Its instance lock (``actors/supervisor/lock.py``) says how it ended: released (the file
emptied) only when ``trio.run`` returns, i.e. after an orderly stop (``sup.stop``,
``sup.hand_over``, SIGTERM/SIGINT/SIGHUP); any other end (``kill -9``, an exception, the
OOM killer) leaves the file naming this orcad, which the fd keeper takes for a crash and
brings orcad back (``actors/keeper/orcad_watch.py``, docs/actors.md "No two-fault
window").
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

import trio

from actors.supervisor.config import ConfigError, load_config
from actors.supervisor.forks import prefork
from actors.supervisor.lock import AlreadyRunning, InstanceLock, service_manager
from actors.supervisor.tree import Supervisor
from orca.actor import memory
from orca.contracts.supervisor import EXIT_ALREADY_RUNNING, LockInfo
from orca.logs import configure_logging
from orca.paths import resolve_paths

log = logging.getLogger("orcad")

EXIT_BAD_CONFIG = 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="orcad", description="the Orca supervisor")
    parser.add_argument(
        "--ready-fd",
        type=int,
        default=None,
        help="write 'ready' to this fd once every actor is ready",
    )
    args = parser.parse_args(argv)
    # First, before anything is opened or started: the fork server shares orcad's pages.
    forked = prefork()
    configure_logging("orcad")
    paths = resolve_paths().ensure()
    try:
        spec = load_config(paths)
    except ConfigError as exc:
        print(f"orcad: bad configuration: {exc}", file=sys.stderr)
        return EXIT_BAD_CONFIG
    lock = InstanceLock(paths.lock_file)
    sup = Supervisor(paths, spec, forked)
    try:
        lock.acquire(
            LockInfo(
                pid=os.getpid(),
                endpoint=sup.endpoint,
                home=str(paths.home) if paths.home else None,
                started_at=time.time(),
                manager=service_manager(os.environ),
            )
        )
    except AlreadyRunning as exc:
        print(
            f"orcad: already running: pid {exc.info.pid}, endpoint {exc.info.endpoint}",
            file=sys.stderr,
        )
        return EXIT_ALREADY_RUNNING
    memory.keep_large_blocks_mapped()  # as every actor (orca.actor.memory)
    trio.run(sup.run, args.ready_fd)
    # Only an orderly stop gets here: the emptied lock file tells the fd keeper that
    # orcad left on purpose. An exception skips it: the kernel drops the flock, the
    # file keeps naming us, and the keeper brings orcad back.
    lock.release()
    log.info("orcad stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
