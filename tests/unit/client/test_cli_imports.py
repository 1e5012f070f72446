"""CLI start-up is held to what a command needs (issues 12 and 15, ``bench/cli.py``).

No wall-clock assertion (that is the benchmark's job): these pin the *causes* of a slow
start, the modules a command imports, against a real running tree; and the shortcuts
taken for start-up (the lean msgspec import, argparse without shutil, actor names
written out) are checked to change nothing else.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.procs import child_env, run_cli

from orca.cli import main as cli_main
from orca.cli import parser as cli_parser
from orca.cli.state import STORE_ACTOR
from orca.contracts import gateway, store
from orca.remote.client import GATEWAY_ACTOR

# What no listing command may load: each costs milliseconds of every run (measured in
# orca/client/sync.py, orca/cli/main.py, orca/contracts/base.py, orca/paths.py).
HEAVY = (
    "zmq",  # orca.client.zmtp speaks ipc:// itself
    "trio",
    "rich",
    "textual",
    "pygit2",
    "typing_extensions",  # orca.cli.main.import_msgspec_lean
    "platform",  # the same: uuid asks it one question at import
    "dataclasses",
    "inspect",
    "logging",
    "socket",  # the C _socket is enough
    "shutil",  # argparse's formatter, tempfile
    "tempfile",
    "secrets",
    "platformdirs",  # only without ORCA_HOME
    "orca.actor",
    "orca.keys",
    "orca.remote.hosts",
    "orca.contracts.gateway",  # the gateway runs, but no remote host is known
    "orca.contracts.store",  # every model record: store_core has what ps asks the store
    "orca.model.state",
    "orca.contracts.gitwatch",  # every worktree record: gitwatch_core has worktree.paths
    "argparse",  # orca.cli.main.FAST_COMMANDS
)
COMMANDS = (("worktree", "ps"), ("worktree", "ps", "--json"), ("term", "ls"), ("status",))
# Runs a command as the `orca` program does, then reports what it imported
# (``main`` with an argv returns instead of ending the process: see exit_without_teardown.)
PROBE = """
import json, sys
from orca.cli.main import main
code = main(sys.argv[1:])
print("\\n" + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def make_repo(path: Path) -> None:
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-C", str(path)]
    path.mkdir(parents=True)
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "init"], check=True)


def test_listing_commands_import_none_of_the_heavy_modules(orca_home: Path, tmp_path: Path) -> None:
    """`worktree ps [--json]`, `term ls` and `status` against a live tree (a repo, a
    worktree, a terminal) succeed without loading any module of ``HEAVY``."""
    make_repo(tmp_path / "project")
    assert run_cli(orca_home, "up").returncode == 0
    try:
        for args in (
            ("repo", "add", str(tmp_path / "project")),
            ("worktree", "create", "project", "wt", "--setup", "skip"),
            ("term", "new", "wt", "--", "/bin/sh"),
        ):
            done = run_cli(orca_home, *args)
            assert done.returncode == 0, done.stderr
        env = child_env(orca_home)
        for command in COMMANDS:
            done = subprocess.run(
                [sys.executable, "-c", PROBE, *command],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            report = json.loads(done.stdout.rstrip().rsplit("\n", 1)[-1])
            assert report["code"] == 0, (command, done.stderr)
            loaded = [m for m in HEAVY if m in report["modules"]]
            assert loaded == [], f"`orca {' '.join(command)}` imports {loaded}"
    finally:
        run_cli(orca_home, "down", "--kill-terminals")


def test_names_written_out_are_the_originals() -> None:
    """Constants copied to spare an import (a contract, pyzmq) match their source."""
    assert store.CONTRACT.actor == STORE_ACTOR
    assert gateway.CONTRACT.actor == GATEWAY_ACTOR


def _helps(parser: argparse.ArgumentParser) -> list[str]:
    """The help of ``parser`` and of every sub-parser below it."""
    texts = [parser.format_help()]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                texts.extend(_helps(sub))
    return texts


@pytest.mark.parametrize("columns", ["", "0", "wide", "57", "120"])
def test_help_reads_as_plain_argparse_formats_it(
    columns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parser class that spares the shutil import formats every help text of every
    topic exactly as argparse's own formatter does, for any COLUMNS."""
    monkeypatch.setenv("COLUMNS", columns)
    assert cli_parser.terminal_columns() == shutil.get_terminal_size().columns
    ours = _helps(cli_parser.build_parser())
    monkeypatch.setattr(cli_parser, "parser_class", lambda: argparse.ArgumentParser)
    assert ours == _helps(cli_parser.build_parser())


def test_the_lean_msgspec_import_leaves_typing_extensions_importable() -> None:
    """In a fresh process: msgspec loads without typing_extensions and platform, which
    stay importable for whoever wants them later (rich, textual); uuid saw the same
    operating system the real platform module reports."""
    code = (
        "import sys\n"
        "from orca.cli.main import import_msgspec_lean\n"
        "import_msgspec_lean()\n"
        "print('msgspec' in sys.modules, 'typing_extensions' in sys.modules,"
        " 'platform' in sys.modules)\n"
        "import typing_extensions, platform, uuid\n"
        "print(typing_extensions.__name__, platform.__name__, hasattr(platform, 'machine'))\n"
        "print(uuid._LINUX == (platform.system() == 'Linux'), uuid._AIX is False)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split()
    assert out == [
        "True",
        "False",
        "False",
        "typing_extensions",
        "platform",
        "True",
        "True",
        "True",
    ]


def test_a_command_run_as_a_program_ends_with_its_output_and_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without interpreter teardown the output still arrives whole through a pipe, and
    the exit code and the stderr message of a failure are the command's."""
    assert cli_main.run(["completion", "bash"]) == 0
    expected = capsys.readouterr().out
    env = child_env(tmp_path / "home")
    script = subprocess.run(
        [sys.executable, "-m", "orca.cli.main", "completion", "bash"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert script.returncode == 0 and script.stdout == expected
    down = run_cli(tmp_path / "home", "worktree", "ps")
    assert down.returncode == 3 and "orca is not running" in down.stderr


def test_an_atexit_callback_is_never_skipped(tmp_path: Path) -> None:
    """A callback registered by anyone (coverage, pyzmq, logging) keeps the ordinary
    exit, so it runs."""
    code = (
        "import atexit, runpy, sys\n"
        "atexit.register(print, 'atexit ran')\n"
        "sys.argv = ['orca', 'completion', 'bash']\n"
        "runpy.run_module('orca.cli.main', run_name='__main__', alter_sys=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=child_env(tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.endswith("atexit ran\n")


def test_every_op_of_every_contract_builds_its_decoders() -> None:
    """Decoders are built on first use (not at import, for start-up): each op's args
    and result types are still checked here, so a type msgspec cannot decode fails a
    test instead of the first call."""
    import importlib
    import pkgutil

    import orca.contracts
    from orca.contracts.base import Contract

    ops = []
    for info in pkgutil.iter_modules(orca.contracts.__path__):
        module = importlib.import_module(f"orca.contracts.{info.name}")
        for value in vars(module).values():
            if isinstance(value, Contract):
                ops.extend(value.ops.values())
    assert len(ops) > 50
    for op in ops:
        op.compile()
