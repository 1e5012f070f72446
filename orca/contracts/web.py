"""The ``web`` wire contract: the dashboard's own ops (issue 27).

The web actor is a client, like ``orca ui``: it mirrors hooks, ptyd and gitwatch and
asks them for everything it shows or does (a verdict goes to hooks' ``permission.answer``,
keys to ptyd's attach stream). What it owns is who may use it: the devices that paired
(``web/devices.json``, 0600 in a 0700 dir) and the one-time pairing codes (in memory).
These ops are for the local CLI (``orca web``) over the actor's ipc socket; they are
never relayed to another machine (the gateway relays store, hooks, ptyd and gitwatch
only: ``orca.contracts.gateway.RELAYED_CONTRACTS``).

Scopes a device holds (each implies none of the others): ``view`` (the board, terminals
read-only, diffs), ``type`` (keys into terminals, resizing them), ``approve`` (answer
permission requests).

Ops (args → result):

``web.status`` {} → WebStatus {url, bind, port, tls, devices, pendingPairings}
    Where the dashboard listens (``url``: what a browser on this machine opens).
``web.pair`` {name, scopes, ttlS=300} → Pairing {code, url, expiresAtMs, scopes}
    A one-time code for a new device: ``url`` carries it in its fragment
    (``#pair=<code>``, never sent to a server, never in a log); the browser that opens
    it exchanges it, once, for its own credential (an HttpOnly SameSite=Strict cookie).
    ``orca web`` shows the URL as a QR code in the terminal.
    Errors: ``bad_request`` (no scope, an unknown scope, a name over 64 characters).
``web.devices`` {} → DeviceList {devices: [Device]}
    ``Device`` {deviceId, name, scopes, createdAtMs, lastSeenMs}.
``web.revoke`` {deviceId} → Revoked {revoked}
    The device's credential stops working at once (open pages and sockets included).
    Errors: ``not_found``.

No events.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from orca.contracts.base import Args, Contract, EventSpec, NoArgs, Payload
from orca.wire.errors import BadRequest, NotFound

Scope = Literal["view", "type", "approve"]
SCOPES: tuple[Scope, ...] = ("view", "type", "approve")
MAX_DEVICE_NAME_CHARS = 64
# A pairing code is for the minutes it takes to scan it.
DEFAULT_PAIRING_TTL_S = 300.0
MAX_PAIRING_TTL_S = 3600.0


class PairArgs(Args, frozen=True, kw_only=True):
    name: Annotated[str, msgspec.Meta(max_length=MAX_DEVICE_NAME_CHARS)]
    scopes: Annotated[list[Scope], msgspec.Meta(min_length=1, max_length=3)]
    ttl_s: Annotated[float, msgspec.Meta(gt=0, le=MAX_PAIRING_TTL_S)] = DEFAULT_PAIRING_TTL_S


class RevokeArgs(Args, frozen=True, kw_only=True):
    device_id: str


class WebStatus(Payload, frozen=True, kw_only=True):
    url: str
    bind: str
    port: int
    tls: bool
    devices: int
    pending_pairings: int


class Pairing(Payload, frozen=True, kw_only=True):
    code: str
    url: str
    expires_at_ms: int
    scopes: list[Scope]


class Device(Payload, frozen=True, kw_only=True):
    device_id: str
    name: str
    scopes: list[Scope]
    created_at_ms: int
    last_seen_ms: int


class DeviceList(Payload, frozen=True, kw_only=True):
    devices: list[Device]


class Revoked(Payload, frozen=True, kw_only=True):
    revoked: bool


CONTRACT = Contract("web")

STATUS = CONTRACT.op("web.status", NoArgs, WebStatus, doc="where the dashboard listens")
PAIR = CONTRACT.op("web.pair", PairArgs, Pairing, BadRequest, doc="a one-time pairing code")
DEVICES = CONTRACT.op("web.devices", NoArgs, DeviceList, doc="the paired devices")
REVOKE = CONTRACT.op("web.revoke", RevokeArgs, Revoked, NotFound, doc="revoke a device")

EVENTS: tuple[EventSpec[Any], ...] = ()
