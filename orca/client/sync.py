"""A blocking client for short-lived callers (the CLI, scripts, benchmarks).

It imports neither trio nor the actor runtime, so a CLI command pays only for pyzmq and
msgspec at start-up. One DEALER per call: the CLI makes a handful of calls per run,
and a fresh socket can never receive a stale reply.
"""

from __future__ import annotations

import os
import secrets
import time
from typing import Any, TypeVar

import zmq

from orca.contracts.base import Op, decode_result
from orca.paths import OrcaPaths, resolve_paths
from orca.wire.codec import ZMQ_MAX_MESSAGE_BYTES, decode_any
from orca.wire.envelope import decode_reply_raw, encode_request
from orca.wire.errors import BadFrame, Timeout, Unavailable, error_from_wire

DEFAULT_TIMEOUT_S = 5.0
R = TypeVar("R")


def endpoint_for(actor: str, paths: OrcaPaths | None = None) -> str:
    return (paths or resolve_paths()).ipc_endpoint(actor, "rpc")


def invoke(
    op: Op[Any, R],
    args: Any = None,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    paths: OrcaPaths | None = None,
    endpoint: str | None = None,
) -> R:
    """Call ``op`` on its actor (or on ``endpoint``) and return its typed result."""
    target = endpoint or endpoint_for(op.actor, paths)
    return decode_result(op, _roundtrip(target, op.name, args, timeout), target)


def call_endpoint(
    endpoint: str, op: str, args: Any = None, *, timeout: float = DEFAULT_TIMEOUT_S
) -> Any:
    """Untyped twin of ``invoke`` by op *name* (tests and probes that speak raw maps)."""
    return decode_any(_roundtrip(endpoint, op, args, timeout))


def _roundtrip(endpoint: str, op: str, args: Any, timeout: float) -> bytes:
    """Send one request and return the reply's raw result, or raise the reply's error."""
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
                reply = decode_reply_raw(sock.recv())
            except BadFrame:
                continue
            if reply.id != rid:
                continue
            if reply.ok:
                return bytes(reply.result)
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
    """Untyped call of ``op`` (by name) on the local actor ``actor``."""
    return call_endpoint(endpoint_for(actor, paths), op, args, timeout=timeout)
