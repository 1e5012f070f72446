"""The actors forked from one preloaded image (issue 36: memory), under the real orcad.

What a user sees does not change: every actor is orcad's child, shows its own
``python -m actors.X`` command line, restarts when killed, and nothing of the tree is
left after ``orca down``. What changes is underneath: an actor's anonymous memory is
partly shared with the fork server's (pages it never wrote since the fork), which an
interpreter started on its own never has; orcad forks the fork server from itself
before it starts anything, so orcad's own heap is shared too. Killing the fork server
loses no actor; the next restart is a fresh interpreter and works as before.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import psutil
import trio
import trio.lowlevel
from support.lifecycle import lifecycle
from support.procs import REPO, child_env, run_cli, wake_every_actor

from orca.contracts import supervisor as sup
from orca.paths import resolve_paths


def _status(home: Path) -> dict[str, Any]:
    result = run_cli(home, "status", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def _orcad(home: Path) -> int:
    info = sup.read_lock_info(resolve_paths({"ORCA_HOME": str(home)}).lock_file)
    assert info is not None and info.pid is not None
    return info.pid


def shared_anonymous_kib(pid: int) -> int:
    """KiB of the process's anonymous memory (heap, arenas) shared with another process:
    only a fork leaves such pages (a fresh interpreter shares files, never its heap)."""
    total = 0
    anonymous = False
    with open(f"/proc/{pid}/smaps", encoding="utf-8") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and len(head[0]) > 8 and ":" not in head[0]:
                # A mapping's first line: "start-end perms offset dev inode [path]".
                anonymous = len(head) < 6 or head[5] in ("[heap]", "[anon]")
            elif anonymous and head[0] in ("Shared_Dirty:", "Shared_Clean:"):
                total += int(head[1])
    return total


async def _wait_exit(pid: int) -> None:
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        await trio.lowlevel.wait_readable(fd)
    finally:
        trio.lowlevel.notify_closing(fd)
        os.close(fd)


async def _kill_and_restarted(home: Path, name: str, old: int) -> int:
    """kill -9 ``name``; its new pid once orcad announces it ready again."""
    async with lifecycle(home) as (mirror, rec):
        os.kill(old, signal.SIGKILL)
        await mirror.wait_until(lambda m: rec.seen(sup.STARTED, name, lambda d: d.pid != old))
        [started] = [d for d in rec.of(sup.STARTED, name) if d.pid != old]
        return started.pid


async def test_actors_are_forked_orcads_children_and_survive_the_fork_servers_death(
    orca_home: Path,
) -> None:
    with trio.fail_after(120):
        result = run_cli(orca_home, "up")
        assert result.returncode == 0, result.stderr
        # The dormant ones too (issue 36): an actor started when asked is forked alike.
        wake_every_actor(resolve_paths({"ORCA_HOME": str(orca_home)}))
        orcad = _orcad(orca_home)
        status = _status(orca_home)
        forkserver = status["orcad"]["forkserverPid"]
        assert forkserver is not None, "orcad runs a fork server"
        assert psutil.Process(forkserver).ppid() == orcad
        assert "actors.supervisor.forkserver" in psutil.Process(forkserver).cmdline()
        # orcad forked it from itself before starting anything: orcad's own heap (trio,
        # pyzmq, the runtime) is shared with it and every actor, not loaded twice.
        assert shared_anonymous_kib(orcad) > 1024, "orcad shares its heap with the fork server"
        actors = {a["name"]: a["pid"] for a in status["actors"]}
        assert {"store", "hooks", "ptyd", "gitwatch"} <= set(actors)
        for name, pid in actors.items():
            proc = psutil.Process(pid)
            assert proc.ppid() == orcad, f"{name} is orcad's child"
            assert f"actors.{name}" in proc.cmdline(), proc.cmdline()
            assert shared_anonymous_kib(pid) > 1024, f"{name} shares the fork server's heap"
            log = resolve_paths({"ORCA_HOME": str(orca_home)}).log_file(name).read_text()
            assert "Warning" not in log, f"{name}'s log: {log[:400]}"
            assert status["actors"][0]["pss"] is not None

        # kill -9 of an actor: orcad restarts it, forked again.
        gitwatch = await _kill_and_restarted(orca_home, "gitwatch", actors["gitwatch"])
        assert psutil.Process(gitwatch).ppid() == orcad
        assert shared_anonymous_kib(gitwatch) > 1024

        # kill -9 of the fork server: no actor goes with it; the next restart is a
        # fresh interpreter, and works.
        os.kill(forkserver, signal.SIGKILL)
        await _wait_exit(forkserver)
        running = {a["name"]: a["pid"] for a in _status(orca_home)["actors"]}
        assert running == {**actors, "gitwatch": gitwatch}
        hooks = await _kill_and_restarted(orca_home, "hooks", running["hooks"])
        proc = psutil.Process(hooks)
        assert proc.ppid() == orcad and "actors.hooks" in proc.cmdline()
        assert shared_anonymous_kib(hooks) == 0, "a fresh interpreter shares no heap"
        assert _status(orca_home)["orcad"]["forkserverPid"] is None

        result = run_cli(orca_home, "down")
        assert result.returncode == 0, result.stderr
        await _wait_exit(orcad)
        assert not [p for p in running.values() if psutil.pid_exists(p)]


async def test_orcad_killed_ends_the_fork_server(orca_home: Path) -> None:
    """kill -9 of orcad: the fork server sees its socket close and exits (it would
    otherwise hold a stale image forever); the actors stop on their own, as ever."""
    with trio.fail_after(120):
        result = run_cli(orca_home, "up")
        assert result.returncode == 0, result.stderr
        forkserver = _status(orca_home)["orcad"]["forkserverPid"]
        assert forkserver is not None
        orcad = _orcad(orca_home)
        fd = os.pidfd_open(forkserver)
        try:
            os.kill(orcad, signal.SIGKILL)
            await trio.lowlevel.wait_readable(fd)
        finally:
            trio.lowlevel.notify_closing(fd)
            os.close(fd)


async def test_an_actor_restarted_after_an_upgrade_runs_the_installed_code(
    orca_home: Path, tmp_path: Path
) -> None:
    """The fork server's image is the code as it was when orcad started: once the code
    on disk changed (an upgrade), a restarted actor is a fresh interpreter that imports
    what is installed now, as it was before the fork server."""
    install = tmp_path / "install"  # an installed copy of the packages, to upgrade in place
    for name in ("orca", "actors", "config"):
        shutil.copytree(REPO / name, install / name, ignore=shutil.ignore_patterns("__pycache__"))
    env = child_env(orca_home)
    env["PYTHONPATH"] = os.pathsep.join([str(install), env["PYTHONPATH"]])
    with trio.fail_after(120):
        result = run_cli(orca_home, "up", env=env)
        assert result.returncode == 0, result.stderr
        actors = {a["name"]: a["pid"] for a in _status(orca_home)["actors"]}
        assert shared_anonymous_kib(actors["hooks"]) > 1024  # forked

        (install / "actors" / "hooks" / "upgraded.py").write_text('"""A new module."""\n')
        hooks = await _kill_and_restarted(orca_home, "hooks", actors["hooks"])
        assert shared_anonymous_kib(hooks) == 0, "a fresh interpreter, importing the new code"
        assert _status(orca_home)["orcad"]["forkserverPid"] is not None  # still there
