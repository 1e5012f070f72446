"""A blocking client for short-lived callers (the CLI, scripts, benchmarks).

It imports neither trio nor the actor runtime, so a CLI command pays only for pyzmq and
msgspec at start-up. One DEALER per call: the CLI makes a handful of calls per run,
and a fresh socket can never receive a stale reply.
"""

from __future__ import annotations

import os
import secrets
import time
from typing import Any

import zmq

from orca.paths import OrcaPaths, resolve_paths
from orca.wire.codec import ZMQ_MAX_MESSAGE_BYTES
from orca.wire.envelope import decode_reply, encode_request
from orca.wire.errors import BadFrame, Timeout, Unavailable, error_from_wire

DEFAULT_TIMEOUT_S = 5.0


def endpoint_for(actor: str, paths: OrcaPaths | None = None) -> str:
    return (paths or resolve_paths()).ipc_endpoint(actor, "rpc")


def call_endpoint(
    endpoint: str, op: str, args: Any = None, *, timeout: float = DEFAULT_TIMEOUT_S
) -> Any:
    """Call ``op`` on ``endpoint`` and return its result, or raise the reply's error."""
    if endpoint.startswith("ipc://") and not os.path.exists(endpoint[len("ipc://") :]):
        raise Unavailable(f"orca is not running (nothing listens at {endpoint}; start it with `orca up`)")
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    try:
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.MAXMSGSIZE, ZMQ_MAX_MESSAGE_BYTES)
        sock.setsockopt(zmq.IMMEDIATE, 1)
        sock.connect(endpoint)
        rid = secrets.token_hex(6)
        deadline = time.monotonic() + timeout
        if not sock.poll(int(timeout * 1000), zmq.POLLOUT):
            raise Unavailable(
                f"cannot connect to {endpoint} within {timeout:g}s (is orca running?)"
            )
        sock.send(encode_request(rid, op, args))
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not sock.poll(int(remaining * 1000) + 1, zmq.POLLIN):
                raise Timeout(f"no reply to {op} from {endpoint} within {timeout:g}s")
            try:
                reply = decode_reply(sock.recv())
            except BadFrame:
                continue
            if reply.id != rid:
                continue
            if reply.ok:
                return reply.result
            raise error_from_wire(reply.error)
    finally:
        sock.close(linger=0)


def call(
    actor: str,
    op: str,
    args: Any = None,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    paths: OrcaPaths | None = None,
) -> Any:
    """Call ``op`` on the local actor ``actor``."""
    return call_endpoint(endpoint_for(actor, paths), op, args, timeout=timeout)
