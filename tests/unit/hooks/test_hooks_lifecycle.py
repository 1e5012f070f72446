"""Seed 03 lifecycle rules in the agent-status table (issue 12): exit, relaunch, turn
ends that must not reopen, answered prompts, unread, strict hydrate."""

from __future__ import annotations

from actors.hooks.agent_events import decide
from actors.hooks.http_request import HookSubmission
from actors.hooks.ingest import event_from_hook
from actors.hooks.status_table import AgentStatusTable, StatusEvent
from orca.contracts import hooks

PANE = "tab-1:3f1c2a9e-0000-4000-8000-000000000001"
WT = "repo1::/src/wt-a"
T0 = 1_800_000_000_000


def _ev(state: str | None = "working", **kw: object) -> StatusEvent:
    kw.setdefault("worktree_id", WT)
    kw.setdefault("source", "hook")
    return StatusEvent(pane_key=PANE, state=state, **kw)  # type: ignore[arg-type]


def _hook(agent: str, payload: dict[str, object]) -> StatusEvent:
    sub = HookSubmission(
        agent=agent,
        pane_key=PANE,
        tab_id="tab-1",
        worktree_id=WT,
        launch_token_sha256=None,
        payload=payload,
    )
    event = event_from_hook(sub)
    assert event is not None, payload
    return event


def test_pty_exit_removes_the_row_with_one_clear_and_keeps_the_fate() -> None:
    table = AgentStatusTable()
    table.replace_agent(PANE, "term_a")
    table.apply_normalized_status(_ev("working", agent="claude"), T0)
    fx = table.pty_exited(PANE, "term_a", 1, T0 + 5)
    assert table.row(PANE) is None
    assert fx.events == (
        hooks.StatusCleared(pane_key=PANE, worktree_id=WT, reason="pty_exited", exit_code=1),
    )
    (fate,) = table.fates()
    assert (fate.pane_key, fate.exit_code, fate.agent, fate.worktree_id) == (PANE, 1, "claude", WT)
    assert fate.ended_at_ms == T0 + 5


def test_a_hooks_row_names_the_terminal_ptyd_launched_in_its_pane() -> None:
    """Issue 32: an HTTP hook carries no terminal handle; the row has the pane's
    current one (``terminalHandle`` was null in ``worktree ps --json``), and a relaunch's
    row the new one."""
    table = AgentStatusTable()
    table.replace_agent(PANE, "term_a")
    table.apply_normalized_status(_hook("claude", {"hook_event_name": "UserPromptSubmit"}), T0)
    row = table.row(PANE)
    assert row is not None and row.terminal_handle == "term_a"
    table.replace_agent(PANE, "term_b")
    table.apply_normalized_status(_hook("claude", {"hook_event_name": "UserPromptSubmit"}), T0 + 1)
    row = table.row(PANE)
    assert row is not None and row.terminal_handle == "term_b"


def test_exit_of_an_older_terminal_in_a_relaunched_pane_removes_nothing() -> None:
    table = AgentStatusTable()
    table.replace_agent(PANE, "term_old")
    table.replace_agent(PANE, "term_new")
    table.apply_normalized_status(_ev("working"), T0)
    fx = table.pty_exited(PANE, "term_old", 0, T0 + 1)
    assert fx.outcome == "unchanged" and fx.reason == "stale_terminal"
    assert table.row(PANE) is not None and table.fates() == []


def test_a_new_launch_replaces_the_previous_agents_row() -> None:
    table = AgentStatusTable()
    table.apply_normalized_status(_ev("blocked", agent="codex"), T0)
    table.restart_pane(PANE, None, WT)
    fx = table.replace_agent(PANE, "term_b")
    assert fx.events == (hooks.StatusCleared(pane_key=PANE, worktree_id=WT, reason="replaced"),)
    assert table.row(PANE) is None


def test_a_new_row_supersedes_the_panes_fate() -> None:
    table = AgentStatusTable()
    table.apply_normalized_status(_ev("working"), T0)
    table.pty_exited(PANE, "term_a", 0, T0 + 1)
    table.apply_normalized_status(_ev("working"), T0 + 2)
    assert table.fates() == []


def test_late_subagent_stop_never_reopens_a_finished_turn() -> None:
    table = AgentStatusTable()
    table.apply_normalized_status(_hook("claude", {"hook_event_name": "UserPromptSubmit"}), T0)
    table.apply_normalized_status(_hook("claude", {"hook_event_name": "Stop"}), T0 + 1)
    fx = table.apply_normalized_status(_hook("claude", {"hook_event_name": "SubagentStop"}), T0 + 2)
    assert fx.outcome == "unchanged" and fx.reason == "turn_finished"
    row = table.row(PANE)
    assert row is not None and row.state == "done"


def test_subagent_stop_inside_a_turn_keeps_it_working() -> None:
    table = AgentStatusTable()
    table.apply_normalized_status(_hook("claude", {"hook_event_name": "PermissionRequest"}), T0)
    fx = table.apply_normalized_status(_hook("claude", {"hook_event_name": "SubagentStop"}), T0 + 1)
    assert fx.outcome == "applied"
    row = table.row(PANE)
    assert row is not None and row.state == "working"


def test_input_into_a_blocked_pane_answers_the_prompt_at_once() -> None:
    table = AgentStatusTable()
    table.apply_normalized_status(_hook("claude", {"hook_event_name": "PermissionRequest"}), T0)
    fx = table.pane_input(PANE, T0 + 1)
    row = table.row(PANE)
    assert fx.outcome == "applied" and row is not None
    assert (row.state, row.detail, row.unread) == ("working", "prompt answered", False)


def test_input_into_a_working_or_done_pane_changes_nothing() -> None:
    table = AgentStatusTable()
    table.apply_normalized_status(_ev("done"), T0)
    assert table.pane_input(PANE, T0 + 1).outcome == "unchanged"
    assert table.pane_input("tab-2:x", T0 + 1).outcome == "unchanged"


def test_done_and_blocked_are_unread_until_acknowledged() -> None:
    table = AgentStatusTable()
    table.apply_normalized_status(_ev("working"), T0)
    assert table.row(PANE).unread is False  # type: ignore[union-attr]
    table.apply_normalized_status(_ev("done"), T0 + 1)
    assert table.row(PANE).unread is True  # type: ignore[union-attr]
    # a refresh of the same state keeps it unread; an ack clears it, once
    table.apply_normalized_status(_ev("done"), T0 + 2)
    assert table.row(PANE).unread is True  # type: ignore[union-attr]
    fx = table.ack(PANE)
    assert len(fx.events) == 1 and table.row(PANE).unread is False  # type: ignore[union-attr]
    assert table.ack(None).outcome == "unchanged"
    # the same state refreshed after the ack stays read; a new done is unread again
    table.apply_normalized_status(_ev("done"), T0 + 3)
    assert table.row(PANE).unread is False  # type: ignore[union-attr]
    table.apply_normalized_status(_ev("working"), T0 + 4)
    table.apply_normalized_status(_ev("done"), T0 + 5)
    assert table.row(PANE).unread is True  # type: ignore[union-attr]


def test_strict_hydrate_drops_rows_of_unknown_worktrees() -> None:
    table = AgentStatusTable()
    table.apply_normalized_status(_ev("working"), T0)
    other = "tab-2:3f1c2a9e-0000-4000-8000-000000000002"
    table.apply_normalized_status(
        StatusEvent(pane_key=other, state="done", source="hook", worktree_id="repo1::/gone"), T0
    )
    fx = table.drop_worktree("repo1::/gone", "unknown_worktree")
    assert [e.pane_key for e in fx.events] == [other]  # type: ignore[union-attr]
    assert table.row(PANE) is not None and table.row(other) is None


def test_a_closed_pane_or_a_plain_shell_leaves_no_fate() -> None:
    table = AgentStatusTable()
    assert table.pty_exited(PANE, "term_a", 0, T0).outcome == "unchanged"
    table.apply_normalized_status(_ev("working"), T0)
    table.retire_pane(PANE, None, T0 + 1)
    table.pty_exited(PANE, "term_a", 0, T0 + 2)
    assert table.fates() == []


def test_documented_turn_endings_map_to_the_right_light() -> None:
    """Claude StopFailure / PostToolUseFailure / PermissionDenied, Codex legacy notify."""
    assert decide("claude", {"hook_event_name": "StopFailure"}).action == "done"
    assert decide("claude", {"hook_event_name": "PostToolUseFailure"}).action == "working"
    assert decide("claude", {"hook_event_name": "PermissionDenied"}).action == "working"
    notify = {"type": "agent-turn-complete", "thread-id": "t-1", "turn-id": "u-1"}
    decision = decide("codex", notify)
    assert (decision.action, decision.session_id) == ("done", "t-1")
    assert decide("gemini", {"hook_event_name": "AfterAgent"}).action == "done"


def test_a_relaunchs_own_first_hook_that_beat_its_restart_is_kept() -> None:
    """HTTP and ptyd's queue race: the new launch's row (its token) is not 'replaced'."""
    table = AgentStatusTable()
    token = "a" * 64
    table.apply_normalized_status(_ev("waiting", launch_token_sha256=token), T0)
    kept = table.replace_agent(PANE, "term_new", token)
    assert (kept.outcome, kept.reason) == ("applied", "written_by_this_launch")
    row = table.row(PANE)
    assert row is not None and row.terminal_handle == "term_new"  # (its hook named none)
    assert [e.row.terminal_handle for e in kept.events if isinstance(e, hooks.StatusSet)] == [
        "term_new"
    ]
    assert table.replace_agent(PANE, "term_new", token).outcome == "unchanged"
    assert table.replace_agent(PANE, "term_newer", "b" * 64).events
    assert table.row(PANE) is None


def test_an_answered_prompt_settles_as_waiting_only_while_nothing_newer_came() -> None:
    """Issue 40 item 4: pane_idle turns the answer's working row waiting; a hook that
    came after the answer (PostToolUse: it was approved) wins over the terminal's view."""
    table = AgentStatusTable()
    table.apply_normalized_status(_hook("claude", {"hook_event_name": "PermissionRequest"}), T0)
    table.pane_input(PANE, T0 + 1)
    answered = table.row(PANE)
    assert answered is not None and table.still_answered(PANE, answered.rev)
    assert table.pane_idle(PANE, answered.rev, "idle", T0 + 2).outcome == "applied"
    row = table.row(PANE)
    assert row is not None and (row.state, row.detail) == ("waiting", "idle")
    assert not table.still_answered(PANE, answered.rev)

    table.apply_normalized_status(_hook("claude", {"hook_event_name": "PermissionRequest"}), T0 + 3)
    table.pane_input(PANE, T0 + 4)
    again = table.row(PANE)
    assert again is not None
    table.apply_normalized_status(_hook("claude", {"hook_event_name": "PostToolUse"}), T0 + 5)
    assert not table.still_answered(PANE, again.rev)
    assert table.pane_idle(PANE, again.rev, "idle", T0 + 6).outcome == "unchanged"
    row = table.row(PANE)
    assert row is not None and row.state == "working"


def test_a_lost_answer_blocks_again_only_while_nothing_newer_came() -> None:
    """Issue 40 item 8: pane_asking turns the answer's working row blocked again (Codex
    draws its dialog after its hook returned); a hook that came first wins."""
    table = AgentStatusTable()
    table.apply_normalized_status(_hook("codex", {"hook_event_name": "PermissionRequest"}), T0)
    table.pane_input(PANE, T0 + 1)
    answered = table.row(PANE)
    assert answered is not None
    assert table.pane_asking(PANE, answered.rev, "answer in its terminal: Bash", T0 + 2).events
    row = table.row(PANE)
    assert row is not None
    assert (row.state, row.detail, row.unread) == ("blocked", "answer in its terminal: Bash", False)
    table.pane_input(PANE, T0 + 3)  # Enter in its dialog
    again = table.row(PANE)
    assert again is not None and again.state == "working"
    table.apply_normalized_status(_hook("codex", {"hook_event_name": "PostToolUse"}), T0 + 4)
    assert table.pane_asking(PANE, again.rev, "x", T0 + 5).outcome == "unchanged"


def test_codexs_legacy_notify_never_ends_a_turn_blocked_on_a_permission() -> None:
    """Issue 40 item 8: Codex's legacy notify fires for its title thread on a session's
    first turn: the row stays blocked (its held request stays answerable); Codex's Stop
    hook, or the notify once nothing is asked, ends the turn."""
    table = AgentStatusTable()
    table.apply_normalized_status(_hook("codex", {"hook_event_name": "PermissionRequest"}), T0)
    notify = _hook("codex", {"type": "agent-turn-complete", "thread-id": "t"})
    assert table.apply_normalized_status(notify, T0 + 1).outcome == "unchanged"
    row = table.row(PANE)
    assert row is not None and row.state == "blocked"
    table.apply_normalized_status(_hook("codex", {"hook_event_name": "PostToolUse"}), T0 + 2)
    assert table.apply_normalized_status(notify, T0 + 3).outcome == "applied"
    row = table.row(PANE)
    assert row is not None and row.state == "done"
