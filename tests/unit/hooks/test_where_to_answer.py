"""A blocked agent whose ask Orca cannot hold says where to answer it (issue 40 item 8):
Gemini CLI's hooks hold nothing, so its blocked row tells every face to answer in its
terminal; Claude Code's and Codex's asks are held, answerable from any face."""

from __future__ import annotations

from actors.hooks.agent_events import ANSWER_IN_TERMINAL, HELD_ASKS, MAX_DETAIL_CHARS, decide
from orca.integrations import INTEGRATIONS


def test_the_agents_whose_asks_are_held_are_those_whose_integration_holds_them() -> None:
    held = {name for name, spec in INTEGRATIONS.items() if "PermissionRequest" in spec.held_events}
    assert held == set(HELD_ASKS)


def test_geminis_ask_says_to_answer_in_its_terminal() -> None:
    decision = decide(
        "gemini",
        {"hook_event_name": "Notification", "notification_type": "ToolPermission",
         "message": "Action required: run touch x"},
    )  # fmt: skip
    assert decision.action == "blocked"
    assert decision.detail == f"{ANSWER_IN_TERMINAL}: Action required: run touch x"


def test_a_script_agent_stating_blocked_is_told_the_same_and_the_detail_stays_bounded() -> None:
    decision = decide("script", {"state": "blocked", "detail": "x" * 500})
    assert decision.detail.startswith(ANSWER_IN_TERMINAL)
    assert len(decision.detail) == MAX_DETAIL_CHARS


def test_a_held_ask_keeps_its_own_detail() -> None:
    for agent, payload in (
        ("claude", {"hook_event_name": "PermissionRequest", "tool_name": "Bash"}),
        ("claude", {"hook_event_name": "Notification", "notification_type": "permission_prompt",
                    "message": "Claude needs your permission to use Bash"}),
        ("codex", {"hook_event_name": "PermissionRequest", "tool_name": "Bash"}),
    ):  # fmt: skip
        decision = decide(agent, payload)
        assert decision.action == "blocked", (agent, payload)
        assert not decision.detail.startswith(ANSWER_IN_TERMINAL), decision


def test_other_states_are_untouched() -> None:
    assert decide("gemini", {"hook_event_name": "BeforeTool", "tool_name": "run"}).detail == "run"
