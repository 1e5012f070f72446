"""Agents live in the user's world (issue 40 items 1-2), driven as a user would.

The service is started from a shell where Orca's own virtualenv is active (the README's
``. .venv/bin/activate && orca up``). A terminal is then started from *another* shell
whose ``PATH`` has a tool installed after ``orca up``: the agent sees that shell's
environment (its ``PATH``, ``-e`` variables), never Orca's virtualenv. ``orca run new``
looks each agent's command up on the asking shell's ``PATH``: a missing one is refused
(exit 2, the command and the ``PATH`` named) before anything is created, and an agent
installed after ``orca up`` is found.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from support.dirwatch import until_names
from support.journey import User, make_git_repo
from support.orch import fake_agents, orch_user, prompts, run_watcher

IN_A_VENV = sys.prefix != sys.base_prefix
ORCA_BIN = os.path.join(sys.prefix, "bin")


def _activated(env: dict[str, str]) -> dict[str, str]:
    """``env`` as ``. .venv/bin/activate`` leaves a shell, for Orca's own venv."""
    out = dict(env)
    out["VIRTUAL_ENV"] = sys.prefix
    out["VIRTUAL_ENV_PROMPT"] = "(orca-venv) "
    out["PS1"] = "(orca-venv) $ "
    out["PATH"] = os.pathsep.join([ORCA_BIN, env.get("PATH", os.defpath)])
    return out


def _another_shell(env: dict[str, str], bin_dir: Path) -> dict[str, str]:
    """A second shell of the same user, Orca not activated, ``bin_dir`` first on PATH."""
    out = {k: v for k, v in env.items() if k not in ("VIRTUAL_ENV", "VIRTUAL_ENV_PROMPT")}
    kept = [d for d in env.get("PATH", "").split(os.pathsep) if d and d != ORCA_BIN]
    out["PATH"] = os.pathsep.join([str(bin_dir), *kept])
    out["PS1"] = "$ "
    return out


@pytest.fixture
def started(orca_home: Path, tmp_path: Path) -> Iterator[tuple[User, Path]]:
    user, _log = orch_user(orca_home, tmp_path)
    # The fake agents are not on PATH when the service starts: installed later.
    user.env["PATH"] = os.pathsep.join(
        d for d in user.env["PATH"].split(os.pathsep) if d != str(tmp_path / "bin")
    )
    project = make_git_repo(tmp_path / "project")
    up_env = user.env
    user.env = _activated(up_env)
    user.ok("up")
    user.env = up_env
    try:
        user.ok("repo", "add", str(project))
        yield user, project
    finally:
        user.run("down", "--kill-terminals")


@pytest.mark.skipif(not IN_A_VENV, reason="Orca runs from no virtualenv here")
async def test_a_terminal_gets_the_asking_shells_environment_not_orcas_venv(
    started: tuple[User, Path], tmp_path: Path
) -> None:
    user, _project = started
    late_bin = tmp_path / "late-bin"
    late_bin.mkdir()
    tool = late_bin / "late-tool"
    tool.write_text("#!/bin/sh\necho late-tool-ran\n")
    tool.chmod(0o755)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    report = (
        'exec > "$OUT.tmp"; echo "VENV=[$VIRTUAL_ENV]"; echo "PATH=$PATH"; echo "PS1=$PS1";'
        ' echo "FOO=$FOO"; echo "TOOL=$(command -v late-tool)"; late-tool;'
        ' mv "$OUT.tmp" "$OUT"; exec sleep 600'
    )
    user.env = _another_shell(user.env, late_bin)
    user.env["OUT"] = str(out_dir / "env.txt")
    user.ok("term", "new", "project", "-e", "FOO=bar baz", "--", "/bin/sh", "-c", report)
    with trio.fail_after(30):
        await until_names(out_dir, lambda names: "env.txt" in names)
    seen = dict(
        line.split("=", 1) for line in (out_dir / "env.txt").read_text().splitlines() if "=" in line
    )
    assert seen["VENV"] == "[]", "Orca's VIRTUAL_ENV reached the agent"
    assert ORCA_BIN not in seen["PATH"].split(os.pathsep), "Orca's venv bin/ is on the agent's PATH"
    assert seen["PATH"].split(os.pathsep)[0] == str(late_bin), "not the asking shell's PATH"
    assert seen["PS1"] == "$ "
    assert seen["FOO"] == "bar baz"
    assert seen["TOOL"] == str(tool)
    assert "late-tool-ran" in (out_dir / "env.txt").read_text()


def test_a_bad_env_option_is_a_usage_error(started: tuple[User, Path]) -> None:
    user, _project = started
    done = user.run("term", "new", "project", "-e", "NOEQUALS", "--", "/bin/true")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["orca: -e takes NAME=VALUE, not 'NOEQUALS'"]


async def test_run_new_looks_agents_up_on_the_asking_shells_path(
    started: tuple[User, Path], tmp_path: Path
) -> None:
    user, _project = started
    before = user.json("worktree", "ls")["worktrees"]
    refused = user.run("run", "new", "project", "do it", "--agents", "claude:2")
    assert refused.returncode == 2, refused.stderr
    [line] = refused.stderr.strip().splitlines()
    # The PATH searched: this shell's, Orca's own venv taken off it.
    searched = os.pathsep.join(d for d in user.env["PATH"].split(os.pathsep) if d != ORCA_BIN)
    assert line == f"orca: claude: 'claude' not found on PATH={searched}"
    assert user.json("worktree", "ls")["worktrees"] == before, "a refused run created worktrees"
    assert user.json("run", "ls")["runs"] == []

    # Installed after `orca up`, in a folder only this shell has on its PATH.
    late_bin = fake_agents(tmp_path / "installed-later")
    user.env["PATH"] = os.pathsep.join([str(late_bin), user.env["PATH"]])
    run = user.json("run", "new", "project", "do it", "--agents", "claude:2")["run"]["run"]
    with trio.fail_after(60):
        async with run_watcher(user.paths) as watcher:
            info = await watcher.until(run, lambda i: all(v.state == "idle" for v in i.variants))
    assert info.state == "active"
    assert sorted(p for _pane, p in prompts(tmp_path / "prompts.log")) == ["do it", "do it"]

    # Every variant failing for good (its base does not exist) leaves the run failed.
    doomed = user.json(
        "run", "new", "project", "do it", "--agents", "claude:2", "--base", "no-such-branch"
    )["run"]["run"]
    with trio.fail_after(60):
        async with run_watcher(user.paths) as watcher:
            failed = await watcher.until(doomed, lambda i: i.state == "failed")
    assert {v.state for v in failed.variants} == {"failed"}
    [row] = [r for r in user.json("run", "ls")["runs"] if r["run"] == doomed]
    assert row["state"] == "failed"


async def test_uncommitted_work_counts_and_merges_with_commit(
    started: tuple[User, Path], tmp_path: Path
) -> None:
    """Issue 40 item 6: an agent that leaves its edit uncommitted (Claude Code's default)
    changed something: run show counts it (marked uncommitted), a plain merge refuses
    naming --commit, and ``run merge --commit`` commits it first with a message naming
    the run and the variant."""
    user, project = started
    user.env["PATH"] = os.pathsep.join([str(fake_agents(tmp_path / "agents")), user.env["PATH"]])
    user.env["FAKE_AGENT_UNCOMMITTED"] = "1"
    run = user.json("run", "new", "project", "write it", "--agents", "claude:1", "--name", "wip")
    run_id = run["run"]["run"]
    with trio.fail_after(60):
        async with run_watcher(user.paths) as watcher:
            await watcher.until(run_id, lambda i: all(v.state == "idle" for v in i.variants))
    [variant] = user.json("run", "show", run_id)["run"]["variants"]
    assert variant["diffstat"] == {"files": 1, "insertions": 1, "deletions": 0}
    assert variant["uncommitted"] == {"files": 1, "insertions": 1, "deletions": 0}
    assert "1f +1 -0 (1f uncommitted)" in user.ok("run", "show", run_id)

    refused = user.run("run", "merge", run_id, "claude-1")
    assert refused.returncode == 2, refused.stderr
    assert "uncommitted" in refused.stderr and "--commit" in refused.stderr
    merged = user.json("run", "merge", run_id, "claude-1", "--commit")["merge"]
    log = _git(project, "log", "--format=%s", merged["into"])
    assert "orca run wip: claude-1's uncommitted work (claude)" in log
    assert _git(project, "show", f"{merged['into']}:answer-claude.txt") == "claude: write it\n"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.skipif(not IN_A_VENV, reason="Orca runs from no virtualenv here")
def test_orca_works_in_a_new_login_shell_after_up(started: tuple[User, Path]) -> None:
    """Issue 40 item 3: after the README's `orca up`, a new login shell of the user (the
    venv not activated; ~/.profile as Debian's /etc/skel has it) finds `orca`."""
    user, _project = started
    home = Path(user.env["HOME"])
    skel = Path("/etc/skel/.profile")
    profile = (
        skel.read_text()
        if skel.exists()
        else 'if [ -d "$HOME/.local/bin" ] ; then PATH="$HOME/.local/bin:$PATH"; fi\n'
    )
    (home / ".profile").write_text(profile)
    shell = subprocess.run(
        ["bash", "-l", "-c", "command -v orca && orca --version && echo VENV=[$VIRTUAL_ENV]"],
        env={"HOME": str(home), "PATH": "/usr/bin:/bin", "ORCA_HOME": str(user.orca_home)},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert shell.returncode == 0, shell.stderr
    found, version, venv = shell.stdout.splitlines()
    assert found == str(home / ".local" / "bin" / "orca")
    assert version.startswith("orca ") and venv == "VENV=[]"
