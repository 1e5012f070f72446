"""The RPC server: a ROUTER socket, an op registry, and a dispatcher.

Requests are validated on receipt (envelope, then the op's own argument schema); any
refusal is an error reply with a stable ``code`` and the actor keeps serving. The
socket's owner task is also the dispatcher: it runs ops one at a time in arrival order
(an actor's state changes are then trivially ordered, and a request costs no extra task
switch), except ops registered ``concurrent=True`` (long waits such as a long-poll or a
call to another actor), which get a task of their own. A sequential op must therefore
not wait on anything slow. A full queue is answered at once with ``unavailable`` so a
flood costs the caller a retry, not the actor its memory.

A sequential op whose effect is decided at once but whose reply must wait (a store
mutation is committed in arrival order, then waits for its fsync) returns ``Later``:
the dispatcher moves on to the next request at once and the reply is sent by a task of
its own when ``Later.finish`` returns. That is what lets the store's journal commit a
whole burst of mutations with one fsync (group commit) while their order stays the
arrival order.

Idempotency: a request carrying ``idem`` has its reply cached (bounded LRU); a retry
with the same key gets the cached reply instead of running the op twice.
"""

from __future__ import annotations

import logging
import os
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec
import trio
import zmq

from orca import PROTOCOL_VERSION, __version__
from orca.actor.zsocket import ZSocket, bind_endpoint, new_socket, unlink_ipc
from orca.build import build_id
from orca.contracts import sys as sys_contract
from orca.contracts.base import NoArgs, Op
from orca.model.codec import for_wire
from orca.wire.codec import DECODE_ERRORS, MAX_FRAME_BYTES
from orca.wire.envelope import (
    Request,
    RequestError,
    decode_request,
    encode_error,
    encode_ok,
)
from orca.wire.errors import BadRequest, Internal, OrcaError, Unavailable, UnknownOp

log = logging.getLogger(__name__)

# Requests waiting for the dispatcher before new ones are refused with "unavailable".
MAX_QUEUED_REQUESTS = 4096
# ... and the bytes their args hold (each request keeps its frame until it runs): a peer
# that floods large requests makes the actor hold at most this much, not 4096 frames.
MAX_QUEUED_BYTES = 4 * MAX_FRAME_BYTES
# A request socket refuses a frame above this at its header (libzmq drops the peer's
# connection before allocating it): just above the request limit, so one between the
# two is still answered ``too_large``, and far below the 64 MiB of a client's sockets.
REQUEST_SOCKET_MAX_BYTES = MAX_FRAME_BYTES + 1024 * 1024
# Replies remembered for idempotent retries; a retry arrives within seconds, so a few
# thousand entries cover any realistic burst of retried mutations.
IDEMPOTENCY_CACHE_SIZE = 4096

Handler = Callable[[Any], Awaitable[Any]]
A = TypeVar("A", bound=msgspec.Struct)


@dataclass(frozen=True)
class OpSpec:
    name: str
    handler: Handler
    decode_args: Callable[[bytes], Any]
    concurrent: bool


@dataclass(frozen=True)
class Later:
    """A sequential op's reply that is not ready yet: its effect happened in arrival
    order; ``finish`` (awaited in a task of its own) returns the result or raises."""

    finish: Callable[[], Awaitable[Any]]


@dataclass
class ServerStats:
    requests: int = 0
    errors: int = 0
    refused: int = 0
    started_at: float = field(default_factory=time.monotonic)


class RpcServer:
    """Serve registered ops on one or more ROUTER endpoints."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.stats = ServerStats()
        self._ops: dict[str, OpSpec] = {}
        self._sock = new_socket(zmq.ROUTER)
        self._sock.setsockopt(zmq.MAXMSGSIZE, REQUEST_SOCKET_MAX_BYTES)
        self._zs = ZSocket(self._sock, self._on_message, pokeable=True)
        self._queue: deque[tuple[bytes, Request, OpSpec]] = deque()
        self._queued_bytes = 0  # len(args) summed over the queue
        self._idem: OrderedDict[str, tuple[bool, Any]] = OrderedDict()
        self._idem_inflight: dict[str, trio.Event] = {}
        self.endpoints: list[str] = []
        self._ipc_files: list[tuple[str, int]] = []
        self.extra_stats: Callable[[], dict[str, Any]] | None = None
        self.epoch = ""
        self._nursery: trio.Nursery | None = None
        self._register_builtins()

    # -- registry -----------------------------------------------------------------
    def register(
        self, op: Op[A, Any], handler: Callable[[A], Awaitable[Any]], *, concurrent: bool = False
    ) -> None:
        """Serve ``op`` with ``handler``; its args are validated as the op's ``args`` type.

        The handler returns the op's result (its Struct, or builtins of the same shape):
        clients decode it with the same descriptor.
        """
        if op.name in self._ops:
            raise ValueError(f"op {op.name!r} is already registered")
        self._ops[op.name] = OpSpec(op.name, handler, op.decode_args, concurrent)

    @property
    def ops(self) -> list[str]:
        return sorted(self._ops)

    @property
    def socket(self) -> zmq.Socket[bytes]:
        """The ROUTER socket, for options that must be set before a bind (CURVE)."""
        return self._sock

    def bind(self, endpoint: str) -> str:
        """Bind one more endpoint; returns the resolved endpoint (tcp wildcards)."""
        return bind_endpoint(self._sock, endpoint, self.endpoints, self._ipc_files)

    # -- receive path (owner task, must not block) -----------------------------------
    def _reply(self, identity: bytes, body: bytes) -> None:
        # ROUTER never blocks: a reply to a vanished peer is dropped, which is right.
        self._zs.send_nowait((identity, body))

    def _on_message(self, frames: list[bytes]) -> None:
        if len(frames) != 2:
            self.stats.refused += 1
            if len(frames) >= 1:
                self._reply(
                    frames[0],
                    encode_error(
                        None, BadRequest(f"a request is exactly one frame, got {len(frames) - 1}")
                    ),
                )
            return
        identity, frame = frames
        try:
            req = decode_request(frame)
        except RequestError as exc:
            self.stats.refused += 1
            self._reply(identity, encode_error(exc.request_id, exc.error))
            return
        spec = self._ops.get(req.op)
        if spec is None:
            self.stats.refused += 1
            self._reply(
                identity, encode_error(req.id, UnknownOp(f"{self.name} has no op {req.op!r}"))
            )
            return
        size = len(req.args)
        if len(self._queue) < MAX_QUEUED_REQUESTS and (
            not self._queue or self._queued_bytes + size <= MAX_QUEUED_BYTES
        ):
            self._queue.append((identity, req, spec))
            self._queued_bytes += size
            # Queued from a concurrent op's reply send, the owner may be asleep.
            self._zs.wake_owner()
        else:
            self.stats.refused += 1
            self._reply(
                identity,
                encode_error(
                    req.id,
                    Unavailable(
                        f"{self.name} is overloaded ({len(self._queue)} requests,"
                        f" {self._queued_bytes // 1024} KiB queued)"
                    ),
                ),
            )

    # -- dispatch -----------------------------------------------------------------
    async def _execute(self, spec: OpSpec, req: Request) -> tuple[bool, Any]:
        try:
            args = spec.decode_args(req.args)
        except DECODE_ERRORS as exc:
            return False, BadRequest(f"invalid args for {spec.name}: {exc}")
        try:
            return True, await spec.handler(args)
        except OrcaError as exc:
            return False, exc
        except Exception as exc:
            log.exception("op %s failed", spec.name)
            return False, Internal(f"{spec.name} failed: {type(exc).__name__}: {exc}")

    async def _run_one(self, identity: bytes, req: Request, spec: OpSpec) -> None:
        self.stats.requests += 1
        key = req.idem
        if key is not None:
            while key in self._idem_inflight:
                await self._idem_inflight[key].wait()
            cached = self._idem.get(key)
            if cached is not None:
                self._send_result(identity, req, *cached)
                return
            self._idem_inflight[key] = trio.Event()
        try:
            ok, value = await self._execute(spec, req)
            if ok and isinstance(value, Later):
                assert self._nursery is not None  # a request is only run inside serve()
                self._nursery.start_soon(self._finish_later, identity, req, value)
                key = None  # completed (and the idem waiters woken) by the task
                return
        finally:
            # Invariant: an idem key never stays in flight past its op, even when the
            # op was cancelled, or a retry waiting on it would wait forever.
            if key is not None:
                self._idem_inflight.pop(key).set()
        self._complete(identity, req, ok, value)

    async def _finish_later(self, identity: bytes, req: Request, later: Later) -> None:
        ok: bool
        try:
            ok, value = True, await later.finish()
        except OrcaError as exc:
            ok, value = False, exc
        except Exception as exc:
            log.exception("op %s failed while finishing", req.op)
            ok, value = False, Internal(f"{req.op} failed: {type(exc).__name__}: {exc}")
        finally:
            if req.idem is not None and req.idem in self._idem_inflight:
                self._idem_inflight.pop(req.idem).set()
        self._complete(identity, req, ok, value)

    def _complete(self, identity: bytes, req: Request, ok: bool, value: Any) -> None:
        if req.idem is not None:
            self._idem[req.idem] = (ok, value)
            if len(self._idem) > IDEMPOTENCY_CACHE_SIZE:
                self._idem.popitem(last=False)
        self._send_result(identity, req, ok, value)

    def _send_result(self, identity: bytes, req: Request, ok: bool, value: Any) -> None:
        if ok:
            try:
                body = encode_ok(req.id, for_wire(value))
            except (
                Exception
            ) as exc:  # any encoder failure (type, overflow...) is our bug, not fatal
                log.exception("op %s returned an unencodable result", req.op)
                ok, value = False, Internal(f"{req.op} returned an unencodable result: {exc}")
            else:
                self._reply(identity, body)
                return
        self.stats.errors += 1
        self._reply(identity, encode_error(req.id, value))

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Own the socket and dispatch requests until cancelled."""
        zs, queue = self._zs, self._queue
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            while not zs.closed:
                flooded = zs.service()
                while queue:
                    identity, req, spec = queue.popleft()
                    self._queued_bytes -= len(req.args)
                    if spec.concurrent:
                        nursery.start_soon(self._run_one, identity, req, spec)
                    else:
                        await self._run_one(identity, req, spec)
                if flooded:
                    await trio.lowlevel.checkpoint()
                elif not queue:
                    await zs.wait()

    def close(self) -> None:
        self._zs.close()
        unlink_ipc(self._ipc_files)

    # -- built-in ops ----------------------------------------------------------------
    def _register_builtins(self) -> None:
        self.register(sys_contract.HELLO, self._hello)
        self.register(sys_contract.PING, self._ping)
        self.register(sys_contract.STATS, self._stats)

    async def _hello(self, _: NoArgs) -> sys_contract.Hello:
        return sys_contract.Hello(
            name=self.name,
            version=__version__,
            protocol=PROTOCOL_VERSION,
            capabilities=self.ops,
            epoch=self.epoch,
            pid=os.getpid(),
            endpoints=list(self.endpoints),
            build=build_id(),
        )

    async def _ping(self, _: NoArgs) -> sys_contract.Pong:
        return sys_contract.Pong(pong=True, t=time.time())

    async def _stats(self, _: NoArgs) -> dict[str, Any]:
        import psutil  # imported on demand: only sys.stats needs it

        proc = psutil.Process()
        cpu = proc.cpu_times()
        out: dict[str, Any] = {
            "name": self.name,
            "pid": os.getpid(),
            "uptime": time.monotonic() - self.stats.started_at,
            "rss": proc.memory_info().rss,
            "cpuUser": cpu.user,
            "cpuSystem": cpu.system,
            "requests": self.stats.requests,
            "errors": self.stats.errors,
            "refused": self.stats.refused,
        }
        if self.extra_stats is not None:
            out.update(self.extra_stats())
        return out
