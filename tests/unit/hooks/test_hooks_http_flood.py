"""The hook endpoint's connection budget over real sockets (issue 16 item 7).

A small cap makes the rules visible: slots are taken before accept, the oldest
connection that never showed the secret is evicted for a newcomer, and a connection
that did show it is kept.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
import trio

from actors.hooks.http import HookHttpServer
from actors.hooks.service import HooksService
from actors.hooks.status_table import AgentStatusTable

SECRET = "f" * 64
PANE = "tab-1:3f1c2a9e-0000-4000-8000-000000000001"
WT = "repo1::/src/wt-a"
CAP = 8


@dataclass
class Endpoint:
    server: HookHttpServer
    port: int


@pytest.fixture
async def endpoint() -> AsyncIterator[Endpoint]:
    table = AgentStatusTable()
    service = HooksService(table, lambda _: None, lambda: None)
    server = HookHttpServer(SECRET, service.ingest_hook, max_connections=CAP)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.run)
        yield Endpoint(server, port)
        nursery.cancel_scope.cancel()


def _request(*, close: bool, secret: str = SECRET) -> bytes:
    body = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "s"}).encode()
    return (
        f"POST /hook/claude HTTP/1.1\r\nHost: x\r\nX-Orca-Hook-Secret: {secret}\r\n"
        f"X-Orca-Pane-Key: {PANE}\r\nX-Orca-Worktree-Id: {WT}\r\n"
        + ("Connection: close\r\n" if close else "")
        + f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


async def _read_reply(stream: trio.SocketStream) -> bytes:
    """One response (our replies carry Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = await stream.receive_some(65536)
        assert chunk, data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    while len(body) < length:
        body += await stream.receive_some(65536)
    return head


async def _idle(port: int, count: int) -> list[trio.SocketStream]:
    return [await trio.open_tcp_stream("127.0.0.1", port) for _ in range(count)]


async def test_authenticated_hook_is_served_past_a_full_house_of_idle_sockets(
    endpoint: Endpoint,
) -> None:
    """Idle sockets beyond the cap wait in the backlog; the hook evicts the oldest one."""
    with trio.fail_after(10):
        idle = await _idle(endpoint.port, 4 * CAP)
        stream = await trio.open_tcp_stream("127.0.0.1", endpoint.port)
        async with stream:
            await stream.send_all(_request(close=True))
            assert (await _read_reply(stream)).startswith(b"HTTP/1.1 200 ")
        stats = endpoint.server.statistics()
        assert stats.open_connections <= CAP and stats.evicted >= 3 * CAP
        assert stats.accepted <= stats.evicted + CAP
        for s in idle:
            await s.aclose()


async def test_a_proven_connection_is_never_evicted(endpoint: Endpoint) -> None:
    """A kept-alive connection that showed the secret survives a flood of idle ones."""
    with trio.fail_after(10):
        proven = await trio.open_tcp_stream("127.0.0.1", endpoint.port)
        await proven.send_all(_request(close=False))
        assert (await _read_reply(proven)).startswith(b"HTTP/1.1 200 ")
        idle = await _idle(endpoint.port, 3 * CAP)
        # One more newcomer that does speak: by then every idle one was a candidate.
        last = await trio.open_tcp_stream("127.0.0.1", endpoint.port)
        await last.send_all(_request(close=True))
        assert (await _read_reply(last)).startswith(b"HTTP/1.1 200 ")
        await proven.send_all(_request(close=True))
        assert (await _read_reply(proven)).startswith(b"HTTP/1.1 200 ")
        assert endpoint.server.statistics().evicted >= 2 * CAP
        for s in [*idle, last, proven]:
            await s.aclose()


async def test_unproven_connection_is_closed_after_its_answer(endpoint: Endpoint) -> None:
    """A wrong secret gets its 403 and loses the connection (no slot is kept)."""
    with trio.fail_after(10):
        stream = await trio.open_tcp_stream("127.0.0.1", endpoint.port)
        async with stream:
            await stream.send_all(_request(close=False, secret="wrong"))
            head = await _read_reply(stream)
            assert head.startswith(b"HTTP/1.1 403 ") and b"connection: close" in head.lower()
            while await stream.receive_some(65536):
                pass  # EOF: the server closed it
