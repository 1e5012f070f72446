"""The actor runtime: trio + ZeroMQ sockets, RPC server/client, events, mirrors."""

from orca.actor.app import run_actor, serve_actor
from orca.actor.client import RpcClient, open_rpc_client
from orca.actor.context import ActorContext, Dormant
from orca.actor.mirror import Mirror
from orca.actor.publisher import EventPublisher
from orca.actor.rpc_server import RpcServer

__all__ = [
    "ActorContext",
    "Dormant",
    "EventPublisher",
    "Mirror",
    "RpcClient",
    "RpcServer",
    "open_rpc_client",
    "run_actor",
    "serve_actor",
]
