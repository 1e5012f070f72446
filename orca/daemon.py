"""Starting a daemon detached, the one way orcad and the keeper are started: standard
library only (the keeper and orcad's starters import it)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path


def spawn_detached(
    python: str,
    args: Sequence[str],
    env: Mapping[str, str],
    log_path: Path,
    after: Sequence[str] = (),
) -> tuple[int, int, int]:
    """Start ``python *args --ready-fd N *after`` with ``posix_spawn`` and ``setsid`` (a
    session and process group of its own: no signal for the starter's group or terminal
    reaches it, and no ``Popen`` is left to be collected while it runs), stdin
    ``/dev/null``, output appended to ``log_path`` (0600). Returns its pid, the read end
    of its ready pipe (``orca.pipes.read_ready_line``; the caller closes it) and the
    log's size before this run (a daemon appends to every earlier run's log)."""
    read_fd, write_fd = os.pipe()
    try:
        log_fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        raise
    try:
        run_starts_at = os.fstat(log_fd).st_size
        pid = os.posix_spawn(
            python,
            [python, *args, "--ready-fd", str(write_fd), *after],
            dict(env),
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, log_fd, 1),
                (os.POSIX_SPAWN_DUP2, log_fd, 2),
                (os.POSIX_SPAWN_DUP2, write_fd, write_fd),  # clears close-on-exec
            ],
            setsid=True,
        )
    except OSError:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
        os.close(log_fd)
    return pid, read_fd, run_starts_at
