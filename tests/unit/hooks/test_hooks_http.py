"""The loopback hook endpoint over real sockets (issue 7: secret, sizes, timeouts)."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
import trio

from actors.hooks.http import HookHttpServer
from actors.hooks.http_request import MAX_BODY_BYTES
from actors.hooks.service import HooksService
from actors.hooks.status_table import AgentStatusTable
from orca.contracts import hooks

SECRET = "s3cret-" + "0" * 57
PANE = "tab-1:3f1c2a9e-0000-4000-8000-000000000001"
WT = "repo1::/src/wt-a"


@dataclass
class Harness:
    port: int
    table: AgentStatusTable
    published: list[hooks.StatusEventData] = field(default_factory=list)

    async def raw(self, data: bytes, *, read: bool = True) -> bytes:
        stream = await trio.open_tcp_stream("127.0.0.1", self.port)
        async with stream:
            await stream.send_all(data)
            if not read:
                return b""
            chunks = []
            while chunk := await stream.receive_some(65536):
                chunks.append(chunk)
            return b"".join(chunks)

    async def post(
        self,
        agent: str,
        body: bytes,
        *,
        secret: str = SECRET,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, object]]:
        all_headers = {
            "X-Orca-Hook-Secret": secret,
            "X-Orca-Pane-Key": PANE,
            "X-Orca-Worktree-Id": WT,
            **(headers or {}),
        }
        head = "".join(f"{k}: {v}\r\n" for k, v in all_headers.items())
        request = (
            f"POST /hook/{agent} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{head}"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        return _parse_response(await self.raw(request))


def _parse_response(raw: bytes) -> tuple[int, dict[str, object]]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(body) if body else {}


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    table = AgentStatusTable()
    published: list[hooks.StatusEventData] = []
    service = HooksService(table, published.append, lambda: None)
    server = HookHttpServer(SECRET, service.ingest_hook, request_timeout_s=0.5)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.run)
        yield Harness(port, table, published)
        nursery.cancel_scope.cancel()


def _claude(event: str, **extra: object) -> bytes:
    return json.dumps(
        {
            "session_id": "abc123",
            "transcript_path": "/tmp/t.jsonl",
            "cwd": "/src/wt-a",
            "hook_event_name": event,
            **extra,
        }
    ).encode()


async def test_wrong_secret_gets_403_and_no_row(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    """A wrong or missing secret is refused with 403 and writes nothing (issue 7); the
    log says so once (the second refusal of the kind within a minute is counted)."""
    with caplog.at_level(logging.INFO, logger="actors.hooks.refusals"), trio.fail_after(5):
        assert (await harness.post("claude", _claude("UserPromptSubmit"), secret="nope"))[0] == 403
        assert (await harness.post("claude", _claude("UserPromptSubmit"), secret=""))[0] == 403
    assert harness.table.rows() == [] and harness.published == []
    said = [r.getMessage() for r in caplog.records if r.name == "actors.hooks.refusals"]
    assert said == ["hook refused (403 bad_secret): POST '/hook/claude'"], said


async def test_claude_lifecycle_drives_the_row(harness: Harness) -> None:
    """Claude Code's documented events map to working/blocked/waiting/done and session end clears."""
    steps = [
        (_claude("SessionStart", source="startup"), "waiting"),
        (_claude("UserPromptSubmit", prompt="fix the bug"), "working"),
        (_claude("PreToolUse", tool_name="Bash", tool_input={"command": "ls"}), "working"),
        (_claude("PermissionRequest", tool_name="Bash", tool_input={"command": "rm x"}), "blocked"),
        (
            _claude("PostToolUse", tool_name="Bash", tool_input={}, tool_response={"ok": True}),
            "working",
        ),
        (
            _claude(
                "Notification",
                message="Claude needs your permission to use Bash",
                notification_type="permission_prompt",
            ),
            "blocked",
        ),
        (_claude("SubagentStop", stop_hook_active=False), "working"),
        (_claude("Stop", stop_hook_active=False), "done"),
        (
            _claude(
                "Notification",
                message="Claude is waiting for your input",
                notification_type="idle_prompt",
            ),
            "waiting",
        ),
    ]
    with trio.fail_after(5):
        for body, expected in steps:
            status, reply = await harness.post("claude", body)
            assert status == 200, reply
            row = harness.table.row(PANE)
            assert row is not None and row.state == expected and row.agent == "claude"
        assert (await harness.post("claude", _claude("SessionEnd", reason="exit")))[0] == 200
    assert harness.table.row(PANE) is None
    assert isinstance(harness.published[-1], hooks.StatusCleared)


async def test_codex_and_gemini_payloads_map_to_states(harness: Harness) -> None:
    """Codex and Gemini CLI payloads in their documented shapes drive the row."""
    codex = {
        "session_id": "c1",
        "turn_id": "t1",
        "cwd": "/src",
        "model": "gpt-5",
        "transcript_path": None,
        "permission_mode": "default",
    }
    gemini = {
        "session_id": "g1",
        "transcript_path": "/t",
        "cwd": "/src",
        "timestamp": "2026-01-01T00:00:00Z",
    }
    cases = [
        ("codex", {**codex, "hook_event_name": "UserPromptSubmit", "prompt": "go"}, "working"),
        (
            "codex",
            {**codex, "hook_event_name": "PermissionRequest", "tool_name": "Bash"},
            "blocked",
        ),
        ("codex", {**codex, "hook_event_name": "Stop", "stop_hook_active": False}, "done"),
        ("gemini", {**gemini, "hook_event_name": "BeforeAgent", "prompt": "go"}, "working"),
        (
            "gemini",
            {
                **gemini,
                "hook_event_name": "BeforeTool",
                "tool_name": "run_shell_command",
                "tool_input": {"command": "ls"},
            },
            "working",
        ),
        (
            "gemini",
            {
                **gemini,
                "hook_event_name": "Notification",
                "notification_type": "ToolPermission",
                "message": "Allow?",
            },
            "blocked",
        ),
        (
            "gemini",
            {**gemini, "hook_event_name": "AfterAgent", "prompt": "go", "prompt_response": "done"},
            "done",
        ),
        ("generic", {"state": "waiting"}, "waiting"),
    ]
    with trio.fail_after(5):
        for agent, payload, expected in cases:
            status, _ = await harness.post(agent, json.dumps(payload).encode())
            row = harness.table.row(PANE)
            assert status == 200 and row is not None and (row.agent, row.state) == (agent, expected)


async def test_unknown_event_changes_nothing(harness: Harness) -> None:
    """An event the table does not know is acknowledged and ignored."""
    with trio.fail_after(5):
        status, reply = await harness.post("claude", _claude("SomethingNew"))
    assert (status, reply) == (200, {"outcome": "ignored"}) and harness.table.rows() == []


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"not json at all", 400),
        (b'{"hook_event_name": "Stop"', 400),  # truncated
        (b"[1, 2, 3]", 400),
        (b"[" * 200 + b"]" * 200, 400),  # deeply nested
        (b"[" * 100_000, 400),  # nested past the interpreter's recursion limit
        (b'{"a":' * 70 + b"1" + b"}" * 70, 400),
        (b"\xff\xfe\x00garbage", 400),
    ],
)
async def test_malformed_bodies_are_refused_without_harm(
    harness: Harness, body: bytes, status: int
) -> None:
    """Non-JSON, truncated, non-object and deeply nested bodies get 400 and no row."""
    with trio.fail_after(5):
        got, _ = await harness.post("claude", body)
        assert got == status
        ok, _ = await harness.post("claude", _claude("UserPromptSubmit"))
    assert ok == 200


async def test_oversized_body_gets_413(harness: Harness) -> None:
    """A declared body above 1 MB is refused with 413 before it is read."""
    head = (
        f"POST /hook/claude HTTP/1.1\r\nHost: x\r\nX-Orca-Hook-Secret: {SECRET}\r\n"
        f"Content-Length: {MAX_BODY_BYTES + 1}\r\n\r\n"
    ).encode()
    with trio.fail_after(5):
        status, reply = _parse_response(await harness.raw(head + b"{" * 1000))
    assert (status, reply) == (413, {"error": "body_too_large"})


async def test_oversized_chunked_body_gets_413(harness: Harness) -> None:
    """A chunked body that grows past 1 MB is cut off with 413."""
    chunk = b"x" * 65536
    piece = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    head = (
        f"POST /hook/claude HTTP/1.1\r\nHost: x\r\nX-Orca-Hook-Secret: {SECRET}\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    ).encode()
    with trio.fail_after(5):
        status, _ = _parse_response(await harness.raw(head + piece * 17))
    assert status == 413


async def test_slow_body_times_out_with_408(harness: Harness) -> None:
    """A client that stalls mid-body gets 408 and the connection is closed (issue 7)."""
    head = (
        f"POST /hook/claude HTTP/1.1\r\nHost: x\r\nX-Orca-Hook-Secret: {SECRET}\r\n"
        f"X-Orca-Pane-Key: {PANE}\r\nContent-Length: 100\r\n\r\n{{"
    ).encode()
    with trio.fail_after(5):
        status, reply = _parse_response(await harness.raw(head))
    assert (status, reply) == (408, {"error": "request_timeout"})
    assert harness.table.rows() == []


async def test_slow_headers_time_out_with_408(harness: Harness) -> None:
    """A client that never finishes its headers is cut off at the request deadline."""
    with trio.fail_after(5):
        status, _ = _parse_response(await harness.raw(b"POST /hook/claude HTTP/1.1\r\nHo"))
    assert status == 408


async def test_garbage_request_line_gets_400(harness: Harness) -> None:
    """Bytes that are not HTTP get h11's 400 and the server keeps serving."""
    with trio.fail_after(5):
        status, _ = _parse_response(await harness.raw(b"\x00\x01 garbage\r\n\r\n"))
        assert status == 400
        assert (await harness.post("claude", _claude("Stop")))[0] == 200


async def test_unknown_agent_and_wrong_method(harness: Harness) -> None:
    """Only POST /hook/<known agent> is served."""
    with trio.fail_after(5):
        assert (await harness.post("vim", b"{}"))[0] == 404
        got = await harness.raw(
            b"GET /hook/claude HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        assert _parse_response(got)[0] == 405


async def test_launch_token_is_hashed_and_enforced(harness: Harness) -> None:
    """The server keeps only the token's SHA-256; a different token changes nothing: it
    waits (202) for ptyd to announce that launch, and expires if none does."""
    with trio.fail_after(5):
        good = {"X-Orca-Launch-Token": "tok-1"}
        assert (await harness.post("claude", _claude("UserPromptSubmit"), headers=good))[0] == 200
        bad = {"X-Orca-Launch-Token": "tok-2"}
        status, reply = await harness.post("claude", _claude("Stop"), headers=bad)
        assert (status, reply["outcome"]) == (202, "pending")
    assert harness.table.authority.commitments[PANE] == hashlib.sha256(b"tok-1").hexdigest()
    row = harness.table.row(PANE)
    assert row is not None and row.state == "working"


async def test_retired_pane_hook_is_rejected_with_409(harness: Harness) -> None:
    """A late hook for a retired pane is refused and creates no row."""
    harness.table.retire_pane(PANE)
    with trio.fail_after(5):
        status, reply = await harness.post("claude", _claude("Stop"))
    assert (status, reply) == (409, {"outcome": "rejected", "reason": "retired_pane"})
    assert harness.table.rows() == []


async def test_keep_alive_serves_many_requests_on_one_connection(harness: Harness) -> None:
    """A client may reuse its connection for several hooks."""
    body = _claude("UserPromptSubmit")
    one = (
        f"POST /hook/claude HTTP/1.1\r\nHost: x\r\nX-Orca-Hook-Secret: {SECRET}\r\n"
        f"X-Orca-Pane-Key: {PANE}\r\nX-Orca-Worktree-Id: {WT}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    last = one.replace(b"Host: x\r\n", b"Host: x\r\nConnection: close\r\n")
    with trio.fail_after(5):
        raw = await harness.raw(one * 3 + last)
    assert raw.count(b"HTTP/1.1 200") == 4


async def test_expect_continue_is_answered_before_the_body(harness: Harness) -> None:
    """A client that asks `Expect: 100-continue` gets 100 at once, then its answer."""
    body = _claude("Stop")
    head = (
        f"POST /hook/claude HTTP/1.1\r\nHost: x\r\nX-Orca-Hook-Secret: {SECRET}\r\n"
        f"X-Orca-Pane-Key: {PANE}\r\nX-Orca-Worktree-Id: {WT}\r\nExpect: 100-continue\r\n"
        f"Connection: close\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with trio.fail_after(5):
        stream = await trio.open_tcp_stream("127.0.0.1", harness.port)
        async with stream:
            await stream.send_all(head)
            interim = await stream.receive_some(65536)
            assert interim.startswith(b"HTTP/1.1 100 ")
            await stream.send_all(body)
            rest = b""
            while chunk := await stream.receive_some(65536):
                rest += chunk
    assert _parse_response(rest)[0] == 200
