"""Issue 32, errors a newcomer meets, through the real CLI on a real tree: each is one
line that says what to do, and nothing is left running.

* ``orca web`` on a port another program holds: one line naming the port and the
  option that fixes it (``--bind``), no traceback; the dashboard's own process, run on
  that port, says the same in one line.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.journey import User


@pytest.fixture
def user(orca_home: Path, tmp_path: Path) -> Iterator[User]:
    user = User(orca_home, tmp_path / "user")
    user.ok("up")
    try:
        yield user
    finally:
        user.ok("down")


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port another program listens on."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        yield int(other.getsockname()[1])


def test_orca_web_on_a_port_in_use_says_so_in_one_line(user: User, taken_port: int) -> None:
    done = user.run("web", "--bind", f"127.0.0.1:{taken_port}", timeout=60)
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith(f"orca: 127.0.0.1:{taken_port} is in use"), line
    assert "orca web --bind 127.0.0.1:PORT" in line and "web.toml" in line
    assert "Traceback" not in done.stdout + done.stderr


def test_the_web_process_on_a_port_in_use_says_so_in_one_line(user: User, taken_port: int) -> None:
    """As orcad starts it (web.toml's port taken): one line in its stderr, not the
    traceback of the nursery its start-up ran in."""
    env = {**user.env, "ORCA_WEB_BIND": f"127.0.0.1:{taken_port}"}
    env["ORCA_SUPERVISOR_PID"] = str(os.getpid())
    done = subprocess.run(
        [sys.executable, "-m", "actors.web"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith(f"web: 127.0.0.1:{taken_port} is in use"), line
