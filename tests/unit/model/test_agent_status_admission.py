"""Seed 03's admission rule and the terminal's fate in the shared projection (issue 12)."""

from __future__ import annotations

from typing import Any

from orca.model.agent_status import (
    AgentStatusRow,
    PaneFate,
    TerminalFacts,
    is_admitted,
    needs_user,
    project_worktrees,
)

NOW = 1_800_000_000_000
WT = "repo1::/src/wt-a"


def _row(pane: str, state: str = "working", **kw: object) -> AgentStatusRow:
    return AgentStatusRow(
        pane_key=pane,
        worktree_id=kw.pop("worktree_id", WT),  # type: ignore[arg-type]
        state=state,  # type: ignore[arg-type]
        source="hook",
        updated_at_ms=NOW,
        state_since_ms=NOW,
        **kw,  # type: ignore[arg-type]
    )


def _agents(worktree: dict[str, Any]) -> list[dict[str, Any]]:
    agents: list[dict[str, Any]] = worktree["agents"]
    return agents


def _facts(*panes: str, exited: dict[str, int | None] | None = None) -> TerminalFacts:
    return TerminalFacts(
        live_panes=frozenset(panes), live_handles=frozenset({"term_h"}), exited=exited or {}
    )


def test_hook_rows_need_a_live_pty_structured_rows_their_host() -> None:
    facts = _facts("t:a")
    assert is_admitted(_row("t:a"), facts)
    assert not is_admitted(_row("t:b"), facts)
    assert is_admitted(_row("t:c", terminal_handle="term_h"), facts)
    assert is_admitted(_row("t:d", structured_host="host-1"), facts)
    assert is_admitted(_row("t:b"), None), "without ptyd's facts nothing can be checked"


def test_a_row_without_a_pty_is_shown_as_its_terminals_fate_not_as_working() -> None:
    rows = [_row("t:a"), _row("t:b"), _row("t:c", "blocked")]
    (wt,) = project_worktrees(rows, NOW, _facts("t:a", exited={"t:c": 2}))
    by_pane = {a["paneKey"]: a for a in _agents(wt)}
    assert by_pane["t:a"]["displayState"] == "working"
    assert by_pane["t:b"]["displayState"] == "gone" and by_pane["t:b"]["terminal"] == {
        "state": "gone"
    }
    assert by_pane["t:c"]["terminal"] == {"state": "exited", "exitCode": 2}
    summary: dict[str, Any] = wt["summary"]  # type: ignore[assignment]
    assert summary["counts"] == {"working": 1} and summary["state"] == "working"


def test_a_pty_exit_is_listed_where_the_row_was_until_a_new_row() -> None:
    fate = PaneFate(
        pane_key="t:x",
        worktree_id=WT,
        agent="codex",
        terminal_handle="term_x",
        exit_code=137,
        ended_at_ms=NOW - 60_000,
    )
    (wt,) = project_worktrees([], NOW, _facts(), [fate])
    (agent,) = _agents(wt)
    assert agent["terminal"] == {"state": "exited", "exitCode": 137, "endedAtMs": NOW - 60_000}
    assert agent["ageMs"] == 60_000 and agent["agent"] == "codex"
    (wt,) = project_worktrees([_row("t:x")], NOW, _facts("t:x"), [fate])
    assert [a["displayState"] for a in _agents(wt)] == ["working"]


def test_needs_me_is_blocked_or_an_unread_result() -> None:
    rows = [
        _row("t:1", "blocked"),
        _row("t:2", "done", unread=True),
        _row("t:3", "done"),
        _row("t:4", "working"),
    ]
    (wt,) = project_worktrees(rows, NOW, _facts("t:1", "t:2", "t:3", "t:4"))
    assert [a["paneKey"] for a in _agents(wt) if needs_user(a)] == ["t:1", "t:2"]
