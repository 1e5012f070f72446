"""Issue 16 item 4: one 2 KB frame nested ~1,000 deep killed any actor, and orcad with it.

Sent to every socket of the real tree (each actor's RPC and orcad's), such frames now get
``bad_frame`` and nothing restarts: the same pids answer afterwards, no restart counted.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import zmq
from support.journey import User

from orca.client.sync import invoke
from orca.contracts import supervisor as sup
from orca.contracts import sys as sys_contract
from orca.wire.codec import encode
from orca.wire.envelope import decode_reply

ACTORS = ("store", "ptyd", "hooks", "gitwatch", "supervisor")
HOSTILE = {
    "array-2000": b"\x91" * 2000 + b"\x00",
    "map-2000": b"\x81\xa1a" * 2000 + b"\x00",
    "args-3000": encode({"v": 1, "id": "deep", "op": "sys.ping", "args": {}})[:-1]
    + b"\x81\xa1p"
    + b"\x91" * 3000
    + b"\x00",
    "not-msgpack": b"\xc1" * 64,
    "three-frames": b"",
}


def _send(endpoint: str, frame: bytes) -> list[bytes]:
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    try:
        if frame:
            sock.send(frame)
        else:
            sock.send_multipart([b"a", b"b", b"c"])
        replies = []
        while sock.poll(3000 if not replies else 100):
            replies.append(sock.recv())
        return replies
    finally:
        sock.close()


@pytest.mark.timeout(180)
def test_hostile_frames_to_every_socket_restart_nothing(orca_home: Path, tmp_path: Path) -> None:
    """Every actor and orcad answer garbage with an error reply and keep their pids."""
    user = User(orca_home, tmp_path / "user")
    user.ok("up")
    try:
        before = invoke(sup.STATUS, paths=user.paths)
        pids = {a.name: a.pid for a in before.actors}
        for actor in ACTORS:
            endpoint = user.paths.ipc_endpoint(actor, "rpc")
            for name, frame in HOSTILE.items():
                codes = [decode_reply(r).error for r in _send(endpoint, frame)]
                assert codes and all(c is not None for c in codes), (actor, name, codes)
                assert {c["code"] for c in codes if c} <= {"bad_frame", "bad_request"}, (actor, name)
            hello = invoke(sys_contract.HELLO, endpoint=endpoint)
            assert hello.name == actor
        after = invoke(sup.STATUS, paths=user.paths)
        assert {a.name: a.pid for a in after.actors} == pids
        assert [a.restarts for a in after.actors] == [0] * len(after.actors)
    finally:
        user.ok("down", "--kill-terminals")
