"""Fork server for the crash loop: import the store once, fork a store per "spawn" line.

Each child runs ``actors.store.__main__.main()`` (the same code as
``python -m actors.store``) in a new session; its pid goes to stdout. Children are
reaped automatically (SIGCHLD ignored); the test waits on their pidfds. No thread or
event loop exists in this process when it forks.
"""

from __future__ import annotations

import os
import signal
import sys

import psutil  # noqa: F401  - warm: the first sys.stats imports it

from actors.store.__main__ import main

signal.signal(signal.SIGCHLD, signal.SIG_IGN)
for line in sys.stdin:
    if line.strip() != "spawn":
        continue
    pid = os.fork()
    if pid == 0:
        os.setsid()
        os.close(0)
        try:
            main()
        finally:
            os._exit(0)
    sys.stdout.write(f"{pid}\n")
    sys.stdout.flush()
