"""Who may talk to the dashboard, decided per request before anything else runs. Pure.

Order, for every HTTP request and WebSocket handshake (``actors.web.app`` applies it):

1. **Host** must be one the dashboard is known by (its bind address, ``localhost``,
   ``127.0.0.1``, ``[::1]``, the ``hosts`` of web.toml; each with the port, bare for
   the scheme's default port): anything else is answered ``421 Misdirected Request``.
   This is what defeats DNS rebinding: a hostile page whose name now resolves to this
   machine still sends its own name as Host.
2. **Origin**, for every request that changes something (not GET/HEAD) and every
   WebSocket handshake (browsers send no preflight for those), must be exactly this
   dashboard's own origin (``<scheme>://<the Host it sent>``): else ``403``. A
   missing Origin is refused too: browsers always send it there.
3. **Credential**: the ``orca_web`` cookie (``__Host-orca_web`` over TLS), HttpOnly,
   SameSite=Strict, names a device and its secret (``orca.web_devices``); none or a
   wrong one is ``401``, a device without the scope the route needs ``403``.

Every response carries :func:`security_headers`: a CSP that allows scripts and styles
from this origin only (xterm.js draws its own theme into ``<style>`` elements, which
the page stamps with this response's nonce - without it a strict CSP leaves the
terminal black on black), ``frame-ancestors 'none'`` (no framing, no clickjacking),
no referrer, no sniffing.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie

from orca.web_config import WebConfig

COOKIE = "orca_web"
SECURE_COOKIE = "__Host-orca_web"
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
_DEFAULT_PORT = {"http": 80, "https": 443}
_SAFE_METHODS = frozenset({"GET", "HEAD"})
# Browsers cap a cookie's life at 400 days; revoking the device ends it sooner.
COOKIE_MAX_AGE_S = 400 * 86400


@dataclass(frozen=True)
class Refusal:
    status: int
    reason: str


@dataclass(frozen=True)
class Site:
    """What the dashboard is known as: scheme and the Host values it answers."""

    scheme: str
    hosts: frozenset[str]

    @property
    def secure(self) -> bool:
        return self.scheme == "https"

    @property
    def cookie_name(self) -> str:
        return SECURE_COOKIE if self.secure else COOKIE


def site_for(config: WebConfig, port: int) -> Site:
    names = {config.url_host().lower(), *_LOOPBACK_NAMES, *(h.lower() for h in config.hosts)}
    hosts = {f"{name}:{port}" for name in names}
    if _DEFAULT_PORT[config.scheme] == port:
        hosts |= names
    return Site(config.scheme, frozenset(hosts))


def check_host(site: Site, host: str | None) -> Refusal | None:
    if host is None or host.lower() not in site.hosts:
        return Refusal(421, "misdirected request: unknown Host")
    return None


def check_origin(site: Site, method: str, host: str, origin: str | None) -> Refusal | None:
    """For a state-changing request or a WebSocket (method ``WEBSOCKET``)."""
    if method in _SAFE_METHODS:
        return None
    if origin is None or origin.lower() != f"{site.scheme}://{host.lower()}":
        return Refusal(403, "forbidden: foreign or missing Origin")
    return None


def credential(site: Site, cookie_header: str | None) -> str | None:
    if not cookie_header:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(cookie_header)
    except CookieError:
        return None
    morsel = jar.get(site.cookie_name)
    return morsel.value if morsel is not None and morsel.value else None


def session_cookie(site: Site, value: str, *, clear: bool = False) -> str:
    """The ``Set-Cookie`` value: HttpOnly, SameSite=Strict, Path=/, Secure over TLS,
    kept as long as browsers keep any cookie (a phone stays paired until revoked)."""
    parts = [
        f"{site.cookie_name}={'' if clear else value}",
        "Path=/",
        "HttpOnly",
        "SameSite=Strict",
    ]
    if site.secure:
        parts.append("Secure")
    parts.append(f"Max-Age={0 if clear else COOKIE_MAX_AGE_S}")
    return "; ".join(parts)


def new_nonce() -> str:
    return secrets.token_urlsafe(18)


def content_security_policy(nonce: str) -> str:
    return "; ".join(
        (
            "default-src 'none'",
            "script-src 'self'",
            f"style-src 'self' 'nonce-{nonce}'",
            "img-src 'self' data:",
            "font-src 'self'",
            "connect-src 'self'",
            "manifest-src 'self'",
            "frame-ancestors 'none'",
            "base-uri 'none'",
            "form-action 'none'",
        )
    )


def security_headers(nonce: str) -> list[tuple[str, str]]:
    return [
        ("content-security-policy", content_security_policy(nonce)),
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
        ("cross-origin-opener-policy", "same-origin"),
        ("cross-origin-resource-policy", "same-origin"),
        ("permissions-policy", "camera=(), microphone=(), geolocation=()"),
        ("cache-control", "no-store"),
    ]
