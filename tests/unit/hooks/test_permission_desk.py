"""The verdict store: the first answer wins, once, whoever sends it (issue 27)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.hooks.http_request import HttpRejection
from actors.hooks.permission_desk import DeskFull, PermissionDesk, summarize_tool_input
from actors.hooks.permission_http import hold_seconds, hook_output, route_permission

PAYLOAD = {"tool_name": "Bash", "tool_input": {"command": "make deploy"}, "session_id": "s"}


def _desk(**kw: int) -> PermissionDesk:
    ids = (f"{n:016x}" for n in itertools.count(1))
    return PermissionDesk(new_id=lambda: next(ids), **kw)


def _open(desk: PermissionDesk, pane: str = "t:1", now: int = 0) -> str:
    request, _ = desk.open(
        pane_key=pane, worktree_id="r::/w", agent="claude", payload=PAYLOAD, now_ms=now, hold_ms=5000
    )
    return request.request_id


def test_first_answer_wins_and_later_ones_get_it_back() -> None:
    desk = _desk()
    rid = _open(desk)
    first = desk.answer(rid, "allow", "web:phone", "", 10)
    second = desk.answer(rid, "deny", "ui", "no", 11)
    assert first is not None and second is not None
    assert (first.outcome, first.settlement.outcome, first.settlement.by) == ("decided", "allow", "web:phone")
    assert second.outcome == "already_settled" and second.settlement == first.settlement
    assert second.events == () and desk.pending() == []


def test_an_answer_after_the_terminal_answered_is_already_settled() -> None:
    desk = _desk()
    rid = _open(desk, "t:1")
    other = _open(desk, "t:2")
    (settled,) = desk.settle_pane("t:1", "answered_elsewhere", "terminal", 5)
    assert settled.settlement.request_id == rid
    late = desk.answer(rid, "allow", "web", "", 6)
    assert late is not None and late.outcome == "already_settled"
    assert late.settlement.outcome == "answered_elsewhere"
    assert [r.request_id for r in desk.pending()] == [other]


def test_unknown_and_forgotten_requests_are_none() -> None:
    desk = _desk(max_settled=1)
    a, b = _open(desk), _open(desk)
    desk.answer(a, "allow", "x", "", 1)
    desk.answer(b, "allow", "x", "", 2)
    assert desk.answer(a, "allow", "x", "", 3) is None  # forgotten: beyond the bound
    assert desk.answer("0" * 16, "allow", "x", "", 3) is None


def test_pending_is_bounded() -> None:
    desk = _desk(max_pending=2)
    _open(desk)
    _open(desk)
    with pytest.raises(DeskFull):
        _open(desk)


@given(st.lists(st.tuples(st.sampled_from(["allow", "deny", "pane", "timeout"]), st.integers(0, 2))))
def test_every_request_settles_at_most_once(script: list[tuple[str, int]]) -> None:
    """Whatever the order of answers, pane settlements and timeouts, one settlement per
    request, and it never changes."""
    desk = _desk()
    ids = [_open(desk, f"t:{i}") for i in range(3)]
    first: dict[str, object] = {}
    for step, (what, which) in enumerate(script):
        rid = ids[which]
        if what == "pane":
            events = desk.settle_pane(f"t:{which}", "answered_elsewhere", "terminal", step)
        elif what == "timeout":
            ended = desk.settle(rid, "timeout", "timeout", "", step)
            events = [ended] if ended else []
        else:
            answer = desk.answer(rid, what, "web", "", step)  # type: ignore[arg-type]
            assert answer is not None
            events = list(answer.events)
        for event in events:
            assert event.settlement.request_id not in first
            first[event.settlement.request_id] = event.settlement
        if rid in first:
            assert desk.settlement(rid) == first[rid]


def test_summary_says_what_the_call_does_on_one_line() -> None:
    assert summarize_tool_input({"command": "rm -rf /\nls"}) == "rm -rf /\ufffdls"
    assert summarize_tool_input({"file_path": "/src/a.py", "content": "x"}) == "/src/a.py"
    assert summarize_tool_input({"x": 1}) == '{"x": 1}'
    assert summarize_tool_input(None) == ""
    assert len(summarize_tool_input({"command": "y" * 10_000})) == 300


def test_hook_output_is_the_agents_decision_or_nothing() -> None:
    desk = _desk()
    rid = _open(desk)
    answer = desk.answer(rid, "deny", "ui", "", 1)
    assert answer is not None
    assert hook_output(answer.settlement) == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": "denied by ui"},
        }
    }
    timed_out = desk.settle(_open(desk), "timeout", "timeout", "", 2)
    assert timed_out is not None and hook_output(timed_out.settlement) == {}
    assert hook_output(None) == {}


def test_hold_and_route_are_bounded() -> None:
    assert hold_seconds({"x-orca-hold-s": "115"}) == 115
    assert hold_seconds({"x-orca-hold-s": "1e9"}) == 3600
    assert hold_seconds({"x-orca-hold-s": "nan"}) == 60
    assert hold_seconds({"x-orca-hold-s": "-5"}) == 1
    assert hold_seconds({}) == 60
    assert route_permission("POST", "/permission/claude") == "claude"
    assert route_permission("GET", "/permission/claude") == HttpRejection(405, "method_not_allowed")
    assert route_permission("POST", "/permission/../hook") == HttpRejection(404, "unknown_route")


def test_a_status_mirror_ignores_permission_events() -> None:
    """hooks publishes permission events next to its status rows: every status mirror
    (``apply_to_mirror``) keeps its rows; the permission fold tracks pending ones."""
    from orca.contracts import hooks
    from orca.wire.envelope import Event

    desk = _desk()
    request, opened = desk.open(
        pane_key="t:1", worktree_id="w", agent="claude", payload=PAYLOAD, now_ms=0, hold_ms=1
    )
    envelope = Event(v=1, src="hooks", epoch="e", seq=1, type="permission.requested")
    assert hooks.apply_to_mirror({}, envelope, opened) == {}
    pending = hooks.apply_permissions({}, envelope, opened)
    assert list(pending) == [request.request_id]
    settled = desk.settle(request.request_id, "timeout", "timeout", "", 1)
    assert settled is not None
    assert hooks.apply_permissions(pending, envelope, settled) == {}


def test_a_held_ask_released_by_a_key_is_told_to_the_answer_watch_once() -> None:
    """Issue 40 item 8: keys typed while a request is held release it (answered in the
    terminal); the answer watch of that very answer learns which tool was asked (Codex
    then asks again in its own dialog); an answer from a face releases nothing."""
    from actors.hooks.permission_hold import PermissionHolds
    from actors.hooks.service import HooksService
    from actors.hooks.status_table import AgentStatusTable
    from orca.contracts import hooks

    table = AgentStatusTable()
    holds = PermissionHolds(_desk(), HooksService(table, lambda e: None, lambda: None), lambda e: None)
    pane = "tab-1:3f1c2a9e-0000-4000-8000-000000000001"
    row = hooks.AgentStatusRow(
        pane_key=pane, worktree_id="r::/w", agent="codex", state="working", source="hook",
        detail="prompt answered", updated_at_ms=1, state_since_ms=1, rev=7,
    )  # fmt: skip
    holds.desk.open(
        pane_key=pane, worktree_id="r::/w", agent="codex", payload=PAYLOAD, now_ms=0, hold_ms=5000
    )
    holds.observe(hooks.StatusSet(row=row))
    assert holds.desk.pending() == []
    assert holds.released_in_terminal(pane, 8) is None  # another answer's rev
    holds.desk.open(
        pane_key=pane, worktree_id="r::/w", agent="codex", payload=PAYLOAD, now_ms=0, hold_ms=5000
    )
    holds.observe(hooks.StatusSet(row=row))
    assert holds.released_in_terminal(pane, 7) == "Bash"
    assert holds.released_in_terminal(pane, 7) is None  # told once
    holds.observe(hooks.StatusSet(row=row))  # nothing held: nothing released
    assert holds.released_in_terminal(pane, 7) is None
