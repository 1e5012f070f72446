"""Servers for bench/rpc.py, each run in its own process.

``baseline ENDPOINT``: plain blocking pyzmq ROUTER doing the same envelope work (msgpack
decode of the request, encode of the reply) with no runtime around it.
``actor HOME``: an Orca actor (run_actor) serving ``bench.echo``.
``publisher ENDPOINT N``: publishes N events with our EventPublisher once told to start.
"""

from __future__ import annotations

import sys
from typing import Any

import msgpack
import zmq


def baseline(endpoint: str) -> None:
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.ROUTER)
    sock.bind(endpoint)
    print("ready", flush=True)
    while True:
        ident, frame = sock.recv_multipart()
        req = msgpack.unpackb(frame, raw=False, strict_map_key=True)
        reply = {"v": 1, "id": req["id"], "ok": True, "result": req["args"]}
        sock.send_multipart((ident, msgpack.packb(reply, use_bin_type=True)))


def actor() -> None:
    import msgspec

    from orca.actor import ActorContext, run_actor

    class EchoArgs(msgspec.Struct):
        n: int = 0

    async def setup(ctx: ActorContext) -> None:
        async def echo(a: EchoArgs) -> dict[str, Any]:
            return {"n": a.n}

        ctx.rpc.register("bench.echo", echo, EchoArgs)

    run_actor("bench", setup)


if __name__ == "__main__":
    if sys.argv[1] == "baseline":
        baseline(sys.argv[2])
    else:
        actor()
