"""The ``orca`` argument parser: the topics and the modules that add their commands.

Built on demand (``orca.cli.main.run`` for anything but the listings it dispatches
itself, ``orca.cli.completion`` on every Tab): only the modules of the topic named on
the command line are imported (start-up, ``bench/cli.py``).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from orca import __version__

if TYPE_CHECKING:
    import argparse

# Topic → the modules adding its commands (each exposes add_parser(subparsers)), in
# the order ``orca --help`` lists them. tests/unit/cli/test_completion.py checks that every
# module adds exactly the topics named here.
TOPICS: dict[str, tuple[str, ...]] = {
    "up": ("orca.cli.service",),
    "down": ("orca.cli.service",),
    "status": ("orca.cli.service",),
    "restart": ("orca.cli.restart",),
    "logs": ("orca.cli.service",),
    "service": ("orca.cli.service",),
    "repo": ("orca.cli.repo",),
    "folder": ("orca.cli.folder",),
    "worktree": ("orca.cli.worktree", "orca.cli.worktree_ps"),
    "hooks": ("orca.cli.hooks",),
    "state": ("orca.cli.state",),
    "settings": ("orca.cli.settings",),
    "term": ("orca.cli.term",),
    "watch": ("orca.cli.watch",),
    "ack": ("orca.cli.ack",),
    "approve": ("orca.cli.approve",),
    "deny": ("orca.cli.approve",),
    "ui": ("orca.cli.ui",),
    "web": ("orca.cli.web",),
    "completion": ("orca.cli.completion",),
    "host": ("orca.cli.host",),
    "vault": ("orca.cli.vault",),
    "run": ("orca.cli.run",),
    "auto": ("orca.cli.auto",),
}
COMMAND_MODULES = tuple(dict.fromkeys(m for mods in TOPICS.values() for m in mods))


def terminal_columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size().columns`` finds it: ``COLUMNS``
    when set and positive, else stdout's terminal, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


def _untranslated(message: str) -> str:
    return message


def _untranslated_plural(singular: str, plural: str, n: int) -> str:
    return singular if n == 1 else plural


def parser_class() -> type[argparse.ArgumentParser]:
    """``ArgumentParser`` whose help formatter is given its width: argparse's own
    formatter imports ``shutil`` (and with it ``bz2``, ``lzma``, ``zlib``: ~2 ms, a tenth
    of a bare interpreter start) only to ask the terminal's width, and every parser
    builds one (``add_subparsers`` does). Sub-parsers inherit the class, so the whole
    tree formats exactly as before.

    argparse's messages are looked up in gettext's catalogues one by one (``_()``: 27
    look-ups, each searching the locale directories for a catalogue, for one topic's
    parser: ~3 ms, a tenth of a bare interpreter start, bench/cli.py). Orca's own help
    is English only, and CPython installs no catalogue for argparse's domain, so every
    look-up falls back to the English message; argparse is given that fallback
    directly: the same text, without the search.
    """
    import argparse

    argparse._ = _untranslated  # type: ignore[attr-defined]
    argparse.ngettext = _untranslated_plural  # type: ignore[attr-defined]

    class Formatter(argparse.HelpFormatter):
        def __init__(
            self,
            prog: str,
            indent_increment: int = 2,
            max_help_position: int = 24,
            width: int | None = None,
        ) -> None:
            width = terminal_columns() - 2 if width is None else width
            super().__init__(prog, indent_increment, max_help_position, width)

    class Parser(argparse.ArgumentParser):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("formatter_class", Formatter)
            super().__init__(*args, **kwargs)

        def parse_known_args(  # type: ignore[override]
            self, args: Any = None, namespace: Any = None
        ) -> tuple[argparse.Namespace, list[str]]:
            """Words this parser (a command's, ``orca worktree ls``) cannot take are an
            error with *its* usage: argparse leaves a sub-command's unknown words to the
            top parser, which printed ``orca``'s usage for ``orca worktree ls --bogus``.
            """
            parsed, extras = super().parse_known_args(args, namespace)
            if extras:
                self.error(f"unrecognized arguments: {' '.join(extras)}")
            return parsed, extras

    return Parser


def build_parser(topic: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``topic`` (a known one), only that topic's modules are imported."""
    import importlib

    parser = parser_class()(prog="orca", description="Orca: many coding agents, one service.")
    parser.add_argument("--version", action="version", version=f"orca {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in TOPICS.get(topic or "", COMMAND_MODULES):
        importlib.import_module(name).add_parser(sub)
    for topic_parser in sub.choices.values():
        _help_without_subcommand(topic_parser)
    return parser


def _help_without_subcommand(parser: argparse.ArgumentParser) -> None:
    """A command group typed alone (``orca worktree``) prints its own help, listing its
    subcommands, on stderr with exit 2 (not ``orca``'s help); so does every group below,
    unless the group is a command itself (``orca web``, ``orca web devices``)."""
    import argparse

    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue

        def print_help(_args: argparse.Namespace) -> int:
            parser.print_help(sys.stderr)
            return 2

        action.required = False  # a group declared required would only name "COMMAND"
        if parser.get_default("func") is None:
            parser.set_defaults(func=print_help)
        for nested in action.choices.values():
            _help_without_subcommand(nested)
