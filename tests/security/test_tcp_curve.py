"""Issue 16 item 1: with ``tcp_host = "127.0.0.1"`` every actor listened on loopback with
no authentication, and any local user called ``term.spawn`` (which ran as the owner).

Now every tcp endpoint is a CURVE server checked by ZAP against ``authorized-keys/``.
Against the real tree, a second, unprivileged user (uid 65534) probes every tcp
endpoint of every actor and of orcad, in plaintext and with a CURVE key of its own
(it even knows the host's public key): no reply, no event, nothing run. The owner's
client with an authorized key is served on the same endpoints.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import psutil
import pytest
import zmq
from support.journey import User
from support.procs import wake_every_actor

from orca import keys
from orca.actor.endpoints import make_curve_server
from orca.client.sync import KeyRefused, Subscription, invoke
from orca.contracts import hooks, ptyd
from orca.contracts import supervisor as sup
from orca.contracts import sys as sys_contract
from orca.paths import resolve_paths
from orca.wire.errors import Unavailable

NOBODY = 65534
ACTORS = ("store", "hooks", "ptyd", "gitwatch", "orch", "gateway", "vault", "supervisor")
# How long the attacker waits for any reply or event: each publisher heartbeats every
# second, so an accepted plaintext subscriber would see one well within this.
PROBE_S = 3.0

# Runs as root only until it has imported what it needs, then becomes uid 65534 for
# every socket it opens: the kernel sees a second, unprivileged local user.
ATTACKER = r"""
import json, os, sys, time
import zmq
from orca.wire.envelope import encode_request
plan = json.loads(sys.argv[1])
os.setgroups([])
os.setgid(65534)
os.setuid(65534)
assert os.getuid() == 65534 and os.geteuid() == 65534
ctx = zmq.Context()
own_public, own_secret = zmq.curve_keypair()  # a key nobody authorized
try:
    open(plan["host_secret"], "rb").read()
    secret_readable = True
except OSError:
    secret_readable = False
probes = []
for i, target in enumerate(plan["targets"]):
    for mode, kind in [(m, k) for m in ("plaintext", "curve-unauthorized") for k in (zmq.DEALER, zmq.SUB)]:
        sock = ctx.socket(kind)
        sock.setsockopt(zmq.LINGER, 0)
        if mode == "curve-unauthorized":
            sock.curve_publickey = own_public
            sock.curve_secretkey = own_secret
            sock.curve_serverkey = plan["server_public"].encode()
        if kind == zmq.SUB:
            sock.setsockopt(zmq.SUBSCRIBE, b"")
        sock.connect(target["endpoint"])
        if kind == zmq.DEALER:
            sock.send(encode_request(f"r{i}", target["op"], target["args"]))
        probes.append((target, mode, sock))
# The control: the same probe with a key the owner authorized must be answered, so an
# empty result below means refused, not a probe that cannot hear replies.
control = ctx.socket(zmq.DEALER)
control.setsockopt(zmq.LINGER, 0)
control.curve_publickey = plan["control"]["public"].encode()
control.curve_secretkey = plan["control"]["secret"].encode()
control.curve_serverkey = plan["server_public"].encode()
control.connect(plan["control"]["endpoint"])
control.send(encode_request("control", plan["control"]["op"], {}))
control_answered = bool(control.poll(int(plan["probe_s"] * 1000 * 3)))
deadline = time.monotonic() + plan["probe_s"]
poller = zmq.Poller()
for _t, _m, sock in probes:
    poller.register(sock, zmq.POLLIN)
answered = set()
while (left := deadline - time.monotonic()) > 0:
    for sock, _ in poller.poll(int(left * 1000) + 1):
        answered.add(id(sock))
        sock.recv_multipart()
print(json.dumps({
    "uid": os.getuid(),
    "secret_readable": secret_readable,
    "control_answered": control_answered,
    "probes": [
        {"endpoint": t["endpoint"], "kind": s.socket_type, "mode": m, "answered": id(s) in answered}
        for t, m, s in probes
    ],
}))
"""


def listening_ports(user: User) -> dict[str, list[str]]:
    """Every tcp endpoint orcad and each actor listens on, found as an attacker would
    (the kernel's socket table), mapped to its process by pid."""
    status = invoke(sup.STATUS, paths=user.paths)
    pids = {"supervisor": status.supervisor.pid} | {a.name: a.pid for a in status.actors}
    # The agents' HTTP hook endpoint is no ZeroMQ socket (launch tokens guard it: item 7).
    http_port = invoke(hooks.ENDPOINT, paths=user.paths).port
    found: dict[str, list[str]] = {}
    for actor, pid in pids.items():
        assert pid is not None
        conns = psutil.Process(pid).net_connections(kind="tcp")
        found[actor] = sorted(
            f"tcp://{c.laddr.ip}:{c.laddr.port}"
            for c in conns
            if c.status == psutil.CONN_LISTEN
            and not (actor == "hooks" and c.laddr.port == http_port)
        )
    return found


@pytest.fixture
def tcp_user(orca_home: Path, tmp_path: Path) -> Iterator[User]:
    """The real tree, started by the CLI, with every actor also on tcp://127.0.0.1."""
    user = User(orca_home, tmp_path / "user")
    cfg = orca_home / "config"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "supervisor.toml").write_text('[supervisor]\ntcp_host = "127.0.0.1"\n')
    user.ok("up")
    try:
        wake_every_actor(user.paths)
        yield user
    finally:
        user.run("down", "--kill-terminals")


def _spawn_args(marker: Path) -> dict[str, Any]:
    args = ptyd.SpawnArgs(
        argv=["/bin/sh", "-c", f"id > {marker}"], cwd="/", worktree_id="repo::/attack"
    )
    return msgspec.to_builtins(args)  # type: ignore[no-any-return]


@pytest.mark.timeout(180)
def test_second_user_without_an_authorized_key_gets_nothing_over_tcp(
    tcp_user: User, tmp_path: Path
) -> None:
    """uid 65534, in plaintext or with its own CURVE key, on every listening port of every
    actor and orcad: no reply (term.spawn runs nothing), no event; the owner's client
    with an authorized key is then served on the same endpoints."""
    user = tcp_user
    marker = tmp_path / "spawned-by-attacker"
    marker.parent.chmod(0o777)  # so only the refusal, not a permission, can keep it absent
    server_public = keys.host_public_key(user.paths).decode()
    ports = listening_ports(user)
    assert set(ports) == {*ACTORS} and all(len(p) == 2 for p in ports.values()), ports
    rpc_endpoints = {}
    for actor in ACTORS:
        hello = invoke(sys_contract.HELLO, endpoint=user.paths.ipc_endpoint(actor, "rpc"))
        (rpc_endpoints[actor],) = [e for e in hello.endpoints if e.startswith("tcp://")]
    pub_endpoints = {a: next(e for e in ports[a] if e != rpc_endpoints[a]) for a in ACTORS}

    control = keys.KeyPair.generate()
    keys.authorize(user.paths, control.public, "control")
    plan = {
        "control": {
            "endpoint": rpc_endpoints["store"],
            "op": sys_contract.PING.name,
            "public": control.public.decode(),
            "secret": control.secret.decode(),
        },
        "targets": [
            {"endpoint": e, "op": ptyd.SPAWN.name, "args": _spawn_args(marker)}
            for endpoints in ports.values()
            for e in endpoints
        ],
        "server_public": server_public,
        "host_secret": str(keys.keys_dir(user.paths) / keys.HOST_SECRET_FILE),
        "probe_s": PROBE_S,
    }
    attacker = subprocess.run(
        [sys.executable, "-c", ATTACKER, json.dumps(plan)],
        env=user.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert attacker.returncode == 0, attacker.stderr
    report = json.loads(attacker.stdout)
    assert report["uid"] == NOBODY
    assert not report["secret_readable"], "the host's secret key is the owner's alone"
    assert report["control_answered"], "the probe hears replies when the key is authorized"
    assert len(report["probes"]) == 4 * len(plan["targets"])
    answered = [p for p in report["probes"] if p["answered"]]
    assert not answered, answered
    assert not marker.exists(), "term.spawn over tcp ran a command for the attacker"
    assert invoke(ptyd.LIST, ptyd.ListArgs(), paths=user.paths).sessions == []
    ptyd_log = user.paths.log_file("ptyd").read_text(errors="replace")
    assert "ZAP: refused a CURVE connection (unknown key)" in ptyd_log

    # The owner, with an authorized key, is served on the very same endpoints.
    pair = keys.KeyPair.generate()
    keys.authorize(user.paths, pair.public, "owner")
    curve = keys.CurveClient.for_server(pair, server_public.encode())
    for actor, endpoint in rpc_endpoints.items():
        assert invoke(sys_contract.HELLO, endpoint=endpoint, curve=curve).name == actor
    listed = invoke(ptyd.LIST, ptyd.ListArgs(), endpoint=rpc_endpoints["ptyd"], curve=curve)
    assert listed.sessions == []
    with Subscription(pub_endpoints["store"], [], consumer="test", curve=curve) as sub:
        assert sub.wait_live(PROBE_S), "an authorized subscriber gets the publisher's heartbeat"
    after = invoke(sup.STATUS, paths=user.paths)
    assert [a.restarts for a in after.actors] == [0] * len(after.actors)


def test_plaintext_is_never_accepted_on_tcp_even_from_the_owner(tcp_user: User) -> None:
    """The owner's own client without CURVE is refused too: there is no plaintext tcp."""
    hello = invoke(sys_contract.HELLO, endpoint=tcp_user.paths.ipc_endpoint("store", "rpc"))
    (tcp,) = [e for e in hello.endpoints if e.startswith("tcp://127.0.0.1:")]
    with pytest.raises(Unavailable, match="cannot connect"):
        invoke(sys_contract.PING, endpoint=tcp, timeout=1.5)


def test_revoking_a_key_takes_effect_for_new_connections(tcp_user: User) -> None:
    """authorized-keys/ is read on every handshake: remove the file and the key is refused
    (the client says refused, not "cannot connect": the server answered, issue 32)."""
    paths = tcp_user.paths
    hello = invoke(sys_contract.HELLO, endpoint=paths.ipc_endpoint("store", "rpc"))
    (tcp,) = [e for e in hello.endpoints if e.startswith("tcp://127.0.0.1:")]
    pair = keys.KeyPair.generate()
    curve = keys.CurveClient.for_server(pair, keys.host_public_key(paths))
    with pytest.raises(KeyRefused, match="answered and refused this client's key"):
        invoke(sys_contract.PING, endpoint=tcp, timeout=1.5, curve=curve)
    path = keys.authorize(paths, pair.public, "laptop")
    assert path.stat().st_mode & 0o777 == 0o600
    assert keys.authorized_dir(paths).stat().st_mode & 0o777 == 0o700
    assert invoke(sys_contract.PING, endpoint=tcp, curve=curve).pong
    path.unlink()
    with pytest.raises(KeyRefused, match="answered and refused this client's key"):
        invoke(sys_contract.PING, endpoint=tcp, timeout=1.5, curve=curve)


def test_host_key_pair_is_created_once_private_and_stable(tmp_path: Path) -> None:
    """First use creates the pair 0600 in a 0700 dir; every later use reads the same pair."""
    paths = resolve_paths({"ORCA_HOME": str(tmp_path)}).ensure()
    first = keys.host_keys(paths)
    assert keys.host_keys(paths) == first and keys.host_public_key(paths) == first.public
    assert keys.is_z85_key(first.public) and keys.is_z85_key(first.secret)
    directory = keys.keys_dir(paths)
    assert directory.stat().st_mode & 0o777 == 0o700
    for name in (keys.HOST_SECRET_FILE, keys.HOST_PUBLIC_FILE):
        assert (directory / name).stat().st_mode & 0o777 == 0o600
    assert first.secret not in (directory / keys.HOST_PUBLIC_FILE).read_bytes()


def test_a_host_secret_others_can_read_is_refused(tmp_path: Path) -> None:
    """A secret key file with group/other access (or not a key) is refused, never used."""
    paths = resolve_paths({"ORCA_HOME": str(tmp_path)}).ensure()
    keys.host_keys(paths)
    secret = keys.keys_dir(paths) / keys.HOST_SECRET_FILE
    secret.chmod(0o644)
    with pytest.raises(keys.KeyFileError, match="not 0600"):
        keys.host_keys(paths)
    secret.chmod(0o600)
    secret.write_bytes(b'curve\n    public-key = "short"\n')
    with pytest.raises(keys.KeyFileError, match="not a Z85"):
        keys.host_keys(paths)


def test_authorized_keys_accept_bare_keys_and_certificates_only(tmp_path: Path) -> None:
    """One public key per file, bare Z85 or a certificate; junk and open files authorize nobody."""
    paths = resolve_paths({"ORCA_HOME": str(tmp_path)}).ensure()
    bare, cert, junk = (keys.KeyPair.generate() for _ in range(3))
    keys.authorize(paths, cert.public, "cert")
    directory = keys.authorized_dir(paths)
    (directory / "bare.key").write_bytes(bare.public + b"\n")
    (directory / "bare.key").chmod(0o600)
    (directory / "junk.key").write_bytes(b"\xff\xfe not a key " + junk.public[:10])
    (directory / "junk.key").chmod(0o600)
    assert keys.is_authorized(paths, bare.public) and keys.is_authorized(paths, cert.public)
    assert not keys.is_authorized(paths, junk.public)
    (directory / "bare.key").chmod(0o644)
    assert not keys.is_authorized(paths, bare.public), "a key file others can write is ignored"
    with pytest.raises(ValueError):
        keys.authorize(paths, b"not a key", "x")
    with pytest.raises(ValueError):
        keys.authorize(paths, bare.public, "../escape")


def test_curve_server_without_a_zap_handler_refuses_everyone() -> None:
    """Fail closed: with no ZAP handler bound, libzmq refuses even a well-formed CURVE
    client (ZAP_ENFORCE_DOMAIN), instead of accepting any key that knows the server's."""
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    try:
        server = ctx.socket(zmq.ROUTER)
        server.setsockopt(zmq.LINGER, 0)
        host = keys.KeyPair.generate()
        make_curve_server(server, host)
        server.bind("tcp://127.0.0.1:*")
        endpoint = server.getsockopt(zmq.LAST_ENDPOINT).decode()  # type: ignore[union-attr]
        client = ctx.socket(zmq.DEALER)
        client.setsockopt(zmq.LINGER, 0)
        keys.CurveClient.for_server(keys.KeyPair.generate(), host.public).apply(client)
        client.connect(endpoint)
        client.send(b"hello")
        assert not server.poll(1500), "no handler, no message: the handshake was refused"
        client.close()
        server.close()
    finally:
        ctx.term()
