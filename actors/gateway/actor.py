"""The ``gateway`` actor shell: the tcp listener, the event ring, the remote followers.

Start-up: load the host key pair (``orca.keys.host_keys``), follow the local actors'
events into the ring (``orca.actor.subscriber``; PTY output is not relayed: remote
terminals read by offset with ``term.read``), start the listener if ``listen`` is set
(ZAP first, then the socket: ``listener.py``), start following the known remote hosts,
register the local ops. Nothing here writes another actor's state.
"""

from __future__ import annotations

import logging
from typing import Any

import trio

from actors.gateway.config import load_config
from actors.gateway.follower import Follower
from actors.gateway.listener import GatewayListener
from actors.gateway.ring import EventRing
from actors.gateway.targets import TargetRecorder
from actors.gateway.termwait import OutputWaits
from orca import keys
from orca.actor import ActorContext, Dormant
from orca.actor.subscriber import Subscriber
from orca.contracts import gateway as gw
from orca.contracts import gitwatch, hooks, ptyd, store
from orca.contracts.base import EventSpec, NoArgs
from orca.contracts.sys import HEARTBEAT_TYPE
from orca.remote.access import AccessTable, load_clients
from orca.remote.hosts import HostConfigError, load_hosts
from orca.wire.codec import encode
from orca.wire.envelope import Event

log = logging.getLogger(__name__)

# The local events a remote mirror needs (PTY output excluded: it is read by offset).
RELAYED_EVENTS: dict[str, list[EventSpec[Any]]] = {
    # agentSession.bound is relayed without its data (transcript paths stay here): a
    # remote mirror only needs it to keep hooks' seq without gaps.
    "hooks": [hooks.STATUS_SET, hooks.STATUS_CLEARED, hooks.SESSION_BOUND],
    "ptyd": [ptyd.SPAWNED, ptyd.EXIT, ptyd.CLOSED, ptyd.REKEYED],
    "gitwatch": list(gitwatch.CONTRACT.events.values()),
    # The labels of its worktrees (remote `orca worktree ls`): repos and worktree notes.
    "store": [
        store.REPO_ADDED,
        store.REPO_UPDATED,
        store.REPO_REMOVED,
        store.WORKTREE_META_CHANGED,
        store.WORKTREE_META_REMOVED,
        store.WORKTREE_RENAMED,
    ],
}
_NOT_RELAYED_TYPES = {gitwatch.CREATE_PROGRESS.type}
_RELAYED_WITHOUT_DATA = {hooks.SESSION_BOUND.type}


class Gateway:
    def __init__(self, ctx: ActorContext) -> None:
        self.ctx = ctx
        self.config = load_config(ctx.paths)
        self.pair = keys.host_keys(ctx.paths)
        self.ring = EventRing()
        self._changed = trio.Event()
        self.access = AccessTable(ctx.paths)
        self.waits = OutputWaits(ctx.paths.ipc_endpoint(ptyd.CONTRACT.actor, "pub"))
        self.listener = GatewayListener(
            self.config,
            self.pair,
            self.access,
            self.ring,
            self._connect,
            lambda: self._changed,
            self.waits,
        )
        self.targets = TargetRecorder(self._connect)
        self.follower = Follower(
            ctx.paths, self.config.beats, self._mirror_changed, self._host_status,
            self.targets.offer,
        )  # fmt: skip

    def _host_status(self, mirror: Any, row: Any, cleared: Any) -> None:
        self.ctx.events.emit(
            gw.HostStatus(host=mirror.name, host_id=mirror.host_id, row=row, cleared=cleared)
        )

    def _mirror_changed(self, mirror: Any) -> None:
        self.ctx.events.emit(
            gw.MirrorChanged(host=mirror.name, version=mirror.version, reachable=mirror.reachable)
        )

    def _connect(self, actor: str) -> Any:
        return self.ctx.connect(actor, timeout=5.0)

    def _relay(self, event: Event, _typed: Any = None) -> None:
        if event.type in _NOT_RELAYED_TYPES:
            return
        data = None if event.type in _RELAYED_WITHOUT_DATA else event.data
        self.ring.append(
            gw.RelayedEvent(
                src=event.src, epoch=event.epoch, seq=event.seq, type=event.type, data=data
            ),
            len(encode(data)) + 64,
        )
        if event.type == HEARTBEAT_TYPE:
            return  # read with the next batch or at the long-poll's end: no wake-up for it
        self._changed.set()
        self._changed = trio.Event()

    async def status(self, _: NoArgs) -> gw.GatewayStatus:
        stats = self.listener.stats
        peers = []
        clients = {
            c.public: c for c in (self.access.lookup(k) for k in self.listener.budgets.peers) if c
        }
        for key, budget in self.listener.budgets.peers.items():
            client = clients.get(key)
            peers.append(
                gw.PeerStats(
                    key=key.decode("ascii", "replace"),
                    name=client.name if client else "(revoked)",
                    access=client.access if client else "-",
                    requests=budget.requests,
                    refused=budget.refused,
                    inflight=budget.inflight,
                )
            )
        return gw.GatewayStatus(
            listening=self.listener.listening,
            local_socket=self.listener.local_listening,
            server_key=self.pair.public.decode(),
            zap_alive=self.listener.zap_alive,
            zap_restarts=stats.zap_restarts,
            zap_allowed=stats.zap.allowed,
            zap_denied=stats.zap.denied,
            refused_ops=stats.refused_ops,
            handshake_failures=stats.handshake_failures,
            peers=peers,
            hosts=self.follower.links(),
            op_counts=dict(self.listener.op_counts),
        )

    async def mirrors(self, _: NoArgs) -> gw.MirrorList:
        return gw.MirrorList(hosts=self.follower.views())

    async def events(self, args: gw.EventsArgs) -> gw.EventBatch:
        return await self.listener._events(args)

    async def term_wait(self, args: gw.TermWaitArgs) -> ptyd.ReadResult:
        return await self.listener.term_wait(args)

    async def inject_zap_fault(self, _: NoArgs) -> gw.Empty:
        if not self.config.faults_enabled:
            raise gw.Forbidden("fault injection is off (ORCA_GATEWAY_FAULTS=1 enables it)")
        log.warning("gateway: ZAP fault injected on request")
        self.listener.inject_zap_fault()
        return gw.Empty()


def _serves_no_one(gateway: Gateway) -> bool:
    """No tcp listener, no remote host to follow, no client authorized here (whose ssh
    link reaches the ipc socket): until ``orca host add`` or a client's ssh link asks
    for it (``orca host ssh-info`` there pings it), the gateway has nothing to do."""
    return (
        not gateway.config.listen
        and not load_hosts(gateway.ctx.paths)
        and not load_clients(gateway.ctx.paths)
    )


async def setup(ctx: ActorContext) -> None:
    try:
        gateway = Gateway(ctx)
        if ctx.may_sleep and _serves_no_one(gateway):
            raise Dormant("no listener, no remote host, no authorized client")
    except HostConfigError as exc:
        log.error("gateway: refusing to start: %s", exc)
        raise SystemExit(f"gateway: {exc}") from None
    for actor, specs in RELAYED_EVENTS.items():
        sub = Subscriber(
            ctx.paths.ipc_endpoint(actor, "pub"),
            specs,
            gateway._relay,
            consumer=f"gateway<-{actor}",
            on_other=gateway._relay,
        )
        ctx.nursery.start_soon(sub.run)
    await ctx.nursery.start(gateway.waits.run)
    # Always: the ipc socket (ssh forwards) at least; tcp too when ``listen`` is set.
    await ctx.nursery.start(gateway.listener.run)
    ctx.nursery.start_soon(gateway.targets.run)
    ctx.nursery.start_soon(gateway.follower.run)
    ctx.rpc.register(gw.STATUS, gateway.status)
    ctx.rpc.register(gw.MIRRORS, gateway.mirrors)
    ctx.rpc.register(gw.EVENTS, gateway.events, concurrent=True)
    ctx.rpc.register(gw.TERM_WAIT, gateway.term_wait, concurrent=True)
    ctx.rpc.register(gw.INJECT_ZAP_FAULT, gateway.inject_zap_fault)
    ctx.rpc.extra_stats = lambda: {
        "gateway": {
            "ringEvents": gateway.ring.head - gateway.ring.first,
            "ringBytes": gateway.ring.bytes,
            "ringDropped": gateway.ring.dropped,
            "termWatches": len(gateway.waits.watches),
            "termWakes": gateway.waits.wakes,
            "termServedFromEvents": gateway.waits.served_from_events,
        }
    }
