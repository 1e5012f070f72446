"""The ASGI layer in front of every route: Host, Origin, security headers (thin).

Applies :mod:`actors.web.guard`'s decisions before the request reaches Starlette: a
refused HTTP request gets its status and a one-line body; a refused WebSocket is closed
before it is accepted (the server answers the handshake 403). Every HTTP response gets
the security headers, with a fresh CSP nonce per request (``scope["state"]["nonce"]``,
which the index page stamps into its markup).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from actors.web.guard import Site, check_host, check_origin, new_nonce, security_headers

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _header(scope: Scope, name: bytes) -> str | None:
    values = [v for k, v in scope.get("headers", ()) if k.lower() == name]
    if len(values) != 1:
        return None  # absent, or sent twice (never trust the first of two Hosts)
    return bytes(values[0]).decode("latin-1")


class Guarded:
    def __init__(self, app: ASGIApp, site: Callable[[], Site]) -> None:
        self._app = app
        self._site = site

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self._app(scope, receive, send)
            return
        site = self._site()
        host = _header(scope, b"host")
        refusal = check_host(site, host)
        if refusal is None:
            assert host is not None
            method = "WEBSOCKET" if scope["type"] == "websocket" else scope["method"]
            refusal = check_origin(site, method, host, _header(scope, b"origin"))
        if refusal is not None:
            if scope["type"] == "websocket":
                await receive()  # websocket.connect
                await send({"type": "websocket.close", "code": 1008, "reason": refusal.reason})
                return
            await _plain(send, refusal.status, refusal.reason)
            return
        nonce = new_nonce()
        scope.setdefault("state", {})["nonce"] = nonce
        if scope["type"] == "websocket":
            await self._app(scope, receive, send)
            return
        extra = [(k.encode(), v.encode()) for k, v in security_headers(nonce)]

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [
                    *message.get("headers", []),
                    *((k, v) for k, v in extra if k not in present),
                ]
            await send(message)

        await self._app(scope, receive, send_with_headers)


async def _plain(send: Send, status: int, reason: str) -> None:
    body = f"{status} {reason}\n".encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
    ]
    headers += [(k.encode(), v.encode()) for k, v in security_headers(new_nonce())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
