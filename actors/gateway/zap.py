"""The gateway's ZAP decision (pure): RFC 27 request frames in, reply frames out.

Runs inside the gateway (``actors/gateway/listener.py`` owns the socket and ties the
listener's life to it). A CURVE key passes if ``gateway-clients/`` authorizes it; the
reply's User-Id is the key (Z85), which the listener reads on every request to apply
the key's access level. Anything else (another mechanism, a malformed request, an
unknown key, an error while checking) is a refusal: fail closed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import zmq.utils.z85

from orca.remote.access import AccessTable

log = logging.getLogger(__name__)

ZAP_DOMAIN = b"orca-gateway"
# Distinct refusal reasons we log with the key; past this many, we only count.
MAX_LOGGED_REFUSALS = 256


@dataclass
class ZapStats:
    allowed: int = 0
    denied: int = 0
    reported: set[tuple[str, str]] = field(default_factory=set)


def decide(frames: list[bytes], table: AccessTable, stats: ZapStats) -> list[bytes]:
    """The reply to one ZAP request as a ROUTER sees it: ``[peer, b"", version, id,
    domain, address, identity, mechanism, *credentials]``."""
    if len(frames) < 8 or frames[1] != b"":
        stats.denied += 1
        log.warning("ZAP: malformed request (%d frames) refused", len(frames))
        peer = frames[0] if frames else b""
        rid = frames[3] if len(frames) > 3 else b""
        return [peer, b"", b"1.0", rid, b"400", b"bad request", b"", b""]
    peer, _, version, request_id, domain, address, _identity, mechanism, *credentials = frames
    status, text, user = b"400", "refused", b""
    key_text = "-"
    try:
        if version != b"1.0":
            text = "bad ZAP version"
        elif domain != ZAP_DOMAIN:
            text = "unknown domain"
        elif mechanism != b"CURVE" or len(credentials) != 1 or len(credentials[0]) != 32:
            text = f"{mechanism.decode('ascii', 'replace')} refused: CURVE only"
        else:
            public = zmq.utils.z85.encode(credentials[0])
            key_text = public.decode()
            client = table.lookup(public)
            if client is None:
                text = "unknown or revoked key"
            else:
                status, text, user = b"200", "OK", public
    except Exception as exc:  # any error while checking is a refusal, never an open door
        log.warning("ZAP: error checking a key, refused: %s", exc)
        text = "error"
    if status == b"200":
        stats.allowed += 1
    else:
        stats.denied += 1
        reason = (text, key_text)
        if reason not in stats.reported and len(stats.reported) < MAX_LOGGED_REFUSALS:
            stats.reported.add(reason)
            log.warning(
                "ZAP: refused a connection from %s (%s, key %s); repeats are only counted",
                address.decode("ascii", "replace"),
                text,
                key_text,
            )
    return [peer, b"", b"1.0", request_id, status, text.encode(), user, b""]
