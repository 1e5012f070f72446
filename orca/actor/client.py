"""The async RPC client: a DEALER socket with per-call deadlines and retries.

Each call gets a fresh request id; replies are matched by id, so replies arriving after
their call gave up are dropped. A call with ``retries`` resends on timeout with the same
idempotency key (generated if the caller gave none), so the server runs a retried
mutation once. ``ZMQ_IMMEDIATE`` keeps requests off connections that are not up: while
the peer is down a send waits (and times out as ``unavailable``) instead of queueing
into a pipe that will be discarded.
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio
import zmq

from orca.actor.zsocket import ZSocket, new_socket
from orca.wire.envelope import decode_reply, encode_request
from orca.wire.errors import BadFrame, OrcaError, Timeout, error_from_wire

DEFAULT_TIMEOUT_S = 5.0


class _Pending:
    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.result: Any = None
        self.error: OrcaError | None = None


class RpcClient:
    """Call ops on one actor endpoint. Needs its owner task running (see ``open_rpc_client``)."""

    def __init__(self, endpoint: str, *, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        sock = new_socket(zmq.DEALER)
        sock.setsockopt(zmq.IMMEDIATE, 1)
        sock.connect(endpoint)
        self._zs = ZSocket(sock, self._on_message)
        self._pending: dict[str, _Pending] = {}
        self._prefix = secrets.token_hex(4) + "-"
        self._counter = itertools.count(1)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await self._zs.run(task_status=task_status)

    def _on_message(self, frames: list[bytes]) -> None:
        if len(frames) != 1:
            return
        try:
            reply = decode_reply(frames[0])
        except BadFrame:
            return
        pending = self._pending.get(reply.id) if reply.id is not None else None
        if pending is None or pending.done.is_set():
            return  # a late reply to a call that already gave up or was answered
        if reply.ok:
            pending.result = reply.result
        else:
            pending.error = error_from_wire(reply.error)
        pending.done.set()

    async def call(
        self,
        op: str,
        args: Any = None,
        *,
        timeout: float | None = None,
        retries: int = 0,
        idem: str | None = None,
    ) -> Any:
        """Call ``op``; ``timeout`` bounds each attempt, ``retries`` resends with one idem key."""
        per_attempt = self.timeout if timeout is None else timeout
        if retries and idem is None:
            idem = secrets.token_hex(12)
        pending = _Pending()
        ids: list[str] = []
        try:
            for _attempt in range(retries + 1):
                rid = f"{self._prefix}{next(self._counter)}"
                ids.append(rid)
                self._pending[rid] = pending
                frame = encode_request(rid, op, args, idem)
                with trio.move_on_after(per_attempt):
                    await self._zs.send((frame,))
                    await pending.done.wait()
                if pending.done.is_set():
                    break
            else:
                raise Timeout(
                    f"no reply to {op} from {self.endpoint} within {per_attempt:g}s"
                    + (f" ({retries + 1} attempts)" if retries else "")
                )
        finally:
            for rid in ids:
                self._pending.pop(rid, None)
        if pending.error is not None:
            raise pending.error
        return pending.result

    def close(self) -> None:
        self._zs.close()


@asynccontextmanager
async def open_rpc_client(
    endpoint: str, *, timeout: float = DEFAULT_TIMEOUT_S
) -> AsyncIterator[RpcClient]:
    """An ``RpcClient`` whose owner task lives for the ``async with`` block."""
    client = RpcClient(endpoint, timeout=timeout)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(client.run)
            try:
                yield client
            finally:
                nursery.cancel_scope.cancel()
    finally:
        client.close()
