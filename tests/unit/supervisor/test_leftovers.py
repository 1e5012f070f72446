"""orcad waits for a previous tree's actor still listening on its socket before it boots
(actors/supervisor/leftovers.py): found by SO_PEERCRED, waited for through a pidfd."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import trio

from actors.supervisor.leftovers import (
    listener_pid,
    rpc_socket_path,
    wait_for_leftover_actors,
)
from orca.paths import resolve_paths

LISTEN_UNTIL_STDIN_CLOSES = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(); print("listening", flush=True)
sys.stdin.read()
"""


@contextmanager
def listening(path: str) -> Iterator[subprocess.Popen[bytes]]:
    """Another process listening at ``path`` until its stdin closes; killed after."""
    with subprocess.Popen(
        [sys.executable, "-c", LISTEN_UNTIL_STDIN_CLOSES, path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    ) as old:
        try:
            assert old.stdout is not None and old.stdout.readline() == b"listening\n"
            yield old
        finally:
            old.kill()


def test_a_stale_socket_file_or_none_has_no_listener(tmp_path: Path) -> None:
    """A socket file nobody listens on any more (its actor was killed) refuses: None."""
    path = str(tmp_path / "alpha.rpc")
    assert listener_pid(path) is None
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)
    stale.close()
    assert os.path.exists(path) and listener_pid(path) is None


async def test_the_wait_ends_when_the_previous_actor_exits(tmp_path: Path) -> None:
    """alpha's socket is held by another process: the wait names its pid and ends once
    it exits; beta's socket, stale, is not waited for."""
    paths = resolve_paths({"ORCA_HOME": str(tmp_path)}).ensure()
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(rpc_socket_path(paths, "beta"))
    stale.close()
    with listening(rpc_socket_path(paths, "alpha")) as old:
        assert listener_pid(rpc_socket_path(paths, "alpha")) == old.pid
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                outcome: list[list[str]] = []

                async def wait() -> None:
                    outcome.append(await wait_for_leftover_actors(paths, ["alpha", "beta"]))

                nursery.start_soon(wait)
                await trio.sleep(0.2)
                assert outcome == [], "still waiting while alpha's old process listens"
                assert old.stdin is not None
                old.stdin.close()
        assert outcome == [[]]
        assert old.wait(timeout=10) == 0


async def test_the_wait_is_bounded(tmp_path: Path) -> None:
    """An old actor that does not stop: the wait gives up on it after the budget."""
    paths = resolve_paths({"ORCA_HOME": str(tmp_path)}).ensure()
    with listening(rpc_socket_path(paths, "alpha")), trio.fail_after(10):
        assert await wait_for_leftover_actors(paths, ["alpha"], budget=0.3) == ["alpha"]
