"""A mistake is answered with the usage of the command it was made in (issue 23)."""

from __future__ import annotations

import argparse

import pytest

from orca.cli.main import run
from orca.cli.parser import build_parser


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path of the tree (``("worktree", "ls")``), groups included."""
    found = [path] if path else []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.extend(commands(sub, (*path, name)))
    return found


ALL = commands(build_parser())


def test_the_tree_is_walked() -> None:
    assert ("worktree", "ls") in ALL and ("term", "new") in ALL and ("hooks", "status") in ALL


@pytest.mark.parametrize("path", ALL, ids=" ".join)
def test_an_unknown_option_prints_that_commands_usage(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    """`orca worktree ls --bogus`: exit 2 and `usage: orca worktree ls ...` (it was
    `usage: orca [-h] ...`, the top parser's, for every subcommand)."""
    with pytest.raises(SystemExit) as exited:
        run([*path, "--no-such-option"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: orca {' '.join(path)} "), err


@pytest.mark.parametrize("path", [p for p in ALL if len(p) == 1 and (*p, "ls") in ALL], ids=" ".join)
def test_a_command_group_alone_prints_its_own_help(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    """`orca worktree`: its subcommands listed, on stderr, exit 2 (not `orca`'s help)."""
    assert run(list(path)) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"usage: orca {' '.join(path)} "), err
    assert " ls " in err
