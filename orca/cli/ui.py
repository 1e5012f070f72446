"""``orca ui``: the terminal UI (``actors/ui``), started in place of this process.

``orca/`` imports nothing from ``actors/`` (docs/architecture.md §4), so the command execs
``python -m actors.ui`` with the same interpreter and environment (``ORCA_HOME``
included) instead of importing it; the UI is then the process the user's terminal
runs, and ``kill -9`` of it ends nothing but the view.
"""

from __future__ import annotations

import argparse
import os
import sys

from orca.cli.output import EXIT_USAGE, fail


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("ui", help="the terminal UI: every agent, their terminals, their state")
    p.add_argument(
        "--no-bell", action="store_true", help="no terminal bell when an agent needs you"
    )
    p.set_defaults(func=cmd_ui)


def cmd_ui(args: argparse.Namespace) -> int:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return fail("orca ui needs a terminal (stdin and stdout)", EXIT_USAGE)
    argv = [sys.executable, "-m", "actors.ui"] + (["--no-bell"] if args.no_bell else [])
    sys.stdout.flush()
    os.execv(sys.executable, argv)
    return 0  # not reached
