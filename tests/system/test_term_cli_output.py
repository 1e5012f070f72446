"""What ``orca term ls`` and ``orca term kill`` print (issue 32), driven through the CLI.

A tree of ptyd alone: the handles come from the sessions' own worktree ids, so a
worktree folder named in any script is one spawn away.
"""

from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest
from support.procs import run_cli, write_config

from orca.client.sync import invoke
from orca.contracts import ptyd
from orca.paths import OrcaPaths, resolve_paths

TREE = """
[supervisor]
backoff_initial_s = 0.05
heartbeat_interval_s = 0.5
[[child]]
name = "ptyd"
module = "actors.ptyd"
"""
SLEEP = ["/bin/sh", "-c", "exec sleep 600"]
# Wide CJK characters (two columns each) and precomposed accents: 12 columns, 10 chars.
WIDE_NAME = "ünïcødé-日本"
# Combining marks (no column of their own): "ü" and "é" decomposed; 9 columns, 11 chars.
COMBINING_NAME = "u\u0308ber-cafe\u0301"
COLUMNS = {WIDE_NAME: 12, COMBINING_NAME: 9}
# A command typed over three lines (`sh -c` with a script of three lines).
MULTI_LINE = ["/bin/sh", "-c", "exec sleep 600\n: second line\n: third line"]


@pytest.fixture
def up(orca_home: Path) -> OrcaPaths:
    """orcad with ptyd only; ``orca_home`` kills it, the keeper and the agents after."""
    write_config(orca_home, TREE)
    result = run_cli(orca_home, "up")
    assert result.returncode == 0, result.stderr
    return resolve_paths({"ORCA_HOME": str(orca_home)})


def spawn(paths: OrcaPaths, folder: str, argv: list[str] = SLEEP) -> ptyd.SpawnResult:
    args = ptyd.SpawnArgs(argv=argv, cwd="/", worktree_id=f"repo1::/w/{folder}")
    return invoke(ptyd.SPAWN, args, paths=paths)


def handles(orca_home: Path) -> dict[str, str]:
    """Handle by session id, from `orca term ls --json`."""
    result = run_cli(orca_home, "term", "ls", "--json")
    assert result.returncode == 0, result.stderr
    return {s["sessionId"]: s["handle"] for s in json.loads(result.stdout)["sessions"]}


def test_term_ls_lines_up_wide_and_combining_names(up: OrcaPaths, orca_home: Path) -> None:
    """Rows are padded to the columns a terminal draws: every STATE cell starts in the
    header's column, whether the handle has wide characters or combining marks."""
    for folder in ("plain", WIDE_NAME, COMBINING_NAME):
        spawn(up, folder)
    result = run_cli(orca_home, "term", "ls")
    assert result.returncode == 0, result.stderr
    header, *rows = result.stdout.splitlines()
    assert len(rows) == 3, result.stdout
    state_column = header.index("STATE")
    for row in rows:
        # The names as as many one-column characters as a terminal draws them in.
        drawn = row
        for name, columns in COLUMNS.items():
            drawn = drawn.replace(name, "x" * columns)
        assert drawn.index("running") == state_column, (header, row)


def test_term_ls_shows_a_multi_line_command_on_one_line(up: OrcaPaths, orca_home: Path) -> None:
    """A command of three lines is one row, its line breaks shown as ⏎; the JSON keeps
    the argv as it was given."""
    agent = spawn(up, "scripted", MULTI_LINE)
    result = run_cli(orca_home, "term", "ls")
    assert result.returncode == 0, result.stderr
    _header, *rows = result.stdout.splitlines()
    assert len(rows) == 1, result.stdout
    assert rows[0].endswith("exec sleep 600⏎: second line⏎: third line"), rows
    assert f"  {agent.pid}  " in rows[0]
    listed = json.loads(run_cli(orca_home, "term", "ls", "--json").stdout)["sessions"]
    assert [s["argv"] for s in listed] == [MULTI_LINE]


def test_term_kill_says_which_terminal_it_killed(up: OrcaPaths, orca_home: Path) -> None:
    """`orca term kill` prints one line naming the terminal as `term ls` does, and its
    pid (`--signal`: the signal sent); the process ends."""
    agent, signalled = spawn(up, "fix-auth"), spawn(up, "fix-auth")
    named = handles(orca_home)
    result = run_cli(orca_home, "term", "kill", named[agent.session_id])
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"killed {named[agent.session_id]} (pid {agent.pid})\n"
    result = run_cli(orca_home, "term", "kill", named[signalled.session_id], "--signal", "TERM")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"sent TERM to {named[signalled.session_id]} (pid {signalled.pid})\n"
    for pid in (agent.pid, signalled.pid):
        try:
            psutil.Process(pid).wait(timeout=15)
        except psutil.NoSuchProcess:
            pass
