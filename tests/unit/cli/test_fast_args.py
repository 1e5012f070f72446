"""The listings dispatched without argparse get exactly the namespace argparse builds."""

from __future__ import annotations

import subprocess
import sys

import pytest

from orca.cli import main as cli_main
from orca.cli.parser import build_parser


@pytest.mark.parametrize("argv", sorted(cli_main.FAST_COMMANDS), ids=" ".join)
def test_a_fast_command_gets_argparses_namespace(argv: tuple[str, ...]) -> None:
    fast = cli_main.fast_args(list(argv))
    parsed = build_parser(argv[0]).parse_args(list(argv))
    assert fast is not None and vars(fast) == vars(parsed)


@pytest.mark.parametrize(
    "argv",
    [
        ["worktree", "ps", "--js"],  # an abbreviation argparse accepts
        ["--json", "status"],
        ["worktree", "ps", "--json", "--json"],
        ["worktree", "ps", "--needs-me"],
        ["term", "ls", "--all"],
        [],
    ],
)
def test_anything_else_goes_to_argparse(argv: list[str]) -> None:
    assert cli_main.fast_args(argv) is None


def test_a_fast_command_imports_no_argparse() -> None:
    """In a fresh process: dispatching `orca status --json` (orca not running) loads
    neither argparse nor gettext."""
    code = (
        "import sys\n"
        "from orca.cli.main import run\n"
        "run(['status', '--json'])\n"
        "print('argparse' in sys.modules, 'gettext' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={"ORCA_HOME": "/nonexistent/orca-fast-args", "PATH": "/usr/bin:/bin"},
    )
    assert out.stdout.split()[-2:] == ["False", "False"], out.stderr
