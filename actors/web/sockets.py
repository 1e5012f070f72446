"""The dashboard's WebSockets: the live board and one terminal per socket (thin).

``/ws/board``: the board as JSON text, once at connect and again on every change
(:class:`actors.web.source.BoardSource`).

``/ws/term/<sessionId>?since=<offset>``: one ptyd session (:mod:`actors.web.terminal`).
Down, binary frames: one byte kind (0 output, 1 screen: clear, then draw), eight bytes
of the stream offset after the piece (big-endian; the page sends it back as ``since``
when it reconnects), then the bytes. Down, text frames: ``{"t": "size", cols, rows}``
before a screen, ``{"t": "exit", code}``, ``{"t": "error", message}``,
``{"t": "mode", type}`` (whether this device may type). Up, text frames:
``{"t": "in", "d": "<keys>"}`` and ``{"t": "resize", cols, rows}``, both only from a
device with the ``type`` scope (from any other they are dropped). ptyd announces no
resize, so a resize also has the board read again soon: the other pages showing the
terminal learn its size from the board (docs/web.md, "who sets its size").

Every socket re-checks its device each time it sends or receives: a device revoked
while its page is open loses the socket at once (close code 4401).
"""

from __future__ import annotations

import json
import logging
import struct
from typing import TYPE_CHECKING

import trio
from starlette.websockets import WebSocket, WebSocketDisconnect

from actors.web.guard import credential
from actors.web.terminal import QUEUE_PIECES, Piece, TerminalBridge

if TYPE_CHECKING:
    from actors.web.app import WebApp
    from orca.web_devices import DeviceRecord

log = logging.getLogger(__name__)

REVOKED_CODE = 4401
NOT_SIGNED_IN_CODE = 4401
# Open terminal sockets across every browser: each is a thread and a ptyd attachment.
MAX_TERMINALS = 32
MAX_INPUT_CHARS = 64 * 1024
_OFFSET = struct.Struct(">BQ")
_running_terminals = 0


def _authenticate(web: WebApp, ws: WebSocket) -> DeviceRecord | None:
    return web.access.authenticate(credential(web.current_site(), ws.headers.get("cookie")))


async def board_socket(web: WebApp, ws: WebSocket) -> None:
    device = _authenticate(web, ws)
    if device is None or "view" not in device.scopes:
        await ws.close(code=1008)
        return
    await ws.accept()
    seen = -1
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_drain_until_closed, ws, nursery.cancel_scope)
            while True:
                if _authenticate(web, ws) is None:
                    await ws.close(code=REVOKED_CODE)
                    nursery.cancel_scope.cancel()
                    return
                if web.source.version != seen:
                    seen = web.source.version
                    await ws.send_text(json.dumps({**web.source.board, "version": seen}))
                with trio.move_on_after(5.0):  # also re-checks the device now and then
                    await web.source.wait_changed(seen)
    except (WebSocketDisconnect, trio.BrokenResourceError, trio.ClosedResourceError):
        return


async def _drain_until_closed(ws: WebSocket, scope: trio.CancelScope) -> None:
    try:
        while True:
            message = await ws.receive()
            if message["type"] == "websocket.disconnect":
                break
    finally:
        scope.cancel()


async def terminal_socket(web: WebApp, ws: WebSocket) -> None:
    global _running_terminals
    device = _authenticate(web, ws)
    if device is None or "view" not in device.scopes:
        await ws.close(code=1008)
        return
    if _running_terminals >= MAX_TERMINALS:
        await ws.close(code=1013)  # try again later
        return
    session_id = ws.path_params["session_id"]
    since_text = ws.query_params.get("since", "")
    since = int(since_text) if since_text.isdigit() else None
    can_type = "type" in device.scopes
    await ws.accept()
    _running_terminals += 1
    bridge = TerminalBridge(session_id, web.paths, since)
    send, receive = trio.open_memory_channel[Piece](QUEUE_PIECES)
    try:
        await ws.send_text(json.dumps({"t": "mode", "type": can_type}))
        async with trio.open_nursery() as nursery:

            async def pump_bridge() -> None:
                async with send:  # closed when the session's output ended: the loop ends
                    await bridge.run(send)

            nursery.start_soon(pump_bridge)
            nursery.start_soon(_keys, web, ws, bridge, can_type, nursery.cancel_scope)
            nursery.start_soon(_close_when_revoked, web, ws, nursery.cancel_scope)
            async for piece in receive:
                if _authenticate(web, ws) is None:
                    await ws.close(code=REVOKED_CODE)
                    break
                await _send_piece(ws, piece)
            nursery.cancel_scope.cancel()
        await ws.close()
    except (WebSocketDisconnect, trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    finally:
        _running_terminals -= 1


async def _close_when_revoked(web: WebApp, ws: WebSocket, scope: trio.CancelScope) -> None:
    """An idle terminal's socket too: a revocation wakes every socket (``source.poke``),
    and this one closes at once if its device was the one revoked (issue 33: it stayed
    open while no output or key came)."""
    seen = web.source.version
    while True:
        seen = await web.source.wait_changed(seen)
        if _authenticate(web, ws) is None:
            try:
                await ws.close(code=REVOKED_CODE)
            finally:
                scope.cancel()
            return


async def _send_piece(ws: WebSocket, piece: Piece) -> None:
    if piece.kind in ("output", "screen"):
        if piece.kind == "screen":
            await ws.send_text(json.dumps({"t": "size", "cols": piece.cols, "rows": piece.rows}))
        kind = 1 if piece.kind == "screen" else 0
        await ws.send_bytes(_OFFSET.pack(kind, piece.offset) + piece.data)
    elif piece.kind == "exit":
        await ws.send_text(json.dumps({"t": "exit", "code": piece.exit_code}))
    else:
        await ws.send_text(json.dumps({"t": "error", "message": piece.message}))


async def _keys(
    web: WebApp, ws: WebSocket, bridge: TerminalBridge, can_type: bool, scope: trio.CancelScope
) -> None:
    """What the page sends: keys and sizes (from a typing device), until it closes."""
    try:
        while True:
            message = await ws.receive()
            if message["type"] == "websocket.disconnect":
                return
            text = message.get("text")
            if not can_type or not isinstance(text, str) or len(text) > MAX_INPUT_CHARS:
                continue
            device = _authenticate(web, ws)
            if device is None or "type" not in device.scopes:
                continue
            try:
                parsed = json.loads(text)
            except ValueError:
                continue
            if not isinstance(parsed, dict):
                continue
            if parsed.get("t") == "in" and isinstance(parsed.get("d"), str):
                if not bridge.write(parsed["d"].encode("utf-8", "replace")):
                    await ws.send_text(
                        json.dumps({"t": "error", "message": "too much input waiting"})
                    )
            elif parsed.get("t") == "resize":
                cols, rows = parsed.get("cols"), parsed.get("rows")
                if (
                    isinstance(cols, int)
                    and isinstance(rows, int)
                    and 2 <= cols <= 500
                    and 2 <= rows <= 300
                ):
                    bridge.resize(cols, rows)
                    # Other pages showing this terminal follow the new size from the
                    # board (ptyd announces no resize): read it soon, not in REFRESH_S.
                    web.source.mark_stale()
    finally:
        scope.cancel()
