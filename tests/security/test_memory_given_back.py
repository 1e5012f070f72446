"""Memory a peer's large frames make an actor hold is given back (issue 33).

A process of the same uid sent 60 MB frames to every RPC socket of the real tree;
afterwards each actor kept 95 to 170 MiB more than before, for good: glibc had raised
its mmap threshold to the size of the first large block freed, and every later one
came from a heap that keeps what is freed (``orca/actor/memory.py``). Now each actor
fixes that threshold at start, and a request socket refuses a frame above its cap at
the header (``orca/actor/rpc_server.py``). Here every actor's ROUTER gets frames just
under the request limit (answered), just over it (answered ``too_large``) and far over
the socket's cap (the connection dropped); each actor's resident memory afterwards is
within a few MiB of what it was before.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq
from support.remote import Tree, start_tree, stop_tree

from orca.actor.rpc_server import REQUEST_SOCKET_MAX_BYTES
from orca.client.sync import invoke
from orca.contracts import sys as sys_contract
from orca.wire.codec import MAX_FRAME_BYTES, encode

# What an actor may keep of the flood: the allocator's own slack, far below the frames'.
KEPT_MIB = 12


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[Tree]:
    serving = start_tree(tmp_path / "home", listen=None)
    try:
        yield serving
    finally:
        stop_tree(serving)


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


def flood(endpoint: str) -> None:
    """Large requests, each answered (or its connection dropped) before the next."""
    near = MAX_FRAME_BYTES - 64 * 1024
    frames = [
        encode({"v": 1, "id": f"big{i}", "op": "sys.ping", "args": {"pad": b"x" * near}})
        for i in range(3)
    ]
    frames.append(
        encode({"v": 1, "id": "over", "op": "sys.ping", "args": {"pad": b"x" * MAX_FRAME_BYTES}})
    )
    context = zmq.Context.instance()
    for frame in frames:
        sock = context.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(endpoint)
        try:
            sock.send(frame)
            assert sock.poll(30_000), f"no answer from {endpoint}"
            sock.recv()
        finally:
            sock.close()
    sock = context.socket(zmq.DEALER)  # far over the cap: dropped at the header
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    try:
        sock.send(b"\x00" * (REQUEST_SOCKET_MAX_BYTES + 40 * 1024 * 1024))
        assert not sock.poll(500), "a frame over the socket's cap was answered"
    finally:
        sock.close()


def test_large_frames_leave_no_memory_behind_in_any_actor(tree: Tree) -> None:
    actors = {name: pid for name, (pid, _restarts) in tree.restarts().items() if pid}
    for name in actors:  # each has served a request: its steady state
        invoke(sys_contract.HELLO, endpoint=tree.paths.ipc_endpoint(name, "rpc"))
    before = {name: rss_mib(pid) for name, pid in actors.items()}
    for name in actors:
        flood(tree.paths.ipc_endpoint(name, "rpc"))
        assert (
            invoke(sys_contract.HELLO, endpoint=tree.paths.ipc_endpoint(name, "rpc")).name == name
        )
    after = {name: rss_mib(pid) for name, pid in actors.items()}
    kept = {name: round(after[name] - before[name], 1) for name in actors}
    assert all(mib <= KEPT_MIB for mib in kept.values()), kept
    assert {name: pid for name, (pid, _r) in tree.restarts().items() if pid} == actors
