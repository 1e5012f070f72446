"""``orca``: the command line. Each topic lives in its own module with ``add_parser``;
``orca.cli.parser`` builds the tree of them.

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

from orca.wire.errors import OrcaError

if TYPE_CHECKING:
    import argparse

# The hidden command shell completion calls on every Tab (orca.cli.completion).
COMPLETE_COMMAND = "__complete"


# The listings a shell loop or a status bar runs, written exactly as typed: the
# module and function argparse would dispatch to and the namespace it would build
# (tests/unit/cli/test_fast_args.py checks each against the real parser). Each is
# dispatched without argparse: importing it (with gettext and locale) and building a
# topic's parser cost ~3 ms, a tenth of a bare interpreter start (bench/cli.py).
# Anything else typed - another order, an abbreviation, a typo - goes to argparse.
FAST_COMMANDS: dict[tuple[str, ...], tuple[str, str, dict[str, object]]] = {
    (*words, *flag): (module, function, {**names, "json": bool(flag)})
    for words, module, function, names in (
        (
            ("worktree", "ps"),
            "orca.cli.worktree_ps",
            "cmd_ps",
            {"command": "worktree", "worktree_command": "ps", "needs_me": False},
        ),
        (
            ("worktree", "ls"),
            "orca.cli.worktree",
            "cmd_ls",
            {"command": "worktree", "worktree_command": "ls", "all": False, "repo": None},
        ),
        (
            ("term", "ls"),
            "orca.cli.term",
            "_ls",
            {"command": "term", "term_command": "ls", "all": False},
        ),
        (("status",), "orca.cli.service", "cmd_status", {"command": "status"}),
    )
    for flag in ((), ("--json",))
}


def fast_args(argv: list[str]) -> argparse.Namespace | None:
    """The namespace argparse would build for ``argv`` if it is a :data:`FAST_COMMANDS`
    entry (its command module imported, argparse not); None for anything else."""
    entry = FAST_COMMANDS.get(tuple(argv))
    if entry is None:
        return None
    import importlib
    import types

    module, function, names = entry
    func = getattr(importlib.import_module(module), function)
    # A SimpleNamespace reads as argparse's Namespace does (attributes, vars()).
    return types.SimpleNamespace(**names, func=func)  # type: ignore[return-value]


def import_msgspec_lean() -> None:
    """Import msgspec without ``typing_extensions`` (the largest single start-up cost).

    msgspec's ``_utils`` tries ``typing_extensions`` for ``get_type_hints``,
    ``Required`` and ``NotRequired`` and falls back to ``typing``; importing it costs
    ~12 ms (it loads ``inspect`` and more), half a bare interpreter start (measured:
    ``import msgspec`` 45 ms with it, 35 ms without, ``python -c pass`` 23 ms). From
    Python 3.11 ``typing`` has all three, and ``typing_extensions.get_type_hints``
    differs from ``typing``'s only for ``ReadOnly`` (PEP 705), which no Orca Struct
    uses, so the fallback decodes exactly the same. The module is hidden only while
    msgspec loads and put back after, so a later ``import typing_extensions`` (rich,
    textual) gets the real one. A no-op when msgspec is already loaded (tests calling
    ``main`` in-process) or on an older Python.

    The same holds for ``platform``, which msgspec loads through ``uuid``: ``uuid``
    imports it only to ask ``platform.system()`` once, at import, and ``platform``
    compiles a dozen regular expressions to load (~1.5 ms). While ``uuid`` loads it is
    given a module whose ``system()`` answers what ``platform.system()`` answers on
    POSIX (``os.uname().sysname``); it is removed after, so a later ``import platform``
    gets the real one.
    """
    if sys.version_info < (3, 11) or "msgspec" in sys.modules:
        return
    if "typing_extensions" in sys.modules:
        import msgspec  # already paid for: nothing to save

        return
    stand_ins: dict[str, object] = {"typing_extensions": None}  # import -> ImportError
    if "uuid" not in sys.modules and "platform" not in sys.modules and hasattr(os, "uname"):
        stand_ins["platform"] = _platform_stand_in()
    for name, module in stand_ins.items():
        sys.modules[name] = module  # type: ignore[assignment]
    try:
        import msgspec  # noqa: F401
    finally:
        for name in stand_ins:
            del sys.modules[name]


def _platform_stand_in() -> object:
    """A ``platform`` module with only ``system()``, for ``uuid``'s import."""
    import types

    stand_in = types.ModuleType("platform", "orca.cli.main's stand-in while uuid loads")
    sysname = os.uname().sysname
    stand_in.system = lambda: sysname  # type: ignore[attr-defined]
    return stand_in


def exit_without_teardown(code: int) -> None:
    """End the process now with ``code`` when nothing is left to run at exit; else return.

    Interpreter finalization tears down every module and type a command loaded, which
    costs a listing command ~6-9 ms of CPU (measured: `orca term ls` 65 -> 56 ms), a
    third of a bare interpreter start, for nothing a finished CLI command needs. So a
    command run as a program (``main()`` with no ``argv``) leaves with ``os._exit``
    once stdout and stderr are flushed, but only if that skips nothing that matters:
    no ``atexit`` callback (pyzmq's context, logging, coverage, textual all register
    one) and no thread but the main one. A failed flush returns, and the ordinary exit
    reports it as before.
    """
    import atexit

    if not isinstance(code, int) or getattr(atexit, "_ncallbacks", lambda: 1)() != 0:
        return
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    """Run one command; with no ``argv`` (the ``orca`` program) it also ends the
    process (``exit_without_teardown``)."""
    if argv is not None:
        return run(argv)
    code = run(sys.argv[1:])
    exit_without_teardown(code)
    return code


def run(argv: list[str]) -> int:
    """Parse ``argv``, run its command, map its errors to exit codes (module docstring)."""
    import_msgspec_lean()
    if argv[:1] == [COMPLETE_COMMAND]:
        from orca.cli.completion import run_complete

        return run_complete(argv[1:])
    args = fast_args(argv)
    if args is None:
        from orca.cli.parser import build_parser

        parser = build_parser(argv[0] if argv else None)
        args = parser.parse_args(argv)
        if getattr(args, "func", None) is None:
            parser.print_help()
            return 2
    func = args.func
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
