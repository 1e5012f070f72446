"""A hostile remote host cannot end or grow the gateway that follows it (issue 18).

The "remote host" is a fake gateway in this test: a CURVE ROUTER that answers the
follower's requests with a nesting bomb, results of the wrong type, a snapshot far
above the row bound, malformed events, and finally silence. The real gateway actor
follows it; afterwards it is the same process, still answering, its mirror of that
host bounded and marked unreachable.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import msgspec
import trio
import zmq
from support.actors import running_actor
from support.remote import FAST_BEATS

from actors.gateway.hostmirror import MAX_ROWS
from orca.contracts import gateway as gw
from orca.contracts import hooks
from orca.contracts.base import NoArgs
from orca.keys import KeyPair
from orca.paths import resolve_paths
from orca.remote.hosts import add_host
from orca.wire.envelope import decode_request, encode_error, encode_ok
from orca.wire.errors import Unavailable

TEST_TIMEOUT_S = 40.0


def _row(i: int) -> dict[str, Any]:
    return {
        "paneKey": f"t{i}:leaf",
        "worktreeId": "r::/w",
        "state": "working",
        "source": "terminal",
        "updatedAtMs": 1,
        "stateSinceMs": 1,
    }


class HostileHost:
    """Answers each request by the script below, in a thread of its own."""

    def __init__(self) -> None:
        self.pair = KeyPair.generate()
        self.ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.curve_secretkey, self.sock.curve_publickey = self.pair.secret, self.pair.public
        self.sock.curve_server = True
        self.sock.bind("tcp://127.0.0.1:*")
        self.endpoint = self.sock.getsockopt(zmq.LAST_ENDPOINT).decode()  # type: ignore[union-attr]
        self.heads = 0
        self.snapshots = 0
        self.silent = threading.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _answer(self, frame: bytes) -> bytes | None:
        req = decode_request(frame)
        if self.silent.is_set():
            return None
        if req.op == gw.EVENTS.name:
            args = msgspec.msgpack.decode(req.args)
            if args.get("after", -1) < 0:
                self.heads += 1
                if self.heads == 1:
                    return b"\x91" * 5000  # a nesting bomb instead of a reply
                if self.heads == 2:
                    return encode_ok(req.id, "not a batch")
                return encode_ok(req.id, {"epoch": "E", "next": 0, "gap": False, "events": []})
            bad = [
                {"src": "hooks", "epoch": "H", "seq": 2, "type": hooks.STATUS_SET.type, "data": {"row": 5}},
                {"src": "hooks", "epoch": "H", "seq": 3, "type": "x" * 10_000, "data": [[[[1]]]]},
                {"src": "nobody", "epoch": "?", "seq": -1, "type": "", "data": None},
            ]
            self.silent.set()  # after this batch: silence (the link "drops")
            return encode_ok(req.id, {"epoch": "E", "next": 3, "gap": False, "events": bad})
        if req.op == hooks.SNAPSHOT.name:
            self.snapshots += 1
            rows = [_row(i) for i in range(MAX_ROWS + 2000)]
            return encode_ok(req.id, {"epoch": "H", "seq": 1, "rev": 1, "rows": rows})
        return encode_error(req.id, Unavailable("nothing here"))

    def _serve(self) -> None:
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        while not self.stop.is_set():
            if not poller.poll(100):
                continue
            ident, *rest = self.sock.recv_multipart()
            if len(rest) != 1:
                continue
            body = self._answer(rest[0])
            if body is not None:
                self.sock.send_multipart([ident, body])

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.sock.close(linger=0)
        self.ctx.term()


async def _mirror(gateway: Any) -> gw.HostMirror | None:
    mirrors = await gateway.client.invoke(gw.MIRRORS, NoArgs())
    return mirrors.hosts[0] if mirrors.hosts else None


async def test_hostile_remote_host_cannot_end_or_grow_the_follower(orca_home: Path) -> None:
    host = HostileHost()
    host.thread.start()
    try:
        paths = resolve_paths({"ORCA_HOME": str(orca_home)}).ensure()
        add_host(paths, "evil", host.endpoint, host.pair.public.decode())
        with trio.fail_after(TEST_TIMEOUT_S):
            async with running_actor("gateway", orca_home, dict(FAST_BEATS)) as gateway:
                before = gateway.proc.pid
                # Loaded once (bounded), then the malformed batch, then silence.
                await trio.to_thread.run_sync(host.silent.wait, abandon_on_cancel=True)
                assert host.snapshots >= 1
                # The mirror lives in the other process: its state can only be polled.
                while True:
                    m = await _mirror(gateway)
                    if m is not None and not m.link.reachable:
                        break
                    await trio.sleep(0.1)
                assert m.link.unverifiable_since is not None and m.link.error
                assert 0 < len(m.rows) <= MAX_ROWS
                assert gateway.proc.poll() is None and gateway.proc.pid == before
                status = await gateway.client.invoke(gw.STATUS, NoArgs())
                assert [h.name for h in status.hosts] == ["evil"]
                assert host.heads >= 3, "the bomb and the wrong type were retried past"
                assert b"Traceback" not in gateway.log.text
    finally:
        host.close()
