"""The gateway's listener: CURVE (Ironhouse), our own ZAP handler, relaying.

One ROUTER bound on ``gateway.remote`` in the runtime dir (``ipc://``, mode 0600 in
the 0700 runtime dir: the end an ssh forward reaches, ``orca.remote.ssh``) and, when
``listen`` is set, on that ``tcp://`` endpoint too. Both are the same CURVE server
behind the same ZAP handler: a Unix socket only the user can open still admits only
authorized client keys (defense in depth inside the ssh tunnel).

Essay. With the libzmq of PyPI's pyzmq wheels, a CURVE server whose ZAP handler is
missing or dead accepts ANY client key (the "Stonehouse" default of RFC 27;
``ZMQ_ZAP_ENFORCE_DOMAIN``, which we also set, covers only a handler that was never
bound, not one that is bound but broken). So the one rule this module is built around:

    Invariant: the listening socket exists only while our ZAP handler does.

Both live in one private ZeroMQ context (its ``inproc://zeromq.zap.01`` is ours alone,
whatever else the process binds), in one function (``_serve_once``): the ZAP socket is
bound and its owner task started first; only then is the listener bound; whatever ends
either of them (a crash in the handler, a fault injected by a test, cancellation) runs
the same ``finally``, which closes the *listener first* and the ZAP socket second, with
no checkpoint in between. A ZAP handler that died stops answering, so handshakes stall
(never pass) until the listener is gone. Then the gateway logs it, waits
``zap_restart_s`` and starts both again: no process restarts, no door left open.

Per request: the User-Id the ZAP handler gave the connection (the client's key) is
looked up again in ``gateway-clients/`` (``AccessTable``), so a revoked key is refused
at its next request even on a connection opened before; its access level picks the
allowed ops (``orca.contracts.gateway``). Then the per-peer bounds (``bounds.py``), then
the op is run: ``gateway.events`` from the ring, ``sys.hello``/``sys.ping`` here, the
rest relayed to the owning local actor over ipc. Sizes: ``ZMQ_MAXMSGSIZE`` on the
listener (libzmq drops a peer sending more), replies of ``term.read`` capped.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import trio
import zmq
from zmq.utils.monitor import parse_monitor_message

from actors.gateway import zap
from actors.gateway.bounds import Budgets
from actors.gateway.framesocket import FrameSocket
from actors.gateway.ring import EventRing
from actors.gateway.termwait import OutputWaits
from orca import PROTOCOL_VERSION, __version__, keys
from orca.actor.client import RpcClient
from orca.actor.endpoints import ZAP_ENDPOINT
from orca.actor.zsocket import ZSocket, bind_endpoint, unlink_ipc
from orca.contracts import gateway as gw
from orca.contracts import gitwatch, orch, ptyd
from orca.contracts import sys as sys_contract
from orca.model.codec import for_wire
from orca.remote.access import AccessTable
from orca.remote.hosts import Heartbeats
from orca.wire.codec import DECODE_ERRORS
from orca.wire.envelope import RequestError, decode_request, encode_error, encode_ok
from orca.wire.errors import BadRequest, Internal, OrcaError, Timeout, Unavailable

log = logging.getLogger(__name__)

# Requests from another machine are small (the largest is a term.write of pasted text);
# libzmq drops a connection that sends a bigger message before we read any of it.
REMOTE_MAX_MESSAGE_BYTES = 1024 * 1024
# A term.read reply over the link: bounded so one reply cannot monopolize it.
REMOTE_READ_LIMIT = 512 * 1024
# How long a relayed op may take on the local actor: reads are served from memory;
# worktree mutations run git (create may fetch), so they get much longer.
RELAY_TIMEOUT_S = 2.0
SLOW_RELAY_TIMEOUT_S = 120.0
# Replies queued for one slow peer before ROUTER drops them (it never blocks).
REMOTE_SNDHWM = 1000
REMOTE_RCVHWM = 1000
# Log at most one line per (key, reason) this many seconds.
LOG_EVERY_S = 10.0


class ZapDied(Exception):
    """The ZAP handler ended; the listener was closed with it."""


@dataclass
class ListenerStats:
    refused_ops: int = 0
    zap_restarts: int = 0
    malformed: int = 0
    handshake_failures: int = 0
    zap: zap.ZapStats = field(default_factory=zap.ZapStats)


@dataclass
class ListenerConfig:
    listen: str
    beats: Heartbeats
    # The ipc endpoint ssh forwards reach (``gateway.remote``); "" binds none (unit tests).
    local: str = ""
    zap_restart_s: float = 1.0
    faults_enabled: bool = False
    # Relay the transcript index's read ops (gw.VAULT_OPS); off by default.
    share_vault: bool = False


def _frame_user_id(frame: zmq.Frame) -> bytes | None:
    try:
        user = frame.get("User-Id")
    except (zmq.ZMQError, KeyError):
        return None
    return user.encode() if isinstance(user, str) and user else None


class GatewayListener:
    def __init__(
        self,
        config: ListenerConfig,
        pair: keys.KeyPair,
        access: AccessTable,
        ring: EventRing,
        connect: Callable[[str], RpcClient],
        ring_changed: Callable[[], trio.Event],
        waits: OutputWaits | None = None,
    ) -> None:
        self.config = config
        self.pair = pair
        self.access = access
        self.ring = ring
        self._connect = connect
        self._ring_changed = ring_changed
        self.waits = waits
        self.stats = ListenerStats()
        self.op_counts: dict[str, int] = {}
        self.budgets = Budgets()
        self.zap_alive = False
        self.listening: str | None = None
        self.local_listening: str | None = None
        self._ipc_files: list[tuple[str, int]] = []
        self._ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context(io_threads=1)
        self._listener: FrameSocket | None = None
        self._zap: ZSocket | None = None
        self._monitor_zs: ZSocket | None = None
        self._nursery: trio.Nursery | None = None
        self._fault = False
        self._logged: dict[tuple[str, str], float] = {}

    # -- lifecycle -------------------------------------------------------------------
    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        started = False
        while True:
            try:
                await self._serve_once(None if started else task_status)
            except* ZapDied as group:
                self.stats.zap_restarts += 1
                log.error(
                    "ZAP handler died (%s): listener %s closed; restarting both in %.1fs",
                    group.exceptions[0],
                    self.config.listen,
                    self.config.zap_restart_s,
                )
            except* zmq.ZMQError as group:
                log.error(
                    "gateway: cannot listen on %s (%s); retrying in %.1fs",
                    self.config.listen,
                    group.exceptions[0],
                    self.config.zap_restart_s,
                )
            except* Exception as group:  # our bug: fail closed (all closed), log, start again
                self.stats.zap_restarts += 1
                log.error(
                    "gateway: listener failed (%r): closed; restarting in %.1fs",
                    group.exceptions[0],
                    self.config.zap_restart_s,
                    exc_info=group.exceptions[0],
                )
            started = True
            await trio.sleep(self.config.zap_restart_s)

    def inject_zap_fault(self) -> None:
        """Tests: the next ZAP request crashes the handler (as a bug would)."""
        self._fault = True

    def _on_zap(self, frames: list[bytes]) -> None:
        if self._fault:
            self._fault = False
            raise ZapDied("fault injected into the ZAP handler")
        if self._zap is not None:
            self._zap.send_nowait(zap.decide(frames, self.access, self.stats.zap))

    async def _serve_once(self, task_status: trio.TaskStatus[None] | None) -> None:
        zap_sock = self._ctx.socket(zmq.ROUTER)
        zap_sock.setsockopt(zmq.LINGER, 0)
        zap_zs: ZSocket | None = None
        listener: FrameSocket | None = None
        try:
            zap_sock.bind(ZAP_ENDPOINT)
            zap_zs = self._zap = ZSocket(zap_sock, self._on_zap)
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                await nursery.start(zap_zs.run)
                self.zap_alive = True
                # Only now, with the handler answering, may anything listen.
                listener = self._bind_listener()
                self._listener = listener
                monitor = self._monitor(listener.sock)
                await nursery.start(monitor.run)
                await nursery.start(listener.run)
                log.info(
                    "gateway listening on %s (CURVE, key %s)",
                    " and ".join(e for e in (self.local_listening, self.listening) if e),
                    self.pair.public.decode(),
                )
                if task_status is not None:
                    task_status.started()
                    task_status = None
                await trio.sleep_forever()
        finally:
            # Invariant (module docstring): the listener goes first, no checkpoint between.
            self._listener = None
            self.listening = None
            self.local_listening = None
            if listener is not None:
                listener.close()
            unlink_ipc(self._ipc_files)
            self._ipc_files = []
            if self._monitor_zs is not None:
                self._monitor_zs.close()
                self._monitor_zs = None
            self.zap_alive = False
            self._zap = None
            if zap_zs is not None:
                zap_zs.close()
            else:
                zap_sock.close(linger=0)
            if task_status is not None:
                task_status.started()  # report even a failed first start; status says why

    def _bind_listener(self) -> FrameSocket:
        sock = self._ctx.socket(zmq.ROUTER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.MAXMSGSIZE, REMOTE_MAX_MESSAGE_BYTES)
        sock.setsockopt(zmq.SNDHWM, REMOTE_SNDHWM)
        sock.setsockopt(zmq.RCVHWM, REMOTE_RCVHWM)
        self.config.beats.apply(sock)
        sock.setsockopt(zmq.ZAP_DOMAIN, zap.ZAP_DOMAIN)
        # Second layer: libzmq >= 4.3 then refuses when no handler is bound at all.
        sock.setsockopt(zmq.ZAP_ENFORCE_DOMAIN, 1)
        sock.setsockopt(zmq.CURVE_SECRETKEY, self.pair.secret)
        sock.setsockopt(zmq.CURVE_PUBLICKEY, self.pair.public)
        sock.setsockopt(zmq.CURVE_SERVER, 1)
        frames = FrameSocket(sock, self._on_request)
        try:
            endpoints: list[str] = []
            if self.config.local:
                self.local_listening = bind_endpoint(
                    sock, self.config.local, endpoints, self._ipc_files
                )
            if self.config.listen:
                self.listening = bind_endpoint(sock, self.config.listen, endpoints, [])
        except BaseException:
            frames.close()
            raise
        return frames

    def _monitor(self, sock: zmq.Socket[bytes]) -> ZSocket:
        """Log failed handshakes (a plaintext client, a wrong pinned server key, a key
        ZAP refused): they end before any request, so only the monitor sees them."""
        events = (
            zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
            | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
            | zmq.EVENT_HANDSHAKE_FAILED_AUTH
        )
        monitor = sock.get_monitor_socket(events)
        self._monitor_zs = ZSocket(monitor, self._on_monitor)
        return self._monitor_zs

    def _on_monitor(self, frames: list[bytes]) -> None:
        try:
            event = parse_monitor_message(frames)
        except Exception:  # a malformed monitor message is libzmq's, never fatal
            return
        kind = int(event["event"])
        self.stats.handshake_failures += 1
        what = {
            int(zmq.EVENT_HANDSHAKE_FAILED_AUTH): "key refused by ZAP",
            int(zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL): "not a CURVE client of this server key"
            " (plaintext, or a wrong pinned server key)",
        }.get(kind, "handshake failed")
        self._log_refusal(b"(handshake)", f"{what} (libzmq code {event['value']})")

    # -- requests (owner task: must not block) -----------------------------------------
    def _log_refusal(self, key: bytes, reason: str) -> None:
        now = time.monotonic()
        tag = (key.decode("ascii", "replace"), reason)
        if now - self._logged.get(tag, -LOG_EVERY_S) >= LOG_EVERY_S:
            if len(self._logged) > 4096:
                self._logged.clear()
            self._logged[tag] = now
            log.warning("gateway: refused a request from key %s: %s", tag[0], reason)

    def _reply(self, ident: bytes, body: bytes) -> None:
        listener = self._listener
        if listener is not None and not listener.closed:
            listener.send_nowait((ident, body))

    def _on_request(self, frames: list[zmq.Frame]) -> None:
        try:
            self._admit(frames)
        except Exception:  # a peer's message must never end the listener: our bug, logged
            self.stats.malformed += 1
            log.exception("gateway: a request could not be handled")

    def _admit(self, frames: list[zmq.Frame]) -> None:
        if len(frames) != 2:
            self.stats.malformed += 1
            return
        ident, body = frames[0].bytes, frames[1]
        key = _frame_user_id(body)
        client = self.access.lookup(key) if key is not None else None
        raw = body.bytes
        if key is None or client is None:
            self.stats.refused_ops += 1
            self._log_refusal(key or b"-", "key not (or no longer) authorized")
            self._reply(ident, encode_error(_peek_id(raw), gw.Forbidden("key not authorized")))
            return
        refusal = self.budgets.try_start(key, time.monotonic())
        if refusal is not None:
            self.stats.refused_ops += 1
            self._log_refusal(key, refusal)
            self._reply(ident, encode_error(_peek_id(raw), Unavailable(refusal)))
            return
        started = False
        try:
            try:
                req = decode_request(raw)
            except RequestError as exc:
                self.stats.malformed += 1
                self._reply(ident, encode_error(exc.request_id, exc.error))
                return
            op = gw.OPS_BY_NAME.get(req.op)
            if op is None or op not in gw.allowed_ops(client.access):
                self.stats.refused_ops += 1
                why = f"{req.op!r} is not allowed for a {client.access} key ({client.name})"
                self._log_refusal(key, why)
                self._reply(ident, encode_error(req.id, gw.Forbidden(why)))
                return
            if op in gw.VAULT_OPS and not self.config.share_vault:
                self.stats.refused_ops += 1
                why = (
                    f"{req.op!r}: this host does not share its transcript index"
                    " (gateway.toml [gateway] share_vault = true)"
                )
                self._log_refusal(key, why)
                self._reply(ident, encode_error(req.id, gw.Forbidden(why)))
                return
            assert self._nursery is not None
            self.op_counts[op.name] = self.op_counts.get(op.name, 0) + 1  # bounded: known ops
            self._nursery.start_soon(self._run_request, ident, key, req.id, req.idem, op, req.args)
            started = True
        finally:
            if not started:
                self.budgets.finish(key)

    async def _run_request(
        self, ident: bytes, key: bytes, rid: str, idem: str | None, op: Any, raw_args: Any
    ) -> None:
        try:
            try:
                result = await self._execute(op, raw_args, idem)
                body = encode_ok(rid, result)
            except OrcaError as exc:
                body = encode_error(rid, exc)
            except Exception as exc:
                log.exception("gateway: relaying %s failed", op.name)
                body = encode_error(rid, Internal(f"{op.name} failed: {type(exc).__name__}"))
            self._reply(ident, body)
        finally:
            self.budgets.finish(key)

    async def _execute(self, op: Any, raw_args: Any, idem: str | None) -> Any:
        try:
            args = op.decode_args(raw_args)
        except DECODE_ERRORS as exc:
            raise BadRequest(f"invalid args for {op.name}: {exc}") from None
        except msgspec.ValidationError as exc:
            raise BadRequest(f"invalid args for {op.name}: {exc}") from None
        if op is gw.EVENTS:
            return for_wire(await self._events(args))
        if op is sys_contract.PING:
            return for_wire(sys_contract.Pong(pong=True, t=time.time()))
        if op is sys_contract.HELLO:
            return for_wire(
                sys_contract.Hello(
                    name="gateway",
                    version=__version__,
                    protocol=PROTOCOL_VERSION,
                    capabilities=sorted(o.name for o in gw.FULL_OPS),
                    epoch=self.ring.epoch,
                    pid=os.getpid(),
                    endpoints=[self.listening or ""],
                )
            )
        if op is ptyd.READ or op is gw.TERM_WAIT:
            limit = args.limit if args.limit is not None else REMOTE_READ_LIMIT
            args = msgspec.structs.replace(args, limit=max(1, min(limit, REMOTE_READ_LIMIT)))
        if op is gw.TERM_WAIT:
            return for_wire(await self.term_wait(args))
        client = self._connect(op.actor)
        slow = op.actor in (gitwatch.CONTRACT.actor, orch.CONTRACT.actor) and gw.is_mutating(op)
        timeout = SLOW_RELAY_TIMEOUT_S if slow else RELAY_TIMEOUT_S
        try:
            return await client.call(op.name, args, timeout=timeout, idem=idem)
        except Timeout:
            # Our actor's silence is not the link's: say so with a code the remote
            # side does not confuse with its own timeout (the link).
            raise Unavailable(f"{op.actor} on this host did not answer {op.name}") from None

    async def term_wait(self, args: gw.TermWaitArgs) -> ptyd.ReadResult:
        """``term.read`` that waits for output (``termwait.py``); without the waiter
        (never in the actor) a plain read."""
        client = self._connect(ptyd.CONTRACT.actor)

        async def read(request: ptyd.ReadArgs) -> ptyd.ReadResult:
            try:
                return await client.invoke(ptyd.READ, request, timeout=RELAY_TIMEOUT_S)
            except Timeout:
                raise Unavailable(f"ptyd on this host did not answer {ptyd.READ.name}") from None

        if self.waits is None:
            return await read(
                ptyd.ReadArgs(session_id=args.session_id, since=args.since, limit=args.limit)
            )
        return await self.waits.wait(args, read)

    async def _events(self, args: gw.EventsArgs) -> gw.EventBatch:
        limit = max(1, min(args.limit, gw.MAX_EVENTS_LIMIT))
        wait_s = max(0.0, min(args.wait_s, gw.MAX_EVENTS_WAIT_S))
        with trio.move_on_after(wait_s):
            while True:
                changed = self._ring_changed()
                got = self.ring.read(args.epoch, args.after, limit)
                if got.events or got.gap or args.after < 0:
                    break
                await changed.wait()
        got = self.ring.read(args.epoch, args.after, limit)
        return gw.EventBatch(epoch=self.ring.epoch, next=got.next, gap=got.gap, events=got.events)


def _peek_id(raw: bytes) -> str | None:
    """The request id of a frame we refuse before decoding it, if it is easy to find."""
    try:
        return decode_request(raw).id
    except RequestError as exc:
        return exc.request_id
