"""What an actor's ``setup`` receives: its sockets, its paths, its nursery."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import trio

from orca.actor.client import RpcClient
from orca.actor.mirror import Mirror, MirrorSpec
from orca.actor.publisher import EventPublisher
from orca.actor.rpc_server import RpcServer
from orca.paths import OrcaPaths

StopCallback = Callable[[], Awaitable[None]]


class Dormant(Exception):
    """Raised by an actor's ``setup`` started with :attr:`ActorContext.may_sleep`: it
    has nothing to do until a client asks for it. It exits (``DORMANT_EXIT``) before
    binding anything; orcad starts it again when asked (``sup.wake``)."""


@dataclass
class ActorContext:
    """The handle an actor uses to register ops, publish events and reach its peers."""

    name: str
    paths: OrcaPaths
    rpc: RpcServer
    events: EventPublisher
    nursery: trio.Nursery
    stop_callbacks: list[StopCallback] = field(default_factory=list)
    # orcad's first start of this actor (``orca up``): it may stay dormant until asked.
    may_sleep: bool = False
    _clients: dict[str, RpcClient] = field(default_factory=dict)

    def on_stop(self, callback: StopCallback) -> None:
        """Await ``callback`` on a graceful stop (SIGTERM), before the sockets close."""
        self.stop_callbacks.append(callback)

    def connect(self, actor: str, *, timeout: float = 5.0) -> RpcClient:
        """A client for a sibling actor's RPC endpoint (one per peer, reused)."""
        client = self._clients.get(actor)
        if client is None:
            client = RpcClient(self.paths.ipc_endpoint(actor, "rpc"), timeout=timeout)
            self._clients[actor] = client
            self.nursery.start_soon(client.run)
        return client

    def mirror(self, spec: MirrorSpec, *, consumer: str) -> Mirror[Any]:
        """A mirror of ``spec``'s publisher (the actor owning its contract), unstarted."""
        actor = spec.contract.actor
        return Mirror.of(
            spec,
            client=self.connect(actor),
            pub_endpoint=self.paths.ipc_endpoint(actor, "pub"),
            consumer=consumer,
        )

    def close_clients(self) -> None:
        for client in self._clients.values():
            client.close()
