"""Real processes for tests: the CLI, orcad, standalone actors; cleanup by pid."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"


def child_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of every process a test starts: its own ORCA_HOME, the fixtures."""
    env = dict(os.environ)
    env["ORCA_HOME"] = str(home)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(FIXTURES), str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    env.pop("ORCA_TCP_HOST", None)
    if extra:
        env.update(extra)
    return env


def run_cli(
    home: Path,
    *args: str,
    timeout: float = 60.0,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``orca ARGS`` as a user would, in its own process."""
    return subprocess.run(
        [sys.executable, "-m", "orca.cli.main", *args],
        env=env or child_env(home),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def descendants(pid: int) -> list[int]:
    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def alive(pids: Iterable[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            p = psutil.Process(pid)
            if p.status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out


def kill_all(pids: Sequence[int]) -> None:
    """SIGKILL every pid (and its group, when it leads one), then reap our own children."""
    for pid in pids:
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    for pid in pids:
        try:
            psutil.Process(pid).wait(timeout=5)
        except (psutil.NoSuchProcess, psutil.TimeoutExpired, ChildProcessError):
            pass


def write_config(home: Path, text: str) -> None:
    cfg = home / "config"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "supervisor.toml").write_text(text)
