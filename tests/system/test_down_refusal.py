"""``orca down`` never ends an agent by surprise (issue 13), driven through the CLI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from support.procs import alive, descendants, kill_all, run_cli, write_config

from orca.client.sync import invoke
from orca.contracts import ptyd
from orca.contracts.fd_keeper import KEEPER_LOCK_NAME, read_keeper_lock
from orca.contracts.supervisor import read_lock_info
from orca.paths import OrcaPaths, resolve_paths

TREE = """
[supervisor]
backoff_initial_s = 0.05
heartbeat_interval_s = 0.5
[[child]]
name = "ptyd"
module = "actors.ptyd"
"""
WT = "repo1::/w/down"


def keeper_pid(paths: OrcaPaths) -> int | None:
    info = read_keeper_lock(paths.runtime_dir / KEEPER_LOCK_NAME)
    return None if info is None else info.pid


@pytest.fixture
def up(orca_home: Path) -> Iterator[OrcaPaths]:
    write_config(orca_home, TREE)
    paths = resolve_paths({"ORCA_HOME": str(orca_home)})
    result = run_cli(orca_home, "up")
    assert result.returncode == 0, result.stderr
    started: list[int] = []
    try:
        yield paths
    finally:
        keeper = keeper_pid(paths)
        orcad = read_lock_info(paths.lock_file)
        for pid in (keeper, orcad.pid if orcad else None):
            if pid is not None:
                started.extend([*descendants(pid), pid])
        kill_all(started)


def spawn(paths: OrcaPaths, script: str = "exec sleep 600") -> ptyd.SpawnResult:
    args = ptyd.SpawnArgs(argv=["/bin/sh", "-c", script], cwd="/", worktree_id=WT)
    return invoke(ptyd.SPAWN, args, paths=paths)


def gone(pid: int) -> bool:
    try:
        psutil.Process(pid).wait(timeout=15)
    except psutil.NoSuchProcess:
        return True
    except psutil.TimeoutExpired:
        return False
    return True


def test_down_with_a_live_agent_refuses_and_lists_it(up: OrcaPaths, orca_home: Path) -> None:
    """Exit 2 (a request the current state refuses, README "Exit codes"), the terminal's
    handle and pid listed, both flags named; nothing stopped."""
    agent = spawn(up)
    result = run_cli(orca_home, "down")
    assert result.returncode == 2, result
    assert f"pid {agent.pid}" in result.stderr
    assert "down:" in result.stderr  # the handle: the worktree folder + the id's hex
    assert "--keep-terminals" in result.stderr and "--kill-terminals" in result.stderr
    assert read_lock_info(up.lock_file) is not None, "orcad still runs"
    assert alive([agent.pid]) == [agent.pid]


def test_down_refusal_lists_a_multi_line_command_on_one_line(
    up: OrcaPaths, orca_home: Path
) -> None:
    """A command typed over three lines is one line of the refusal's list, its line
    breaks shown as ⏎."""
    agent = spawn(up, "exec sleep 600\n: second line\n: third line")
    result = run_cli(orca_home, "down")
    assert result.returncode == 2, result
    listed = [line for line in result.stderr.splitlines() if line.startswith("  down:")]
    assert len(listed) == 1, result.stderr
    assert listed[0].endswith(
        f"pid {agent.pid}  /bin/sh -c exec sleep 600⏎: second line⏎: third line"
    )
    assert "\n: second line" not in result.stderr


def test_down_kill_terminals_ends_them_then_everything(up: OrcaPaths, orca_home: Path) -> None:
    """--kill-terminals: the agents end (how many is said), orcad and the keeper stop."""
    agents = [spawn(up), spawn(up)]
    keeper = keeper_pid(up)
    assert keeper is not None
    result = run_cli(orca_home, "down", "--kill-terminals")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["ended 2 terminals", "orca stopped"]
    assert all(gone(agent.pid) for agent in agents) and gone(keeper)
    assert read_lock_info(up.lock_file) is None


def test_down_keep_terminals_leaves_only_the_keeper_and_up_readopts(
    up: OrcaPaths, orca_home: Path
) -> None:
    """--keep-terminals: every actor stops but the keeper; the agent keeps running; the
    next `orca up` lists it again with the same pid, running."""
    agent = spawn(up)
    keeper = keeper_pid(up)
    orcad = read_lock_info(up.lock_file)
    assert keeper is not None and orcad is not None and orcad.pid is not None
    actors = descendants(orcad.pid)
    result = run_cli(orca_home, "down", "--keep-terminals")
    assert result.returncode == 0, result.stderr
    assert gone(orcad.pid)
    assert alive([p for p in actors if p not in (keeper, agent.pid)]) == []
    assert alive([keeper, agent.pid]) == [keeper, agent.pid]
    result = run_cli(orca_home, "up")
    assert result.returncode == 0, result.stderr
    rows = invoke(ptyd.LIST, ptyd.ListArgs(), paths=up).sessions
    assert [(r.session_id, r.pid, r.running) for r in rows] == [
        (agent.session_id, agent.pid, True)
    ]
    assert keeper_pid(up) == keeper


def test_down_without_live_agents_stops_everything(up: OrcaPaths, orca_home: Path) -> None:
    """No live agent: `orca down` stops orcad, its actors and the keeper, as before."""
    keeper = keeper_pid(up)
    assert keeper is not None
    result = run_cli(orca_home, "down")
    assert result.returncode == 0, result.stderr
    assert gone(keeper)
    assert read_lock_info(up.lock_file) is None


def test_worktree_rm_with_a_live_agent_refuses_unless_forced(
    orca_home: Path, tmp_path: Path
) -> None:
    """`orca worktree rm` under a running agent: exit 2, the terminal listed, the folder
    kept; `--force` ends the agent first (as `term close`), then removes the worktree."""
    from support.journey import User, make_git_repo

    user = User(orca_home, tmp_path / "user")
    user.ok("up")
    try:
        project = make_git_repo(tmp_path / "project")
        user.ok("repo", "add", str(project))
        user.ok("worktree", "create", "project", "fix-login", "--setup", "skip")
        user.ok("term", "new", "fix-login", "--", "/bin/sh", "-c", "exec sleep 600")
        [session] = user.json("term", "ls")["sessions"]
        path = Path(session["cwd"])
        refused = user.run("worktree", "rm", "fix-login")
        assert refused.returncode == 2, refused
        assert f"pid {session['pid']}" in refused.stderr and "--force" in refused.stderr
        assert path.is_dir() and alive([session["pid"]]) == [session["pid"]]
        user.ok("worktree", "rm", "fix-login", "--force")
        assert gone(session["pid"]) and not path.exists()
        assert user.json("term", "ls")["sessions"] == []  # closed, not just exited
    finally:
        user.run("down", "--kill-terminals")
