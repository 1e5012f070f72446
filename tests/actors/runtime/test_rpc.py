"""The RPC server and client over real ZeroMQ sockets, in one trio run."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from fixture_actors.contracts import (
    CALC_ADD,
    CALC_BAD,
    CALC_BOOM,
    CALC_MISSING,
    CALC_SLOW,
    AddArgs,
    Sum,
)

from orca.actor import RpcClient, RpcServer, open_rpc_client
from orca.contracts import sys as sys_contract
from orca.contracts.base import NoArgs
from orca.wire.errors import BadFrame, BadRequest, Internal, NotFound, Timeout, UnknownOp


@asynccontextmanager
async def serving(endpoint: str, server: RpcServer) -> AsyncIterator[RpcServer]:
    server.bind(endpoint)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        try:
            yield server
        finally:
            nursery.cancel_scope.cancel()
    server.close()


def make_server() -> tuple[RpcServer, dict[str, int]]:
    server = RpcServer("calc")
    calls = {"add": 0, "slow": 0}

    async def add(args: AddArgs) -> dict[str, int]:
        calls["add"] += 1
        return {"sum": args.a + args.b}

    async def missing(_: NoArgs) -> None:
        raise NotFound("no such thing")

    async def boom(_: NoArgs) -> None:
        raise RuntimeError("kaboom")

    async def slow(args: AddArgs) -> int:
        calls["slow"] += 1
        if calls["slow"] == 1:
            await trio.sleep(0.5)  # the first attempt outlives the caller's per-attempt deadline
        return args.a

    server.register(CALC_ADD, add)
    server.register(CALC_MISSING, missing)
    server.register(CALC_BOOM, boom)
    server.register(CALC_SLOW, slow, concurrent=True)
    return server, calls


@pytest.fixture
def endpoint(tmp_path: Path) -> str:
    return f"ipc://{tmp_path}/calc.rpc"


async def test_call_returns_the_result(endpoint: str) -> None:
    """A typed op receives validated args and its result comes back."""
    with trio.fail_after(10):
        server, _ = make_server()
        async with serving(endpoint, server), open_rpc_client(endpoint) as client:
            assert await client.call("calc.add", {"a": 2, "b": 3}) == {"sum": 5}
            hello = await client.call("sys.hello")
            assert "calc.add" in hello["capabilities"] and hello["protocol"] == 1


async def test_invoke_returns_the_typed_result(endpoint: str) -> None:
    """``invoke`` sends the op's args Struct and decodes the reply as the op's result type."""
    with trio.fail_after(10):
        server, _ = make_server()
        async with serving(endpoint, server), open_rpc_client(endpoint) as client:
            assert await client.invoke(CALC_ADD, AddArgs(a=2, b=3)) == Sum(sum=5)
            hello = await client.invoke(sys_contract.HELLO)
            assert hello.name == "calc" and set(hello.capabilities) == {
                "calc.add",
                "calc.missing",
                "calc.boom",
                "calc.slow",
                "sys.hello",
                "sys.ping",
                "sys.stats",
            }


async def test_a_reply_that_does_not_match_the_result_type_is_bad_frame(endpoint: str) -> None:
    """A peer answering with the wrong shape fails the call at the client boundary."""
    with trio.fail_after(10):
        server, _ = make_server()

        async def wrong(_: AddArgs) -> dict[str, str]:
            return {"sum": "five"}

        server._ops.pop(CALC_ADD.name)
        server.register(CALC_ADD, wrong)
        async with serving(endpoint, server), open_rpc_client(endpoint) as client:
            with pytest.raises(BadFrame, match=r"malformed reply to calc.add.*\$\.sum"):
                await client.invoke(CALC_ADD, AddArgs(a=1))
            assert (await client.invoke(sys_contract.PING)).pong is True


async def test_bad_args_unknown_op_and_handler_errors_keep_the_server_serving(
    endpoint: str,
) -> None:
    """Ill-typed args, unknown ops, raised errors and bugs all become error replies."""
    with trio.fail_after(10):
        server, _ = make_server()
        async with serving(endpoint, server), open_rpc_client(endpoint) as client:
            with pytest.raises(BadRequest, match=r"\$\.a"):
                await client.call("calc.add", {"a": "two"})
            with pytest.raises(BadRequest, match="missing required field"):
                await client.call("calc.add", {})
            with pytest.raises(UnknownOp):
                await client.call("calc.nope")
            with pytest.raises(NotFound, match="no such thing"):
                await client.call("calc.missing")
            with pytest.raises(Internal, match="kaboom"):
                await client.call("calc.boom")
            assert await client.call("calc.add", {"a": 1}) == {"sum": 1}
            assert server.stats.errors >= 4


async def test_retry_with_idempotency_key_runs_the_op_once(endpoint: str) -> None:
    """A retried call carries one idempotency key, so the op runs once and the reply is shared."""
    with trio.fail_after(10):
        server, calls = make_server()
        async with serving(endpoint, server), open_rpc_client(endpoint) as client:
            assert await client.call("calc.slow", {"a": 7}, timeout=0.2, retries=5) == 7
            assert calls["slow"] == 1


async def test_call_times_out_when_nobody_listens(tmp_path: Path) -> None:
    """With no server, a call fails with Timeout (an Unavailable) after its deadline."""
    with trio.fail_after(10):
        async with open_rpc_client(f"ipc://{tmp_path}/nobody.rpc") as client:
            with pytest.raises(Timeout):
                await client.call("sys.ping", timeout=0.2, retries=1)


async def test_client_reaches_a_server_that_starts_later(endpoint: str) -> None:
    """A client created before its server connects once the server binds (reconnect)."""
    with trio.fail_after(10):
        server, _ = make_server()
        async with open_rpc_client(endpoint) as client, trio.open_nursery() as nursery:
            nursery.start_soon(client.call, "sys.ping", None)  # in flight before the bind
            await trio.sleep(0.1)
            async with serving(endpoint, server):
                assert (await client.call("calc.add", {"a": 4}, timeout=1, retries=3)) == {"sum": 4}


async def test_ops_are_reachable_over_curve_tcp() -> None:
    """The same server answers on a loopback tcp:// endpoint (CURVE) as well as ipc://."""
    import zmq

    from orca.keys import CurveClient, KeyPair

    server_public, server_secret = zmq.curve_keypair()
    client_public, client_secret = zmq.curve_keypair()
    with trio.fail_after(10):
        server, _ = make_server()
        server.socket.setsockopt(zmq.CURVE_SECRETKEY, server_secret)
        server.socket.setsockopt(zmq.CURVE_SERVER, 1)
        async with serving("tcp://127.0.0.1:*", server):
            (tcp,) = server.endpoints
            assert tcp.startswith("tcp://127.0.0.1:") and not tcp.endswith("*")
            curve = CurveClient.for_server(KeyPair(client_public, client_secret), server_public)
            async with open_rpc_client(tcp, curve=curve) as client:
                assert await client.call("calc.add", {"a": 1, "b": 1}) == {"sum": 2}


def test_a_plaintext_tcp_bind_is_refused() -> None:
    """Nothing listens on TCP without CURVE: the one bind path refuses it."""
    from orca.actor.zsocket import PlaintextTcpRefused

    server, _ = make_server()
    try:
        with pytest.raises(PlaintextTcpRefused, match="CURVE"):
            server.bind("tcp://127.0.0.1:*")
        assert server.endpoints == []
    finally:
        server.close()


async def test_many_concurrent_calls_are_matched_to_their_replies(endpoint: str) -> None:
    """Pipelined calls from many tasks each get their own reply."""
    with trio.fail_after(20):
        server, _ = make_server()
        results: dict[int, Any] = {}
        async with serving(endpoint, server), open_rpc_client(endpoint) as client:

            async def one(i: int) -> None:
                results[i] = await client.call("calc.add", {"a": i, "b": i})

            async with trio.open_nursery() as nursery:
                for i in range(300):
                    nursery.start_soon(one, i)
        assert results == {i: {"sum": 2 * i} for i in range(300)}


async def test_a_stream_of_pipelined_calls_never_stalls(endpoint: str) -> None:
    """10,000 calls from 50 tasks, ops run by the server's owner (whose reply sends leave
    the socket's servicing to its loop) and by tasks of their own (whose sends service
    it themselves) interleaved: a lost ZMQ_FD edge would leave a call unanswered."""
    with trio.fail_after(120):
        server, calls = make_server()
        calls["slow"] = 1  # calc.slow sleeps on its first run only
        answered = 0
        async with serving(endpoint, server), open_rpc_client(endpoint) as client:

            async def stream(task: int) -> None:
                nonlocal answered
                for i in range(200):
                    op = "calc.slow" if (task + i) % 3 == 0 else "calc.add"
                    reply = await client.call(op, {"a": i, "b": 0})
                    assert reply == (i if op == "calc.slow" else {"sum": i})
                    answered += 1

            async with trio.open_nursery() as nursery:
                for task in range(50):
                    nursery.start_soon(stream, task)
        assert answered == 10_000


async def test_a_client_holds_only_the_calls_in_flight(endpoint: str, tmp_path: Path) -> None:
    """Answered, timed-out and cancelled calls leave nothing behind in the client's
    deadline keeping (it once held every call of the last timeout seconds, which the
    garbage collector then walked); a short deadline still fires beside a long one."""

    def held(client: RpcClient) -> int:
        return sum(len(members) for members in client._waiting.values())

    with trio.fail_after(20):
        server, _ = make_server()
        async with serving(endpoint, server), open_rpc_client(endpoint, timeout=30) as client:
            async with trio.open_nursery() as nursery:
                for i in range(300):
                    nursery.start_soon(client.call, "calc.add", {"a": i})
            assert held(client) == 0
            timed_out = []

            async def short() -> None:  # calc.slow's first run sleeps 0.5 s
                with pytest.raises(Timeout):
                    await client.call("calc.slow", {"a": 1}, timeout=0.1)
                timed_out.append(trio.current_time())

            async with trio.open_nursery() as nursery:
                nursery.start_soon(short)
                assert await client.call("calc.add", {"a": 2}) == {"sum": 2}
            assert timed_out and held(client) == 0
        async with open_rpc_client(f"ipc://{tmp_path}/nobody.rpc") as nobody:
            with trio.move_on_after(0.05):  # the caller gives up: its attempt goes too
                await nobody.call("sys.ping", timeout=30)
            assert held(nobody) == 0


async def test_oversized_request_gets_too_large_and_the_server_keeps_serving(endpoint: str) -> None:
    """A frame above the request limit (but below the socket's hard cap) is refused with too_large."""
    import zmq

    from orca.wire.codec import MAX_FRAME_BYTES
    from orca.wire.envelope import decode_reply, encode_request

    with trio.fail_after(20):
        server, _ = make_server()
        async with serving(endpoint, server), open_rpc_client(endpoint) as client:
            sock = zmq.Context.instance().socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(endpoint)
            try:
                sock.send(
                    encode_request("big", "calc.add", {"a": 1, "pad": "x" * (MAX_FRAME_BYTES + 10)})
                )
                # A plain blocking socket, waited on in a thread (only that thread uses it).
                assert await trio.to_thread.run_sync(sock.poll, 10_000)
                reply = decode_reply(sock.recv())
            finally:
                sock.close()
            assert reply.error is not None and reply.error["code"] == "too_large"
            assert await client.call("calc.add", {"a": 3}) == {"sum": 3}


async def test_unencodable_result_is_an_internal_error_not_a_crash(endpoint: str) -> None:
    """A handler returning something MessagePack cannot carry gets an internal error reply."""
    with trio.fail_after(10):
        server, _ = make_server()

        async def bad(_: NoArgs) -> object:
            return object()

        server.register(CALC_BAD, bad)
        async with serving(endpoint, server), open_rpc_client(endpoint) as client:
            with pytest.raises(Internal, match="unencodable"):
                await client.call("calc.bad")
            assert await client.call("calc.add", {"a": 1}) == {"sum": 1}


async def test_a_frame_above_the_request_sockets_cap_is_refused_at_its_header(
    endpoint: str,
) -> None:
    """A frame far above the request limit (40 MiB: below a client socket's 64 MiB) is
    never read: libzmq drops the sender's connection at the frame's header (the monitor
    sees it disconnected, no reply comes), and the server serves the next caller."""
    import zmq
    from zmq.utils.monitor import recv_monitor_message

    from orca.actor.rpc_server import REQUEST_SOCKET_MAX_BYTES

    with trio.fail_after(30):
        server, _ = make_server()
        async with serving(endpoint, server), open_rpc_client(endpoint) as client:
            sock = zmq.Context.instance().socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.RECONNECT_IVL, -1)  # one connection: its end is the verdict
            monitor = sock.get_monitor_socket(zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED)
            sock.connect(endpoint)
            try:

                def next_event() -> int:
                    assert monitor.poll(20_000), "no socket event"
                    return int(recv_monitor_message(monitor)["event"])

                assert await trio.to_thread.run_sync(next_event) == zmq.EVENT_CONNECTED
                sock.send(b"\x00" * (REQUEST_SOCKET_MAX_BYTES + 24 * 1024 * 1024))
                assert await trio.to_thread.run_sync(next_event) == zmq.EVENT_DISCONNECTED
                assert not sock.poll(0)  # nothing was answered
            finally:
                sock.disable_monitor()
                monitor.close()
                sock.close()
            assert await client.call("calc.add", {"a": 3}) == {"sum": 3}


def test_queued_requests_are_bounded_by_the_bytes_they_hold() -> None:
    """Requests read in one burst while the dispatcher is busy queue up to
    MAX_QUEUED_BYTES of args; past it each is refused unavailable at once, and the
    queue's count goes down as requests leave it."""
    from orca.actor.rpc_server import MAX_QUEUED_BYTES
    from orca.wire.codec import MAX_FRAME_BYTES
    from orca.wire.envelope import decode_reply, encode_request

    server, _ = make_server()
    replies: list[bytes] = []
    server._reply = lambda identity, body: replies.append(body)  # type: ignore[method-assign]
    try:
        pad = "x" * (MAX_FRAME_BYTES - 1024)
        fits = MAX_QUEUED_BYTES // len(pad)
        for i in range(fits + 2):
            server._on_message([b"peer", encode_request(f"r{i}", "calc.add", {"a": 1, "pad": pad})])
        assert len(server._queue) == fits
        refused = [decode_reply(body) for body in replies]
        assert [r.id for r in refused] == [f"r{fits}", f"r{fits + 1}"]
        assert all(r.error is not None and r.error["code"] == "unavailable" for r in refused)
        # The bound is bytes, not a count: a small request still fits beside them.
        server._on_message([b"peer", encode_request("small", "calc.add", {"a": 1})])
        assert len(server._queue) == fits + 1
    finally:
        server.close()


async def test_a_call_to_a_missing_actor_asks_orcad_to_wake_it(tmp_path: Path) -> None:
    """No ``calc.rpc`` socket: the client asks the ``supervisor.rpc`` beside it to wake
    ``calc`` (issue 36: dormant until asked), then sends. An orcad that knows no such
    actor costs the call its timeout, never the caller (a NotFound escaped as a group
    and ended ptyd, in a tree without hooks)."""
    from orca.contracts import supervisor as sup

    asked: list[str] = []
    orcad = RpcServer("supervisor")

    async def wake(args: sup.WakeArgs) -> None:
        asked.append(args.name)
        raise NotFound(f"no actor named {args.name!r}")

    orcad.register(sup.WAKE, wake)
    with trio.fail_after(10):
        async with (
            serving(f"ipc://{tmp_path}/supervisor.rpc", orcad),
            open_rpc_client(f"ipc://{tmp_path}/calc.rpc", timeout=0.5) as client,
        ):
            with pytest.raises(Timeout):
                await client.invoke(CALC_ADD, AddArgs(a=1, b=2))
            assert asked == ["calc"]
            calc, _calls = make_server()
            async with serving(f"ipc://{tmp_path}/calc.rpc", calc):
                assert (await client.invoke(CALC_ADD, AddArgs(a=1, b=2))).sum == 3
            assert asked == ["calc"]  # the socket was there: nobody was asked
