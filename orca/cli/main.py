"""``orca``: the command line. Each topic lives in its own module with ``add_parser``.

Exit codes: 0 success, 1 the operation failed, 2 bad usage or input, 3 the service is
not running.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from orca import __version__

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
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
