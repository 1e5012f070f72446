"""Servers for bench/rpc.py, each run in its own process, and the bench actor's contract.

``baseline ENDPOINT``: plain blocking pyzmq ROUTER doing the same envelope work (msgpack
decode of the request, encode of the reply) with no runtime around it.
``actor``: an Orca actor (run_actor) serving ``bench.echo`` (:data:`ECHO`).

The bench actor is declared like every actor (``orca.contracts.base``), here rather
than in ``orca/contracts/`` because it exists only for the benchmark: ``ECHO`` echoes
``n``; ``TICK`` is the event the fan-out bench publishes.
"""

from __future__ import annotations

import sys

import msgpack
import zmq

from orca.contracts.base import Args, Contract, Payload


class EchoArgs(Args, frozen=True, kw_only=True):
    n: int = 0


class Echo(Payload, frozen=True, kw_only=True):
    n: int


class Tick(Payload, frozen=True, kw_only=True):
    i: int


CONTRACT = Contract("bench")
ECHO = CONTRACT.op("bench.echo", EchoArgs, Echo, doc="reply with the args' n")
TICK = CONTRACT.event("bench.tick", Tick, doc="one fan-out event")


def baseline(endpoint: str) -> None:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    sock = ctx.socket(zmq.ROUTER)
    sock.bind(endpoint)
    print("ready", flush=True)
    while True:
        ident, frame = sock.recv_multipart()
        req = msgpack.unpackb(frame, raw=False, strict_map_key=True)
        reply = {"v": 1, "id": req["id"], "ok": True, "result": req["args"]}
        sock.send_multipart((ident, msgpack.packb(reply, use_bin_type=True)))


def trio_floor(endpoint: str) -> None:
    """The baseline's ROUTER driven by a trio loop and nothing else: no envelope
    validation, no queue, no deadlines; the least any trio actor pays per message."""
    import trio
    import trio.lowlevel

    async def serve() -> None:
        ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
        sock = ctx.socket(zmq.ROUTER)
        sock.bind(endpoint)
        fd = sock.getsockopt(zmq.FD)
        events, pollin, noblock = int(zmq.EVENTS), int(zmq.POLLIN), int(zmq.NOBLOCK)
        print("ready", flush=True)
        while True:
            while sock.get(events) & pollin:
                ident, frame = sock.recv_multipart(noblock)
                req = msgpack.unpackb(frame, raw=False, strict_map_key=True)
                reply = {"v": 1, "id": req["id"], "ok": True, "result": req["args"]}
                sock.send_multipart((ident, msgpack.packb(reply, use_bin_type=True)), noblock)
            await trio.lowlevel.wait_readable(fd)

    trio.run(serve)


def actor() -> None:
    from orca.actor import ActorContext, run_actor

    async def setup(ctx: ActorContext) -> None:
        async def echo(args: EchoArgs) -> Echo:
            return Echo(n=args.n)

        ctx.rpc.register(ECHO, echo)

    run_actor(CONTRACT.actor, setup)


if __name__ == "__main__":
    if sys.argv[1] == "baseline":
        baseline(sys.argv[2])
    elif sys.argv[1] == "trio-floor":
        trio_floor(sys.argv[2])
    else:
        actor()
