"""Issue 15, a new user's first hour, item by item, through the CLI only.

Each test reproduces one numbered item of the issue as a user meets it (a fresh
ORCA_HOME, the real tree, the ``orca`` command started the way its console script
starts it: ``python -P``, so the current directory is not on ``sys.path``) and shows it
fixed. Items 4 and 5 (workspace folders, ``worktree mv``) are the gitwatch tests'.
"""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import trio
from support.journey import User, hooks_mirror, make_git_repo, recorded, wait_for_output
from support.lifecycle import lifecycle
from support.procs import REPO, write_config

from actors.ptyd.spawn import spawn_on_pty
from orca.contracts import gitwatch, ptyd
from orca.contracts import supervisor as sup

# The console script `orca` runs main without the script's directory or the current
# one on sys.path; `python -P -m` is the same start (item 1 is about exactly that).
ORCA = [sys.executable, "-P", "-m", "orca.cli.main"]
HANDLE = re.compile(r"^fix-login:[0-9a-f]{4,8}$")
# What an agent prints to report its state (OSC 9999), typed into the terminal's shell.
OSC_WORKING = """printf '\\033]9999;{"state":"working","agent":"claude"}\\007'"""


def orca(
    user: User, *args: str, cwd: Path | None = None, **kw: object
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ORCA, *args],
        env=user.env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        **kw,  # type: ignore[call-overload]
    )


def ok(user: User, *args: str, cwd: Path | None = None) -> str:
    result = orca(user, *args, cwd=cwd)
    assert result.returncode == 0, f"orca {' '.join(args)}: {result.stderr}"
    return result.stdout


def shadowing_cwd(root: Path) -> Path:
    """A directory like ``~`` once ``~/orca/`` exists: folders named after our packages."""
    for package in ("orca", "actors"):
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text("raise ImportError('shadowed by the cwd')\n")
    return root


async def read_pty_until_exit(pid: int, master: int) -> bytes:
    seen = b""
    while True:
        await trio.lowlevel.wait_readable(master)
        try:
            chunk = os.read(master, 65536)
        except BlockingIOError:
            continue
        except OSError as exc:  # EIO: the child closed its side
            assert exc.errno == errno.EIO
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    await trio.to_thread.run_sync(os.waitpid, pid, 0)
    return seen


def git_run(argv: list[str]) -> None:
    subprocess.run(argv, check=True, capture_output=True)


def list_into_a_closed_pipe(user: User) -> tuple[int, str]:
    """``orca worktree ls --json`` writing into a pipe nobody reads any more."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        closed = subprocess.run(
            [*ORCA, "worktree", "ls", "--json"],
            env=user.env, stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60,
        )  # fmt: skip
    finally:
        os.close(write_end)
    return closed.returncode, closed.stderr


def list_through_head(user: User) -> tuple[int, str, str]:
    """The issue's command verbatim: ``orca worktree ls --json | head -1`` (pipefail)."""
    piped = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f"{' '.join(ORCA)} worktree ls --json | head -1"],
        env=user.env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    return piped.returncode, piped.stdout, piped.stderr


async def test_first_hour_items_1_2_3_8(orca_home: Path, tmp_path: Path) -> None:
    """up from a dir holding `orca/`; handles everywhere; pipes; consistent names and codes."""
    with trio.fail_after(150):
        user = User(orca_home, tmp_path / "user")
        home_dir = shadowing_cwd(tmp_path / "user")
        project = make_git_repo(tmp_path / "src" / "project")

        # 1. `orca up` from a directory holding `orca/` and `actors/` folders works, and
        # a killed actor comes back from there too.
        assert "every actor ready" in ok(user, "up", cwd=home_dir)
        before = {
            a["name"]: a for a in json.loads(ok(user, "status", "--json", cwd=home_dir))["actors"]
        }
        async with lifecycle(orca_home) as (mirror, rec):
            os.kill(before["ptyd"]["pid"], signal.SIGKILL)
            await mirror.wait_until(
                lambda m: rec.seen(sup.STARTED, "ptyd", lambda d: d.pid != before["ptyd"]["pid"])
            )

        # 8. a duplicate `repo add` is bad input: exit 2.
        ok(user, "repo", "add", str(project), cwd=home_dir)
        again = orca(user, "repo", "add", str(project))
        assert again.returncode == 2 and "already added" in again.stderr

        # 2. worktrees and terminals have short handles; every command takes them.
        created = json.loads(
            ok(user, "worktree", "create", "project", "fix-login", "--setup", "skip", "--json")
        )["worktree"]
        (made,) = [
            w
            for w in json.loads(ok(user, "worktree", "ls", "--json"))["worktrees"]
            if w["handle"] == "fix-login"
        ]
        assert created["id"] == made["id"], "one field vocabulary across create and ls"
        async with recorded(orca_home, ptyd.CONTRACT, ptyd.SNAPSHOT) as (tmirror, trec, tclient):
            printed = ok(user, "term", "new", "fix-login", "--", "/bin/sh").strip()
            (listed,) = json.loads(ok(user, "term", "ls", "--json"))["sessions"]
            assert printed == listed["handle"] and HANDLE.match(printed), "stdout: its handle"
            first, handle = listed["sessionId"], listed["handle"]
            assert first.startswith(made["id"] + "@@")
            ok(
                user, "term", "send", "fix-login", "echo hi-$((1+2))", "--enter"
            )  # its only terminal
            await wait_for_output(tclient, tmirror, trec, first, b"hi-3\r\n")
            assert "hi-3" in ok(user, "term", "read", handle)
            assert "hi-3" in ok(user, "term", "read", handle.split(":")[1])  # the bare hex

            # `worktree ps` on an 80-column terminal: the agent's terminal handle first
            # (what attach takes), every line fits; --json keeps the full ids.
            async with hooks_mirror(orca_home) as (agents, _):
                ok(user, "term", "send", handle, OSC_WORKING, "--enter")
                await agents.wait_until(lambda m: len(m.state) == 1)
            pid, master = spawn_on_pty([*ORCA, "worktree", "ps"], str(REPO), user.env, 80, 24)
            screen = (await read_pty_until_exit(pid, master)).decode()
            lines = [line for line in screen.replace("\r", "").splitlines() if line]
            assert lines[0].startswith("TERMINAL ") and all(len(line) <= 80 for line in lines)
            assert lines[1].split()[:3] == [handle, "claude", "working"], lines
            (ps_row,) = json.loads(ok(user, "worktree", "ps", "--json"))["worktrees"]
            assert ps_row["worktreeId"] == made["id"]

            second = user.new_terminal("fix-login", "/bin/sh")["sessionId"]  # --json: its id
            handles = {
                s["sessionId"]: s["handle"]
                for s in json.loads(ok(user, "term", "ls", "--json"))["sessions"]
            }
            assert handles[first] == handle, "a handle stays when another terminal appears"
            ambiguous = orca(user, "term", "read", "fix-login")
            assert ambiguous.returncode == 2
            assert handles[first] in ambiguous.stderr and handles[second] in ambiguous.stderr

            # The table, on an 80-column terminal: handle first, every line fits.
            pid, master = spawn_on_pty([*ORCA, "term", "ls"], str(REPO), user.env, 80, 24)
            screen = (await read_pty_until_exit(pid, master)).decode()
            lines = [line for line in screen.replace("\r", "").splitlines() if line]
            assert lines[0].startswith("TERMINAL ") and all(len(line) <= 80 for line in lines)
            assert sorted(line.split()[0] for line in lines[1:]) == sorted(handles.values())

            ok(user, "term", "kill", handles[second])
            ok(user, "term", "close", handles[second])

        # 3. a listing whose reader is gone: no traceback, exit 0.
        assert list_into_a_closed_pipe(user) == (0, "")
        assert list_through_head(user) == (0, "{\n", "")

        # 8. `--json` honours `--all`; OWNER in the table is the JSON's word.
        external = tmp_path / "src" / "outside"
        async with recorded(orca_home, gitwatch.CONTRACT, gitwatch.SNAPSHOT) as (gmirror, grec, _):
            git_run(
                ["git", "-C", str(project), "worktree", "add", "-q", "-b", "outside", str(external)]
            )
            await gmirror.wait_until(
                lambda m: grec.seen(gitwatch.WORKTREE_ADDED, lambda d: d.git.path == str(external))
            )
        shown = json.loads(ok(user, "worktree", "ls", "--json"))["worktrees"]
        every = json.loads(ok(user, "worktree", "ls", "--json", "--all"))["worktrees"]
        assert str(external) not in {w["path"] for w in shown}
        assert {w["path"] for w in every} == {w["path"] for w in shown} | {str(external)}
        table = ok(user, "worktree", "ls", "--all").splitlines()
        assert table[0].split()[0] == "WORKTREE"
        for row in every:
            (line,) = [t for t in table[1:] if t.split()[0] == row["handle"]]
            assert row["ownership"] in line.split() and row["path"] in line
            assert ("main" in line.split()) == row["isMainWorktree"]

        # 8. `repo rm` takes the names every other command takes.
        removed = orca(user, "repo", "rm", "project")
        assert removed.returncode == 0 and "removed project" in removed.stdout
        assert orca(user, "repo", "rm", "project").returncode == 2
        ok(user, "down", "--kill-terminals")


def test_completion_offers_commands_and_live_handles(orca_home: Path, tmp_path: Path) -> None:
    """bash's Tab through the real script: commands, then worktree and terminal handles."""
    if True:  # every step is a subprocess with its own timeout
        user = User(orca_home, tmp_path / "user")
        project = make_git_repo(tmp_path / "project")
        shim = tmp_path / "bin"
        shim.mkdir()
        (shim / "orca").write_text(f'#!/bin/sh\nexec {" ".join(ORCA)} "$@"\n')
        (shim / "orca").chmod(0o755)
        env = dict(user.env, PATH=f"{shim}{os.pathsep}{user.env['PATH']}")

        def tab(line: str) -> list[str]:
            script = (
                'eval "$(orca completion bash)"; COMP_LINE="$1"; COMP_POINT=${#COMP_LINE};'
                ' _orca_complete; printf "%s\\n" "${COMPREPLY[@]}"'
            )
            done = subprocess.run(
                ["bash", "-c", script, "bash", line],
                env=env,
                capture_output=True,
                text=True,
                timeout=30,
            )
            assert done.returncode == 0 and done.stderr == "", done.stderr
            return [w for w in done.stdout.splitlines() if w]

        assert tab("orca term at") == ["attach"]
        assert tab("orca worktree rm ") == [], "the service is down: nothing, quietly"
        ok(user, "up")
        ok(user, "repo", "add", str(project))
        ok(user, "worktree", "create", "project", "fix-login", "--setup", "skip")
        assert "fix-login" in tab("orca worktree rm ")
        ok(user, "term", "new", "fix-login", "--", "/bin/sh")
        (session,) = json.loads(ok(user, "term", "ls", "--json"))["sessions"]
        assert tab("orca term attach fix") == [session["handle"]]
        # bash splits words at ":", so the candidate is what follows the colon.
        assert tab("orca term read fix-login:") == [session["handle"].split(":")[1]]
        for shell in ("bash", "zsh", "fish"):
            assert "orca __complete" in ok(user, "completion", shell)
        ok(user, "down", "--kill-terminals")


def test_failed_up_prints_only_this_runs_errors(orca_home: Path, tmp_path: Path) -> None:
    """Item 8: a second failed `orca up` does not repeat the first one's log lines."""
    user = User(orca_home, tmp_path / "user")
    write_config(orca_home, "[supervisor]\ntcp_host = '10.0.0.1'\n")
    first = orca(user, "up")
    assert first.returncode == 1 and "tcp_host" in first.stderr
    write_config(orca_home, "[supervisor]\nstrategy = 'sideways'\n")
    second = orca(user, "up")
    assert second.returncode == 1 and "strategy" in second.stderr
    assert "tcp_host" not in second.stderr, "the first run's error is not this run's"


def test_readme_install_puts_orca_on_path_and_tests_use_their_own_venv() -> None:
    """Item 6: the install command ends with `orca` on PATH; CI runs the README's test
    command verbatim, and it installs into a virtualenv, not the system Python."""
    readme = (REPO / "README.md").read_text()
    section = readme.split("## The two commands", 1)[1].split("## ", 1)[0]
    install, tests = re.findall(r"```sh\n(.*?)\n```", section, re.S)
    assert install.endswith("&& . .venv/bin/activate && orca up")
    assert tests == (REPO / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert re.fullmatch(
        r"python3 -m venv (\S+) && \1/bin/pip install tox && \1/bin/tox -e tests", tests
    )
    # What `. .venv/bin/activate` does for this checkout's own venv: `orca` resolves.
    venv = Path(sys.prefix)
    shell = f". {venv}/bin/activate && command -v orca && orca --version"
    found = subprocess.run(
        ["bash", "-c", shell], env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines()[0] == str(venv / "bin" / "orca")
    assert found.stdout.splitlines()[1].startswith("orca ")


def test_no_runtime_dir_means_no_warning_and_a_private_socket_dir(tmp_path: Path) -> None:
    """Item 7: without XDG_RUNTIME_DIR (ssh, root, containers) a command prints no
    platformdirs warning, and an ORCA_HOME keeps its sockets to itself."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("XDG_") and k != "ORCA_HOME"}
    env = dict(base, HOME=str(tmp_path / "user"), PYTHONWARNINGS="default")
    plain = subprocess.run([*ORCA, "status"], env=env, capture_output=True, text=True, timeout=30)
    assert plain.returncode in (0, 3)
    assert "warn" not in plain.stderr.lower() and len(plain.stderr.splitlines()) <= 1
    uid_root = Path("/tmp") / f"orca-{os.getuid()}"
    dirs = set()
    for name in ("a", "b"):
        user = User(tmp_path / name, tmp_path / "user")
        user.env = dict(env, ORCA_HOME=str(user.orca_home))
        result = orca(user, "status")
        assert result.returncode == 3 and "warn" not in result.stderr.lower()
        runtime = user.paths.runtime_dir
        assert runtime.is_relative_to(user.orca_home) or runtime.is_relative_to(uid_root)
        dirs.add(runtime)
    assert len(dirs) == 2, "two ORCA_HOMEs never share a socket directory"
