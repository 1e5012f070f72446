"""The gateway refuses every client it should, logs it, and nothing restarts (issue 18).

One real tree (``orca up``) whose gateway listens on loopback; attackers are raw pyzmq
sockets. Each refusal is checked three ways: the client gets nothing it should not
(no reply, or ``forbidden``), the gateway log names it, and the supervisor reports no
actor restarted (same pids, zero restarts).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq
from support.remote import Tree, free_port, probe, start_tree, stop_tree

from orca import keys
from orca.client.sync import invoke
from orca.contracts import gateway as gw
from orca.contracts import ptyd
from orca.contracts import sys as sys_contract
from orca.keys import KeyPair
from orca.remote import access

PING = sys_contract.PING.name


@pytest.fixture(scope="module")
def serving(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tree]:
    home = tmp_path_factory.mktemp("gw") / "home"
    tree = start_tree(home, listen=f"tcp://127.0.0.1:{free_port()}")
    try:
        yield tree
    finally:
        stop_tree(tree)


def _endpoint(tree: Tree) -> str:
    status = invoke(gw.STATUS, paths=tree.paths)
    assert status.listening is not None
    return status.listening


def _server_key(tree: Tree) -> bytes:
    return keys.host_public_key(tree.paths)


def _authorized(tree: Tree, name: str, level: gw.Access = "full") -> KeyPair:
    pair = KeyPair.generate()
    access.authorize(tree.paths, pair.public, name, level)
    return pair


def test_an_authorized_key_is_served(serving: Tree) -> None:
    """The control every refusal below is measured against: a full key gets replies."""
    pair = _authorized(serving, "control")
    reply = probe(_endpoint(serving), PING, server_key=_server_key(serving), client=pair)
    assert reply is not None and reply["ok"], reply


def test_unknown_key_is_refused_at_the_handshake(serving: Tree) -> None:
    before = serving.restarts()
    stranger = KeyPair.generate()
    assert probe(_endpoint(serving), PING, server_key=_server_key(serving), client=stranger) is None
    serving.wait_log(f"unknown or revoked key, key {stranger.public.decode()}")
    assert invoke(gw.STATUS, paths=serving.paths).zap_denied >= 1
    assert serving.restarts() == before


def test_revoked_key_is_refused_on_new_and_open_connections(serving: Tree) -> None:
    before = serving.restarts()
    pair = _authorized(serving, "soon-revoked")
    endpoint, server = _endpoint(serving), _server_key(serving)
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    open_conn = ctx.socket(zmq.DEALER)
    open_conn.setsockopt(zmq.LINGER, 0)
    open_conn.curve_publickey, open_conn.curve_secretkey = pair.public, pair.secret
    open_conn.curve_serverkey = server
    open_conn.connect(endpoint)
    try:
        from orca.wire.envelope import decode_reply, encode_request

        open_conn.send(encode_request("a", PING, {}))
        assert open_conn.poll(3000) and decode_reply(open_conn.recv()).ok
        assert access.revoke(serving.paths, "soon-revoked") == ["soon-revoked"]
        # The connection opened before the revocation: its next request is refused.
        open_conn.send(encode_request("b", PING, {}))
        assert open_conn.poll(3000)
        reply = decode_reply(open_conn.recv())
        assert not reply.ok and reply.error is not None and reply.error["code"] == "forbidden"
    finally:
        open_conn.close(linger=0)
    # A new connection does not get past the handshake.
    assert probe(endpoint, PING, server_key=server, client=pair) is None
    serving.wait_log("key not (or no longer) authorized")
    assert serving.restarts() == before


def test_read_only_key_cannot_call_a_mutating_op(serving: Tree, tmp_path: Path) -> None:
    before = serving.restarts()
    reader = _authorized(serving, "reader", "read-only")
    endpoint, server = _endpoint(serving), _server_key(serving)
    listed = probe(endpoint, ptyd.LIST.name, {}, server_key=server, client=reader)
    assert listed is not None and listed["ok"], listed
    marker = tmp_path / "spawned"
    spawn = {"argv": ["touch", str(marker)], "cwd": str(tmp_path), "worktreeId": f"r::{tmp_path}"}
    refused = probe(endpoint, ptyd.SPAWN.name, spawn, server_key=server, client=reader)
    assert refused is not None and not refused["ok"]
    assert refused["error"]["code"] == "forbidden", refused
    assert not marker.exists()
    # Ops that are never relayed (a local-only op, the supervisor's) are refused too.
    for op in (gw.STATUS.name, "sup.stop"):
        denied = probe(endpoint, op, {}, server_key=server, client=reader)
        assert denied is not None and denied["error"]["code"] == "forbidden", (op, denied)
    serving.wait_log("'term.spawn' is not allowed for a read-only key (reader)")
    assert serving.restarts() == before


def test_client_pinning_the_wrong_server_key_gets_nothing(serving: Tree) -> None:
    before = serving.restarts()
    pair = _authorized(serving, "pinned-wrong")
    impostor_key = KeyPair.generate().public
    assert probe(_endpoint(serving), PING, server_key=impostor_key, client=pair) is None
    serving.wait_log("not a CURVE client of this server key")
    assert serving.restarts() == before


def test_plaintext_client_gets_nothing(serving: Tree) -> None:
    before = serving.restarts()
    failures = invoke(gw.STATUS, paths=serving.paths).handshake_failures
    assert probe(_endpoint(serving), PING, server_key=None, client=None) is None
    serving.wait_log("not a CURVE client of this server key")
    assert invoke(gw.STATUS, paths=serving.paths).handshake_failures > failures
    assert serving.restarts() == before


def test_oversized_and_flooding_peers_cannot_end_the_gateway(serving: Tree) -> None:
    """A 2 MiB request (over the 1 MiB bound) is dropped; a burst past the rate limit is
    answered ``unavailable``; the gateway keeps serving and nothing restarts."""
    before = serving.restarts()
    pair = _authorized(serving, "flooder")
    endpoint, server = _endpoint(serving), _server_key(serving)
    big = {"sessionId": "x" * (2 * 1024 * 1024)}
    assert probe(endpoint, ptyd.READ.name, big, server_key=server, client=pair) is None
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.curve_publickey, sock.curve_secretkey, sock.curve_serverkey = pair.public, pair.secret, server
    sock.connect(endpoint)
    from orca.wire.envelope import decode_reply, encode_request

    try:
        burst = 600
        for i in range(burst):
            sock.send(encode_request(f"f{i}", PING, {}))
        codes: list[str] = []
        while len(codes) < burst and sock.poll(5000):
            reply = decode_reply(sock.recv())
            codes.append("ok" if reply.ok else (reply.error or {}).get("code", "?"))
    finally:
        sock.close(linger=0)
    assert len(codes) == burst
    assert "unavailable" in codes and "ok" in codes
    control = _authorized(serving, "after-flood")
    assert probe(endpoint, PING, server_key=server, client=control) is not None
    assert serving.restarts() == before


def test_bare_curve_server_with_a_dead_zap_handler_accepts_any_key() -> None:
    """The hazard the gateway is built against, measured on this libzmq: a CURVE server
    whose ZAP handler is bound but dead (never replies, then closed) ends up accepting a
    key nobody authorized once the handler's socket is gone.

    libzmq tears the handler's socket down in its own thread: a client that connects
    while it is still going away may wait on it forever, so each attempt is a new
    client (up to ten), and every socket is closed whatever happens (a socket
    left open made ``ctx.term()`` hang the worker until the 600 s timeout)."""
    attempts = 10
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    sockets: list[zmq.Socket[bytes]] = []

    def socket(kind: int) -> zmq.Socket[bytes]:
        made = ctx.socket(kind)
        made.setsockopt(zmq.LINGER, 0)
        sockets.append(made)
        return made

    try:
        zap = socket(zmq.REP)
        zap.bind("inproc://zeromq.zap.01")
        server = socket(zmq.ROUTER)
        host = KeyPair.generate()
        server.setsockopt(zmq.ZAP_DOMAIN, b"x")
        server.curve_secretkey, server.curve_publickey, server.curve_server = host.secret, host.public, True
        server.bind("tcp://127.0.0.1:*")
        endpoint = server.getsockopt(zmq.LAST_ENDPOINT).decode()  # type: ignore[union-attr]
        zap.close()  # the handler dies
        let_in = False
        for _attempt in range(attempts):
            client = socket(zmq.DEALER)
            keys.CurveClient.for_server(KeyPair.generate(), host.public).apply(client)
            client.connect(endpoint)
            client.send(b"anyone")
            if server.poll(1000):
                let_in = True
                break
        assert let_in, "expected libzmq to let an unauthorized key in"
    finally:
        for made in sockets:
            made.close()
        ctx.term()


def test_gateway_whose_zap_handler_dies_refuses_everyone_then_recovers(tmp_path: Path) -> None:
    """ZAP dies: the listener is closed with it (an unknown key gets nothing, nor does an
    authorized one), the death is logged, the gateway process is the same one, and after
    the restart delay both come back: authorized keys are served, unknown ones still not."""
    tree = start_tree(
        tmp_path / "home",
        listen=f"tcp://127.0.0.1:{free_port()}",
        extra={"ORCA_GATEWAY_FAULTS": "1", "ORCA_GATEWAY_ZAP_RESTART_S": "6"},
    )
    try:
        before = tree.restarts()
        pair = _authorized(tree, "owner")
        endpoint, server = _endpoint(tree), _server_key(tree)
        assert probe(endpoint, PING, server_key=server, client=pair) is not None
        invoke(gw.INJECT_ZAP_FAULT, paths=tree.paths)
        # The next handshake crashes the handler; nothing may get through.
        assert probe(endpoint, PING, server_key=server, client=pair, timeout=1.0) is None
        tree.wait_log("ZAP handler died")
        status = invoke(gw.STATUS, paths=tree.paths)
        assert not status.zap_alive and status.listening is None
        stranger = KeyPair.generate()
        assert probe(endpoint, PING, server_key=server, client=stranger, timeout=1.0) is None
        # Recovery: same process, ZAP and listener back, the stranger still refused.
        reply = probe(endpoint, PING, server_key=server, client=pair, timeout=15.0)
        assert reply is not None and reply["ok"]
        assert probe(endpoint, PING, server_key=server, client=stranger) is None
        status = invoke(gw.STATUS, paths=tree.paths)
        assert status.zap_alive and status.zap_restarts == 1
        assert tree.restarts() == before
    finally:
        stop_tree(tree)


def test_fault_injection_is_off_unless_enabled(serving: Tree) -> None:
    from orca.wire.errors import OrcaError

    with pytest.raises(OrcaError) as info:
        invoke(gw.INJECT_ZAP_FAULT, paths=serving.paths)
    assert info.value.code == "forbidden"


def test_a_handshake_flood_of_unknown_keys_cannot_end_the_gateway(serving: Tree) -> None:
    """200 connections with keys nobody authorized, at once: all refused, the ZAP handler
    (which replies inline) does not recurse per request, the gateway keeps serving."""
    before = serving.restarts()
    endpoint, server = _endpoint(serving), _server_key(serving)
    denied = invoke(gw.STATUS, paths=serving.paths).zap_denied
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    socks = []
    try:
        for _ in range(200):
            pair = KeyPair.generate()
            sock = ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.curve_publickey, sock.curve_secretkey, sock.curve_serverkey = pair.public, pair.secret, server
            sock.connect(endpoint)
            socks.append(sock)
        control = _authorized(serving, "during-flood")
        reply = probe(endpoint, PING, server_key=server, client=control, timeout=10)
        assert reply is not None and reply["ok"]
        # Every handshake gets its refusal, however loaded the machine (no event to
        # await across processes: the gateway's counter, read until a deadline).
        deadline = time.monotonic() + 60
        while invoke(gw.STATUS, paths=serving.paths).zap_denied < denied + len(socks):
            assert time.monotonic() < deadline, "not every unknown key was refused"
            time.sleep(0.1)
    finally:
        for sock in socks:
            sock.close(linger=0)
        ctx.term()
    assert serving.restarts() == before
