"""Issue 16: a fuzz of every op of every actor with arbitrary MessagePack; zero restarts.

The real tree runs under orcad; hypothesis sends requests to every op of every contract
(store, ptyd, hooks, gitwatch, vault, orch, the supervisor, and the built-ins) with arbitrary args —
the op's own field names with values of any type, unknown fields, deep nesting — as
well as arbitrary values where the args map should be. Args that would pass validation
are sent only to ops that change nothing (a fuzz must not spawn processes or remove
worktrees); everything else must come back as an error reply with a stable code, never
``internal``, and at the end every actor has the same pid and no restart.

The budget is ``ORCA_FUZZ_EXAMPLES`` (default 300 in the default suite; the soak run
sets more).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.journey import User
from support.procs import descendants, kill_all, wake_every_actor

from orca.client.sync import invoke
from orca.contracts import gitwatch, hooks, orch, ptyd, store, supervisor, vault
from orca.contracts import sys as builtin
from orca.contracts.base import Op
from orca.contracts.supervisor import read_lock_info
from orca.wire.codec import encode
from orca.wire.envelope import decode_reply

EXAMPLES = int(os.environ.get("ORCA_FUZZ_EXAMPLES", "300"))
CONTRACTS = (
    store.CONTRACT, ptyd.CONTRACT, hooks.CONTRACT, gitwatch.CONTRACT, vault.CONTRACT, orch.CONTRACT,
    supervisor.CONTRACT,
)  # fmt: skip
TARGETS: list[tuple[str, Op[Any, Any]]] = [
    (c.actor, op) for c in CONTRACTS for op in [*c.ops.values(), *builtin.CONTRACT.ops.values()]
]
# Ops that change nothing: valid args are fine to send to these.
READ_ONLY = {
    op.name
    for c in (*CONTRACTS, builtin.CONTRACT)
    for op in c.ops.values()
    if op.name.split(".")[-1]
    in {
        "list", "get", "snapshot", "resolve", "retired_since", "read", "gc_status", "endpoint",
        "bindings", "search", "usage", "status",
    }
    or op.name.startswith("sys.")
    or op.name == supervisor.STATUS.name
}
STABLE_CODES = {
    "bad_request",
    "bad_frame",
    "too_large",
    "unknown_op",
    "bad_version",
    "not_found",
    "conflict",
    "unavailable",
    "timeout",
}

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=True)
    | st.text(max_size=12)
    | st.binary(max_size=12)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


def field_names(op: Op[Any, Any]) -> list[str]:
    return [f.encode_name for f in msgspec.structs.fields(op.args)] or ["x"]


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, Op[Any, Any], bytes]:
    actor, op = draw(st.sampled_from(TARGETS))
    names = field_names(op)
    args = draw(
        st.dictionaries(st.sampled_from(names) | st.text(max_size=8), values, max_size=6)
        | values
    )
    body = encode({"v": 1, "id": "fuzz", "op": op.name, "args": args})
    if draw(st.booleans()) and draw(st.integers(0, 9)) == 0:
        depth = draw(st.integers(100, 3000))
        body = body[:-1] + b"\x81\xa1x" + b"\x91" * depth + b"\x00"  # nest where args end
    return actor, op, body


def _valid(op: Op[Any, Any], body: bytes) -> bool:
    try:
        args = msgspec.msgpack.decode(body).get("args", {})
        op.decode_args(encode(args))
    except Exception:
        return False
    return True


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[User, dict[str, zmq.Socket[bytes]]]]:
    base = tmp_path_factory.mktemp("fuzz")
    user = User(base / "home", base / "user")
    user.ok("up")
    wake_every_actor(user.paths)
    orcad = read_lock_info(user.paths.lock_file)
    assert orcad is not None and orcad.pid is not None
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    socks: dict[str, zmq.Socket[bytes]] = {}
    try:
        for actor in {a for a, _ in TARGETS}:
            sock = ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(user.paths.ipc_endpoint(actor, "rpc"))
            socks[actor] = sock
        yield user, socks
    finally:
        for sock in socks.values():
            sock.close()
        user.run("down", "--kill-terminals")
        kill_all([*descendants(orcad.pid), orcad.pid])


def test_fuzz_every_op_of_every_actor_restarts_nothing(
    tree: tuple[User, dict[str, zmq.Socket[bytes]]],
) -> None:
    """Arbitrary args to every op: stable error codes (never internal), zero restarts."""
    fuzz(tree, EXAMPLES)


@pytest.mark.soak
def test_fuzz_every_op_long(tree: tuple[User, dict[str, zmq.Socket[bytes]]]) -> None:
    """The soak run's longer budget (``ORCA_FUZZ_SOAK_EXAMPLES``, default 20,000)."""
    fuzz(tree, int(os.environ.get("ORCA_FUZZ_SOAK_EXAMPLES", "20000")))


def fuzz(tree: tuple[User, dict[str, zmq.Socket[bytes]]], examples: int) -> None:
    user, socks = tree
    pids = {a.name: a.pid for a in invoke(supervisor.STATUS, paths=user.paths).actors}
    sent: list[str] = []

    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(request=requests())
    def one(request: tuple[str, Op[Any, Any], bytes]) -> None:
        actor, op, body = request
        if op.name not in READ_ONLY and _valid(op, body):
            return  # would really do something (spawn, remove, stop): not a fuzz's job
        sock = socks[actor]
        sock.send(body)
        assert sock.poll(10_000), f"{actor} did not answer {op.name}"
        reply = decode_reply(sock.recv())
        sent.append(op.name)
        if not reply.ok:
            assert reply.error is not None
            assert reply.error["code"] in STABLE_CODES, (actor, op.name, reply.error)

    one()
    print(f"fuzz: {len(sent)} requests to {len(set(sent))} ops")
    assert len(set(sent)) > len(TARGETS) // 3, "the fuzz reached too few ops"
    after = invoke(supervisor.STATUS, paths=user.paths)
    assert {a.name: a.pid for a in after.actors} == pids
    assert [a.restarts for a in after.actors] == [0] * len(after.actors)

