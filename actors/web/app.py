"""The dashboard's HTTP routes (Starlette, served by hypercorn's trio worker).

Every route runs behind :class:`actors.web.guarded.Guarded` (Host, Origin, security
headers) and checks its own credential and scope (:meth:`WebApp.device`): ``view`` to
read, ``approve`` to answer a permission request; the login routes are the only ones
open without a cookie. Answers go to the actor that owns the thing: a verdict to hooks
(``permission.answer``), nothing is written here but the device list.

Routes: ``GET /`` (the page), ``/static/*`` (its script, styles and the vendored
xterm.js), ``POST /api/session`` (``{"token"}`` or ``{"code"}`` → the cookie),
``POST /api/logout``, ``GET /api/me``, ``GET /api/board``, ``GET /api/review``,
``GET /api/diff``, ``POST /api/permissions/<id>``; WebSockets in
:mod:`actors.web.sockets`.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import HTTPConnection, Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles

from actors.web.access import Access, Throttled, TooManyDevices
from actors.web.guard import Site, credential, session_cookie
from actors.web.guarded import Guarded
from actors.web.source import BoardSource
from orca.actor.client import RpcClient
from orca.contracts import hooks, store
from orca.contracts.web import Scope
from orca.paths import OrcaPaths
from orca.review import changed_files, file_diff
from orca.web_devices import DeviceRecord
from orca.wire.errors import NotFound, OrcaError

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).with_name("static")
VENDOR = json.loads((STATIC_DIR / "vendor" / "vendor.json").read_text())
# Login bodies are a token or a code; anything larger is not one.
MAX_BODY_BYTES = 4096
MAX_NAME_CHARS = 64


class Denied(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def _integrity(name: str) -> str:
    for package in VENDOR["packages"].values():
        if name in package["files"]:
            return str(package["files"][name]["integrity"])
    raise KeyError(name)


@dataclass
class WebApp:
    access: Access
    source: BoardSource
    clients: dict[str, RpcClient]
    paths: OrcaPaths
    site: Site | None = None  # known once bound (a port of 0 is chosen by the kernel)

    def current_site(self) -> Site:
        assert self.site is not None, "the app serves only once bound"
        return self.site

    # -- auth ---------------------------------------------------------------------------
    def device(self, conn: HTTPConnection, scope: Scope) -> DeviceRecord:
        device = self.access.authenticate(
            credential(self.current_site(), conn.headers.get("cookie"))
        )
        if device is None:
            raise Denied(401, "not signed in")
        if scope not in device.scopes:
            raise Denied(403, f"this device may not {scope}")
        return device

    async def _json_body(self, request: Request) -> dict[str, Any]:
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            raise Denied(413, "body too large")
        try:
            parsed = json.loads(body or b"{}")
        except ValueError:
            raise Denied(400, "body is not JSON") from None
        if not isinstance(parsed, dict):
            raise Denied(400, "body is not a JSON object")
        return parsed

    # -- routes -------------------------------------------------------------------------
    async def index(self, request: Request) -> Response:
        nonce = request.scope["state"]["nonce"]
        page = (STATIC_DIR / "index.html").read_text()
        for name in ("xterm.js", "xterm.css", "addon-fit.js"):
            page = page.replace(f"@SRI:{name}@", _integrity(name))
        return HTMLResponse(page.replace("@NONCE@", nonce))

    async def login(self, request: Request) -> Response:
        body = await self._json_body(request)
        agent = request.headers.get("user-agent", "browser")
        name = str(body.get("name") or _browser_name(agent))[:MAX_NAME_CHARS]
        token, code = body.get("token"), body.get("code")
        client = request.client.host if request.client is not None else ""
        try:
            if isinstance(code, str) and code:
                paired = self.access.redeem(code, client)
            elif isinstance(token, str) and token:
                paired = self.access.login(token, name, client)
            else:
                raise Denied(400, "send a token or a pairing code")
        except TooManyDevices as exc:
            raise Denied(409, str(exc)) from None
        except Throttled:
            raise Denied(429, "too many wrong codes or tokens from here: wait a minute") from None
        if paired is None:
            raise Denied(401, "wrong or expired token or code")
        record, secret = paired
        response = JSONResponse(_me(record))
        response.headers["set-cookie"] = session_cookie(self.current_site(), secret)
        return response

    async def logout(self, request: Request) -> Response:
        device = self.device(request, "view")
        self.access.revoke(device.device_id)
        self.source.poke()
        response = JSONResponse({"revoked": device.device_id})
        response.headers["set-cookie"] = session_cookie(self.current_site(), "", clear=True)
        return response

    async def me(self, request: Request) -> Response:
        return JSONResponse(_me(self.device(request, "view")))

    async def board(self, request: Request) -> Response:
        self.device(request, "view")
        return JSONResponse({**self.source.board, "version": self.source.version})

    async def answer(self, request: Request) -> Response:
        device = self.device(request, "approve")
        body = await self._json_body(request)
        behavior = body.get("behavior")
        if behavior not in ("allow", "deny"):
            raise Denied(400, "behavior must be allow or deny")
        args = hooks.AnswerPermissionArgs(
            request_id=request.path_params["request_id"],
            behavior=behavior,
            message=str(body.get("message") or "")[: hooks.MAX_PERMISSION_MESSAGE_CHARS],
            by=f"web:{device.name}",
        )
        try:
            answered = await self.clients["hooks"].invoke(hooks.ANSWER_PERMISSION, args)
        except NotFound as exc:
            raise Denied(404, exc.message) from None
        except OrcaError as exc:
            raise Denied(503, f"hooks did not answer: {exc.message}") from None
        self.source.mark_stale()
        settlement = answered.settlement
        return JSONResponse(
            {"outcome": answered.outcome, "settled": settlement.outcome, "by": settlement.by}
        )

    async def review(self, request: Request) -> Response:
        self.device(request, "view")
        cwd, base = await self._review_target(request.query_params.get("worktree", ""))
        point, files, error = await changed_files(cwd, base)
        return JSONResponse(
            {
                "base": base,
                "point": point,
                "error": error,
                "files": [{"status": f.status, "path": f.path} for f in files],
            }
        )

    async def diff(self, request: Request) -> Response:
        self.device(request, "view")
        cwd, _base = await self._review_target(request.query_params.get("worktree", ""))
        point, path = request.query_params.get("point", ""), request.query_params.get("path", "")
        if not point or not all(c in "0123456789abcdef" for c in point) or not path:
            raise Denied(400, "point (a commit) and path are needed")
        return JSONResponse({"diff": await file_diff(cwd, point, path)})

    async def _review_target(self, worktree_id: str) -> tuple[str, str]:
        """(the worktree's folder, the ref it is reviewed against), as ``orca ui``'s
        review pane picks them: the repo's base ref, else its main worktree's branch."""
        rows = self.source.worktrees
        row = next((w for w in rows if w.id == worktree_id), None)
        if row is None:
            raise Denied(404, "no such worktree")
        base = ""
        try:
            repos = await self.clients["store"].invoke(store.REPO_LIST, timeout=2.0)
            repo = next((r for r in repos.repos if r.id == row.repo_id), None)
            base = (repo.worktree_base_ref or "") if repo is not None else ""
        except OrcaError:
            pass
        if not base:
            main = next((w for w in rows if w.repo_id == row.repo_id and w.is_main_worktree), None)
            base = main.branch.removeprefix("refs/heads/") if main and main.branch else "HEAD"
        return row.path, base


def _me(device: DeviceRecord) -> dict[str, object]:
    return {"deviceId": device.device_id, "name": device.name, "scopes": list(device.scopes)}


def _browser_name(agent: str) -> str:
    for name in ("Android", "iPhone", "iPad", "Linux", "Mac OS", "Windows"):
        if name in agent:
            return f"browser ({name})"
    return "browser"


async def _favicon(_request: Request) -> Response:
    return FileResponse(STATIC_DIR / "favicon.svg", media_type="image/svg+xml")


def build_app(web: WebApp) -> Guarded:
    from actors.web.sockets import board_socket, terminal_socket

    async def denied(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, Denied)
        return JSONResponse({"error": exc.reason}, status_code=exc.status)

    routes = [
        Route("/", web.index),
        Route("/favicon.ico", _favicon),  # (asked for by clients that skip the page's link)
        Route("/api/session", web.login, methods=["POST"]),
        Route("/api/logout", web.logout, methods=["POST"]),
        Route("/api/me", web.me),
        Route("/api/board", web.board),
        Route("/api/review", web.review),
        Route("/api/diff", web.diff),
        Route("/api/permissions/{request_id}", web.answer, methods=["POST"]),
        WebSocketRoute("/ws/board", lambda ws: board_socket(web, ws)),
        WebSocketRoute("/ws/term/{session_id:path}", lambda ws: terminal_socket(web, ws)),
        Mount("/static", StaticFiles(directory=STATIC_DIR)),
    ]
    app = Starlette(routes=routes, exception_handlers={Denied: denied})
    return Guarded(app, web.current_site)
