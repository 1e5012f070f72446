"""``orca``: the command line. Each topic lives in its own module with ``add_parser``.

Exit codes: 0 success, 1 the operation failed, 2 bad usage or input (including a name
that matches nothing or several things, and a request the current state refuses),
3 the service is not running. ``main`` is the one error boundary: a command raises
``OrcaError`` (from an actor's reply or its own checks) and ``main`` maps it to the
message and exit code (``output.fail_from``); no command catches it only to do the same.

Start-up is part of the interface (``orca term ls`` in a shell loop, completion on
every Tab): only the module of the topic named on the command line is imported, and
modules import what a command needs inside the command (``bench/cli.py`` measures it).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from orca import __version__
from orca.wire.errors import OrcaError

if TYPE_CHECKING:
    import argparse

# Topic → the modules adding its commands (each exposes add_parser(subparsers)), in
# the order ``orca --help`` lists them. tests/unit/cli/test_main.py checks that every
# module adds exactly the topics named here.
TOPICS: dict[str, tuple[str, ...]] = {
    "up": ("orca.cli.service",),
    "down": ("orca.cli.service",),
    "status": ("orca.cli.service",),
    "restart": ("orca.cli.service",),
    "logs": ("orca.cli.service",),
    "service": ("orca.cli.service",),
    "repo": ("orca.cli.repo",),
    "worktree": ("orca.cli.worktree", "orca.cli.worktree_ps"),
    "hooks": ("orca.cli.hooks",),
    "state": ("orca.cli.state",),
    "term": ("orca.cli.term",),
    "watch": ("orca.cli.watch",),
    "ack": ("orca.cli.ack",),
    "completion": ("orca.cli.completion",),
}
COMMAND_MODULES = tuple(dict.fromkeys(m for mods in TOPICS.values() for m in mods))
# The hidden command shell completion calls on every Tab (orca.cli.completion).
COMPLETE_COMMAND = "__complete"


def build_parser(topic: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``topic`` (a known one), only that topic's modules are imported."""
    import argparse
    import importlib

    parser = argparse.ArgumentParser(
        prog="orca", description="Orca: many coding agents, one service."
    )
    parser.add_argument("--version", action="version", version=f"orca {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in TOPICS.get(topic or "", COMMAND_MODULES):
        importlib.import_module(name).add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [COMPLETE_COMMAND]:
        from orca.cli.completion import run_complete

        return run_complete(argv[1:])
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        code: int = func(args)
        sys.stdout.flush()
    except OrcaError as exc:
        from orca.cli.output import fail_from

        return fail_from(exc)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader of a pipe went away (`orca worktree ls | head -1`): what it wanted
        # it has; point stdout at /dev/null so the interpreter's final flush is quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 0
    except OSError as exc:
        from orca.fsio import UnsafeDirectory

        if not isinstance(exc, UnsafeDirectory):
            raise
        from orca.cli.output import fail

        return fail(f"refusing an unsafe directory: {exc}")
    return code


if __name__ == "__main__":
    sys.exit(main())
