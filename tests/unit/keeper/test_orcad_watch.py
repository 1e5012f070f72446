"""The keeper's watch on orcad (actors/keeper/orcad_watch.py) against a scripted orcad:
a real process, the real lock file, started through the same ``launch_orcad``.

Each start of the fake orcad plays the next step of a plan: ``crash`` (takes the lock,
says ready, dies without letting go), ``run`` (takes the lock, says ready, lets go and
exits 0 on SIGTERM: an orderly stop)."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from actors.keeper.orcad_watch import OrcadWatch, orcad_environment, wait_child
from actors.keeper.revival import RevivalPolicy
from orca.contracts.fd_keeper import KEEPER_ENV
from orca.contracts.supervisor import (
    SUPERVISOR_PID_ENV,
    LockInfo,
    encode_lock_info,
    launch_orcad,
    read_abandoned_lock_info,
    read_lock_info,
)
from orca.paths import OrcaPaths, resolve_paths
from orca.user_env import UNBUFFERED_SET_ENV

FAKE_ORCAD = r"""
import os, signal, sys, time
from actors.supervisor.lock import InstanceLock
from orca.contracts.supervisor import LockInfo
from orca.paths import resolve_paths

args = sys.argv[1:]
ready_fd = int(args[args.index("--ready-fd") + 1])
count_file = os.environ["FAKE_ORCAD_COUNT"]
try:
    count = int(open(count_file).read())
except FileNotFoundError:
    count = 0
open(count_file, "w").write(str(count + 1))
plan = os.environ["FAKE_ORCAD_PLAN"].split(",")
step = plan[min(count, len(plan) - 1)]
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # for sigwait below
lock = InstanceLock(resolve_paths().ensure().lock_file)
lock.acquire(LockInfo(pid=os.getpid(), started_at=time.time()))
os.write(ready_fd, b"ready\n")
os.close(ready_fd)
if step == "crash":
    os._exit(1)  # the kernel drops the flock; the file keeps naming us
signal.sigwait({signal.SIGTERM})
lock.release()
"""


class Said(logging.Handler):
    """What the keeper's orcad watch logs (from its own thread); ``wait_for`` blocks
    until a line containing ``needle`` has been said (20 s at most)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []
        self._said = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self._said:
            self.lines.append(record.getMessage())
            self._said.notify_all()

    def wait_for(self, needle: str, since: int = 0) -> None:
        with self._said:
            found = self._said.wait_for(
                lambda: any(needle in line for line in self.lines[since:]), timeout=20
            )
        assert found, f"never said {needle!r}: {self.lines}"


@contextmanager
def watching(watch: OrcadWatch) -> Iterator[None]:
    """``watch.run`` in a thread, as the keeper runs it, until the block ends."""
    thread = threading.Thread(target=watch.run, name="orcad-watch", daemon=True)
    thread.start()
    try:
        yield
    finally:
        watch.stop()
        thread.join(10)
        assert not thread.is_alive(), "the watch did not stop"


@pytest.fixture
def said() -> Iterator[Said]:
    logger = logging.getLogger("keeper.orcad")
    handler = Said()
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)


@pytest.fixture
def home(tmp_path: Path) -> Iterator[tuple[OrcaPaths, dict[str, str], Path]]:
    """A profile, the environment and the "python" that starts the fake orcad; every
    fake still running is ended afterwards."""
    script = tmp_path / "fake_orcad.py"
    script.write_text(FAKE_ORCAD)
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} {script} "$@"\n')
    python.chmod(0o755)
    paths = resolve_paths({"ORCA_HOME": str(tmp_path / "home")}).ensure()
    env = dict(os.environ, ORCA_HOME=str(paths.home), FAKE_ORCAD_COUNT=str(tmp_path / "count"))
    try:
        yield paths, env, python
    finally:
        holder = read_lock_info(paths.lock_file)
        if holder is not None and holder.pid:
            os.kill(holder.pid, signal.SIGKILL)
            try:
                os.waitpid(holder.pid, 0)
            except ChildProcessError:
                pass


def abandon_lock(paths: OrcaPaths, pid: int = 999_999) -> None:
    """The file a `kill -9`ed orcad leaves: naming it, held by nobody."""
    paths.lock_file.write_bytes(encode_lock_info(LockInfo(pid=pid, started_at=time.time())))


def test_a_crash_loop_is_given_up_after_the_policys_fast_failures(
    home: tuple[OrcaPaths, dict[str, str], Path], said: Said
) -> None:
    """orcad died unannounced; every new one dies at once: three starts, then the watch
    gives up, says so, and starts nothing more."""
    paths, env, python = home
    env["FAKE_ORCAD_PLAN"] = "crash"
    abandon_lock(paths)
    policy = RevivalPolicy(delays=(0.0, 0.01), max_fast_failures=3)
    watch = OrcadWatch(paths, policy, python=str(python), environ=env)
    with watching(watch):
        said.wait_for("not starting it again")
        assert watch.started == 3
    assert read_lock_info(paths.lock_file) is None
    assert read_abandoned_lock_info(paths.lock_file) is not None


def test_an_orderly_stop_is_left_alone(
    home: tuple[OrcaPaths, dict[str, str], Path], said: Said
) -> None:
    """The orcad it started stops on purpose (its lock let go): nothing is started."""
    paths, env, python = home
    env["FAKE_ORCAD_PLAN"] = "run"
    abandon_lock(paths)
    watch = OrcadWatch(paths, python=str(python), environ=env)
    with watching(watch):
        said.wait_for("is back")
        held = read_lock_info(paths.lock_file)
        assert held is not None and held.pid is not None
        said.wait_for(f"watching orcad (pid {held.pid})")
        os.kill(held.pid, signal.SIGTERM)
        said.wait_for(f"orcad (pid {held.pid}) stopped (exit code 0)")
        assert watch.started == 1
        assert read_lock_info(paths.lock_file) is None
        assert read_abandoned_lock_info(paths.lock_file) is None


def test_a_nudge_watches_an_orcad_started_elsewhere_and_brings_it_back(
    home: tuple[OrcaPaths, dict[str, str], Path], said: Said
) -> None:
    """Idle (no orcad), then one is started by someone else and asks to be watched
    (`watch_orcad`): its kill -9 is answered by a new orcad."""
    paths, env, python = home
    env["FAKE_ORCAD_PLAN"] = "run"
    watch = OrcadWatch(paths, python=str(python), environ=env)
    with watching(watch):
        pid, ready_fd, _ = launch_orcad(str(python), env, paths.log_file("orcad"))
        assert os.read(ready_fd, 64) == b"ready\n"
        os.close(ready_fd)
        watch.nudge()
        said.wait_for(f"watching orcad (pid {pid})")
        os.kill(pid, signal.SIGKILL)
        wait_child(pid)
        said.wait_for("is back")
        assert watch.started == 1
        again = read_lock_info(paths.lock_file)
        assert again is not None and again.pid not in (None, pid)


def test_a_service_managers_orcad_is_left_to_it(
    home: tuple[OrcaPaths, dict[str, str], Path], said: Said
) -> None:
    """An abandoned lock that names a manager (systemd restarts it): nothing started."""
    paths, env, python = home
    env["FAKE_ORCAD_PLAN"] = "run"
    info = LockInfo(pid=999_999, started_at=time.time(), manager="systemd")
    paths.lock_file.write_bytes(encode_lock_info(info))
    watch = OrcadWatch(paths, python=str(python), environ=env)
    with watching(watch):
        said.wait_for("systemd restarts it")
        assert watch.started == 0


def test_a_new_orcad_gets_the_environment_of_orca_up(tmp_path: Path) -> None:
    """What orcad (or ptyd) added for its actors is taken off; ORCA_HOME is the keeper's."""
    paths = resolve_paths({"ORCA_HOME": str(tmp_path)})
    env = orcad_environment(
        {
            "PATH": "/bin",
            SUPERVISOR_PID_ENV: "1",
            KEEPER_ENV: "/x",
            "ORCA_ACTOR_NAME": "ptyd",
            "PYTHONUNBUFFERED": "1",
            UNBUFFERED_SET_ENV: "1",
            "ORCA_HOME": "/elsewhere",
        },
        paths,
    )
    assert env == {"PATH": "/bin", "ORCA_HOME": str(tmp_path)}
