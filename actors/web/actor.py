"""The ``web`` actor: the dashboard's HTTP(S) server and its few ops (thin, trio).

Start-up: read web.toml and refuse an unsafe bind (``orca.web_config``: loopback only
unless a token and TLS are set), take the device list's writer lock and load it, bind
the listening socket here (so the port is known, and a taken one is a clear error,
before any request can arrive), start following the other actors (the board), then
serve with hypercorn's trio worker. Stop: hypercorn's graceful shutdown (bounded), the
device list saved.

It is a client like ``orca ui`` (docs/architecture.md §1): it writes no file but its device
list, and every change it makes is a request to the actor that owns the thing. Run by
orcad when enabled (``[enable] web = true``), or in the foreground by ``orca web``.
"""

from __future__ import annotations

import logging
import socket
from functools import partial

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from actors.web.access import Access
from actors.web.app import WebApp, build_app
from actors.web.guard import site_for
from actors.web.source import BoardSource, wall_ms
from actors.web.ws_bound import install as bound_websocket_messages
from orca.actor import ActorContext
from orca.contracts import web
from orca.contracts.base import NoArgs
from orca.web_config import WebConfig, cannot_listen, load_web_config
from orca.web_devices import DevicesFile
from orca.wire.errors import BadRequest, NotFound

log = logging.getLogger(__name__)

# Open sockets (a terminal, the board) are given this long to finish on a stop.
GRACEFUL_STOP_S = 1.0
MAX_WS_MESSAGE_BYTES = 1 << 20


def _listen(config: WebConfig) -> socket.socket:
    family = socket.AF_INET6 if ":" in config.bind else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((config.bind, config.port))
    except OSError as exc:
        sock.close()
        raise SystemExit(f"web: {cannot_listen(config, exc.strerror or str(exc))}") from None
    sock.listen(128)
    # hypercorn adopts the descriptor (fd://): the file description's O_NONBLOCK is what
    # its trio socket runs with, and a blocking accept would stall the whole actor.
    sock.setblocking(False)
    return sock


def _hypercorn_config(config: WebConfig, sock: socket.socket) -> Config:
    hc = Config()
    # hypercorn adopts the descriptor itself (``socket(fileno=N)``): ours lets go of it,
    # or its collection would close a descriptor number that is then reused.
    hc.bind = [f"fd://{sock.detach()}"]
    if config.tls:
        hc.certfile, hc.keyfile = config.tls_certfile, config.tls_keyfile
    hc.include_server_header = False
    hc.graceful_timeout = GRACEFUL_STOP_S
    hc.websocket_max_message_size = MAX_WS_MESSAGE_BYTES
    bound_websocket_messages()  # and kept after the close (actors/web/ws_bound.py)
    hc.accesslog = None  # requests are not logged (a pairing code rides only in fragments)
    hc.errorlog = logging.getLogger("hypercorn.error")  # the actor's log, once, its format
    hc.keep_alive_timeout = 30
    return hc


class WebActor:
    def __init__(self, ctx: ActorContext, config: WebConfig) -> None:
        self.ctx = ctx
        self.config = config
        self.access = Access(DevicesFile(ctx.paths.data_dir), config.token, wall_ms)
        self.source = BoardSource(ctx)
        self.port = config.port
        self.stopping = trio.Event()
        self.app = WebApp(
            self.access,
            self.source,
            {name: ctx.connect(name) for name in ("hooks", "store")},
            ctx.paths,
        )

    @property
    def url(self) -> str:
        host = self.config.hosts[0] if self.config.hosts else self.config.url_host()
        return f"{self.config.scheme}://{host}:{self.port}/"

    # ops --------------------------------------------------------------------------------
    async def status(self, _: NoArgs) -> web.WebStatus:
        return web.WebStatus(
            url=self.url,
            bind=self.config.bind,
            port=self.port,
            tls=self.config.tls,
            devices=len(self.access.devices()),
            pending_pairings=self.access.pending_pairings,
        )

    async def pair(self, args: web.PairArgs) -> web.Pairing:
        if not args.name.strip():
            raise BadRequest("a device needs a name")
        code, expires = self.access.pair(args.name.strip(), tuple(args.scopes), args.ttl_s)
        scopes = [s for s in web.SCOPES if s in args.scopes]
        return web.Pairing(
            code=code, url=f"{self.url}#pair={code}", expires_at_ms=expires, scopes=scopes
        )

    async def devices(self, _: NoArgs) -> web.DeviceList:
        return web.DeviceList(devices=[d.to_wire() for d in self.access.devices()])

    async def revoke(self, args: web.RevokeArgs) -> web.Revoked:
        if not self.access.revoke(args.device_id):
            raise NotFound(f"no device {args.device_id!r}")
        self.source.poke()  # its open sockets close now
        return web.Revoked(revoked=True)

    async def stop(self) -> None:
        self.stopping.set()


async def setup(ctx: ActorContext) -> None:
    config = load_web_config(ctx.paths.config_dir)  # WebConfigError: the actor does not start
    actor = WebActor(ctx, config)
    actor.access.load()
    sock = _listen(config)
    actor.port = sock.getsockname()[1]
    actor.app.site = site_for(config, actor.port)
    served = _hypercorn_config(config, sock)
    await ctx.nursery.start(actor.source.run)
    app = build_app(actor.app)
    await ctx.nursery.start(
        partial(serve, app, served, shutdown_trigger=actor.stopping.wait)  # type: ignore[arg-type]
    )
    ctx.rpc.register(web.STATUS, actor.status)
    ctx.rpc.register(web.PAIR, actor.pair)
    ctx.rpc.register(web.DEVICES, actor.devices)
    ctx.rpc.register(web.REVOKE, actor.revoke)
    ctx.on_stop(actor.stop)

    async def close_access() -> None:
        actor.access.close()

    ctx.on_stop(close_access)
    log.info("web dashboard on %s (%s)", actor.url, "TLS" if config.tls else "loopback, plain HTTP")
