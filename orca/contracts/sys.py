"""The ops every actor serves and the event every publisher sends (built into the runtime).

``sys.hello`` {} → Hello {name, version, protocol, capabilities, epoch, pid, endpoints,
    build}
    ``capabilities`` lists every op the actor serves (its contract's and these), so a
    peer of another build can tell which ops it may call before it calls them
    (docs/architecture.md §2, compatibility rules 1–3). ``orca restart --all`` reads them to
    decide how the old tree hands its terminals over (``sup.hand_over``).
    ``build`` is ``orca.build.build_id()``: a hash of the source the process runs (``""`` from a
    build older than the field), so "the new code is running" can be checked.
``sys.ping`` {} → Pong {pong, t}
``sys.stats`` {} → {name, pid, uptime, rss, cpuUser, cpuSystem, requests, errors,
    refused, ...}: an open map, the actor adds its own keys (``store``, ``ptyd``, ...).

Event ``sys.heartbeat`` (no data): the publisher's current ``seq`` without consuming
one, sent at once to each new subscription (it is live), a second after events were
sent (a subscriber that lost the tail of a burst notices) and every 30 s of nothing
(see ``orca.actor.publisher``). It is declared here but never carries data.
"""

from __future__ import annotations

from typing import Any

from orca.contracts.base import Contract, NoArgs, Payload


class Hello(Payload, frozen=True, kw_only=True):
    name: str
    version: str
    protocol: int
    capabilities: list[str]
    epoch: str
    pid: int
    endpoints: list[str]
    build: str = ""


class Pong(Payload, frozen=True, kw_only=True):
    pong: bool
    t: float


CONTRACT = Contract("sys")
HELLO = CONTRACT.op("sys.hello", NoArgs, Hello)
PING = CONTRACT.op("sys.ping", NoArgs, Pong)
STATS = CONTRACT.op("sys.stats", NoArgs, dict[str, Any])
HEARTBEAT_TYPE = "sys.heartbeat"
