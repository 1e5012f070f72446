"""Binding agent sessions to panes from hook payloads (actors/hooks/session_bindings.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from actors.hooks.http_request import HookSubmission
from actors.hooks.pane_authority import PaneAuthority
from actors.hooks.session_bindings import SessionBindingTable, binding_from, may_bind
from orca.contracts.hooks import SessionBinding

PANE = "tab-1:3f1c2a9e-0000-4000-8000-000000000001"
TOKEN = hashlib.sha256(b"launch").hexdigest()


def submission(payload: dict[str, object], *, agent: str = "claude", token: str | None = TOKEN) -> HookSubmission:
    return HookSubmission(agent, PANE, "tab-1", "r::/w", token, payload)


def test_a_hook_payload_names_session_and_transcript() -> None:
    claude = binding_from(submission({"session_id": "s1", "transcript_path": "/h/.claude/p/s1.jsonl"}), 5)
    assert claude == SessionBinding(
        agent="claude", session_id="s1", pane_key=PANE, bound_at_ms=5,
        transcript_path="/h/.claude/p/s1.jsonl", tab_id="tab-1", worktree_id="r::/w",
    )  # fmt: skip
    codex_notify = binding_from(submission({"type": "agent-turn-complete", "thread-id": "t9"}, agent="codex"), 5)
    assert codex_notify is not None and (codex_notify.session_id, codex_notify.transcript_path) == ("t9", "")
    assert binding_from(submission({"hook_event_name": "Stop"}), 5) is None
    relative = binding_from(submission({"session_id": "s", "transcript_path": "rel/x.jsonl"}), 5)
    assert relative is not None and relative.transcript_path == ""


def test_only_a_hook_the_pane_accepts_binds() -> None:
    """A retired pane, or a token other than the pane's commitment, binds nothing."""
    authority = PaneAuthority()
    assert may_bind(authority, PANE, TOKEN)
    authority.commitments[PANE] = TOKEN
    assert may_bind(authority, PANE, TOKEN)
    assert not may_bind(authority, PANE, hashlib.sha256(b"other").hexdigest())
    assert not may_bind(authority, PANE, None)
    authority.fence(PANE, "retired")
    assert not may_bind(authority, PANE, TOKEN)
    assert not may_bind(PaneAuthority(), "not a pane key", TOKEN)


def test_a_binding_is_published_once_and_moves_with_its_pane(tmp_path: Path) -> None:
    table = SessionBindingTable(capacity=2)
    first = binding_from(submission({"session_id": "s1", "transcript_path": "/t/s1.jsonl"}), 1)
    assert first is not None and table.observe(first) == first
    assert table.observe(first) is None  # known: nothing to publish
    later = binding_from(submission({"session_id": "s1"}), 2)  # a hook without the path
    assert later is not None and table.observe(later) is None  # the path learnt earlier stays
    moved = SessionBinding(agent="claude", session_id="s1", pane_key="tab-2:" + PANE[6:], bound_at_ms=3, transcript_path="/t/s1.jsonl")
    assert table.observe(moved) == moved
    for n in range(3):
        table.observe(SessionBinding(agent="codex", session_id=f"x{n}", pane_key=PANE, bound_at_ms=4 + n))
    assert [b.session_id for b in table.bindings()] == ["x1", "x2"]  # bounded: the oldest went
    path = tmp_path / "session-bindings.json"
    path.write_bytes(table.encode())
    again = SessionBindingTable()
    assert again.load(path, now_ms=10) == 2 and again.bindings() == table.bindings()
    assert SessionBindingTable().load(path, now_ms=10 + 31 * 86_400_000) == 0  # too old
    path.write_bytes(b"{damaged")
    assert SessionBindingTable().load(path, now_ms=10) == 0


def test_a_status_mirror_following_every_hooks_event_keeps_its_rows() -> None:
    """A mirror of the rows that decodes every event of the contract (orca ui's, the
    tests' journeys) gets ``agentSession.bound`` too: it changes no row, and must not
    end the mirror (it raised AttributeError: the event has no paneKey)."""
    from orca.contracts import hooks
    from orca.wire.envelope import Event

    rows: dict[str, object] = {"k": object()}
    bound = hooks.SessionBound(binding=SessionBinding(agent="claude", session_id="s", pane_key=PANE, bound_at_ms=1))
    envelope = Event(1, "hooks", "e", 1, hooks.SESSION_BOUND.type, {})
    assert hooks.apply_to_mirror(rows, envelope, bound) is rows  # type: ignore[arg-type]
