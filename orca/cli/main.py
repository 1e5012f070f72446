"""``orca``: the command line. Each topic lives in its own module with ``add_parser``.

Exit codes: 0 success, 1 the operation failed, 2 bad usage or input, 3 the service is
not running. ``main`` is the one error boundary: a command raises ``OrcaError`` (from
an actor's reply or its own checks) and ``main`` maps it to the message and exit code
(``output.fail_from``); no command catches it only to do the same.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from orca import __version__
from orca.cli.output import fail, fail_from
from orca.fsio import UnsafeDirectory
from orca.wire.errors import OrcaError

# Topic modules, each exposing add_parser(subparsers). Imported when the parser is
# built, so they keep their own heavy imports inside the command functions.
COMMAND_MODULES = (
    "orca.cli.service",
    "orca.cli.repo",
    "orca.cli.worktree",
    "orca.cli.worktree_ps",
    "orca.cli.hooks",
    "orca.cli.state",
    "orca.cli.term",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="orca", description="Orca: many coding agents, one service."
    )
    parser.add_argument("--version", action="version", version=f"orca {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        code: int = func(args)
        sys.stdout.flush()
    except OrcaError as exc:
        return fail_from(exc)
    except UnsafeDirectory as exc:
        return fail(f"refusing an unsafe directory: {exc}")
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader of a pipe went away (`orca worktree ls | head -1`): what it wanted
        # it has; point stdout at /dev/null so the interpreter's final flush is quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 0
    return code


if __name__ == "__main__":
    sys.exit(main())
