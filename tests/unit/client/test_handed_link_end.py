"""After its link ends, a handed terminal's client waits for that ptyd to exit before
it connects again (issue 39): a ptyd killed with SIGKILL closes its connections and
its listening socket one by one, and a client that connected at once reached the dying
listener, switched the user's terminal back to the alternate screen and lost the link.

A real process listens on the attach socket (as ptyd does); the test kills it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from orca.client.handed import HandedTerminal
from orca.contracts.ptyd import LOCAL_STREAM_FILE
from orca.paths import OrcaPaths
from orca.wire.errors import Unavailable

LISTENER = """
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(8)
sys.stdout.write("LISTENING\\n"); sys.stdout.flush()
conn, _ = s.accept()
sys.stdout.write("ACCEPTED\\n"); sys.stdout.flush()
time.sleep(120)
"""


@pytest.fixture
def paths(tmp_path: Path) -> OrcaPaths:
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    return OrcaPaths(None, tmp_path, run, tmp_path, tmp_path)


@pytest.fixture
def ptyd(paths: OrcaPaths) -> Iterator[subprocess.Popen[str]]:
    """A process listening on the attach socket, as ptyd does."""
    sock_path = paths.runtime_dir / LOCAL_STREAM_FILE
    with subprocess.Popen(
        [sys.executable, "-c", LISTENER, str(sock_path)], stdout=subprocess.PIPE, text=True
    ) as listener:
        try:
            assert listener.stdout is not None
            assert listener.stdout.readline() == "LISTENING\n"
            yield listener
        finally:
            listener.kill()
            listener.wait(10)


def test_the_client_waits_for_the_killed_ptyd_to_exit_then_finds_no_listener(
    paths: OrcaPaths, ptyd: subprocess.Popen[str]
) -> None:
    link = HandedTerminal.connect(paths)
    try:
        assert ptyd.stdout is not None and ptyd.stdout.readline() == "ACCEPTED\n"
        os.kill(ptyd.pid, signal.SIGKILL)
        link.wait_ptyd_exited(timeout_s=60)
        # Exited: a zombie (we have not reaped it), its descriptors all closed.
        with open(f"/proc/{ptyd.pid}/stat") as stat:
            assert stat.read().rsplit(")", 1)[1].split()[0] == "Z"
        with pytest.raises(Unavailable):
            HandedTerminal.connect(paths).close()
    finally:
        link.close()


def test_a_live_ptyd_that_dropped_the_link_is_waited_for_at_most_the_bound(
    paths: OrcaPaths, ptyd: subprocess.Popen[str]
) -> None:
    link = HandedTerminal.connect(paths)
    try:
        link.wait_ptyd_exited(timeout_s=0)  # alive: it returns at the bound
        assert ptyd.poll() is None
    finally:
        link.close()
