"""The orchestrator's pure decisions: variants, names, steps, states, recipients."""

from __future__ import annotations

import pytest

from actors.orch import core
from actors.orch.core import Step
from orca.contracts.orch import AgentCount
from orca.model.agent_status import AgentStatusRow
from orca.model.panes import parse_pane_key
from orca.wire.errors import BadRequest, Conflict


def row(state: str, since: int = 100) -> AgentStatusRow:
    return AgentStatusRow(
        pane_key="t:x", worktree_id="r::/w", state=state, source="hook",  # type: ignore[arg-type]
        updated_at_ms=since, state_since_ms=since,
    )  # fmt: skip


def test_agents_spec_parses_counts_and_plain_names() -> None:
    """``claude:2,codex`` is two claudes and one codex; bad counts are bad requests."""
    assert core.parse_agents_spec("claude:2,codex") == [
        AgentCount(agent="claude", count=2),
        AgentCount(agent="codex", count=1),
    ]
    for bad in ("claude:x", ",", "claude:2,"):
        with pytest.raises(BadRequest):
            core.parse_agents_spec(bad)


def test_variants_are_numbered_per_agent() -> None:
    """Each agent's instances are numbered from 1, in the order asked."""
    plan = core.plan_variants(
        [AgentCount(agent="claude", count=2), AgentCount(agent="codex", count=1)]
    )
    assert [(v.variant, v.agent, v.ordinal) for v in plan] == [
        ("claude-1", "claude", 0),
        ("claude-2", "claude", 1),
        ("codex-1", "codex", 2),
    ]
    with pytest.raises(BadRequest, match="unknown agent"):
        core.plan_variants([AgentCount(agent="vim", count=1)])
    with pytest.raises(BadRequest, match="at most"):
        core.plan_variants([AgentCount(agent="claude", count=200)] * 2)


def test_worktree_names_are_safe_and_carry_the_run_id() -> None:
    """A name is reduced to ref-safe characters and always names its run."""
    assert (
        core.worktree_name("Fix the login!", "r1a2b", "claude-1") == "Fix-the-login-r1a2b-claude-1"
    )
    assert core.worktree_name("r1a2b", "r1a2b", "codex-1") == "r1a2b-codex-1"
    assert core.worktree_name("///", "r9", "claude-1") == "run-r9-claude-1"


def test_pane_keys_are_valid_and_distinct() -> None:
    """The pane key fixed before a spawn is a real ``<tab>:<uuid>`` key, one per variant."""
    a = core.pane_key_for("r1", "claude-1", "n")
    b = core.pane_key_for("r1", "claude-2", "n")
    assert a != b
    assert parse_pane_key(a) is not None and parse_pane_key(b) is not None


def test_prompt_is_pasted_when_it_has_several_lines() -> None:
    """One line is typed as is; several arrive as one bracketed paste; then submit."""
    assert core.prompt_input("claude", "fix it") == ("fix it", "\r")
    body, submit = core.prompt_input("codex", "a\r\nb")
    assert body == "\x1b[200~a\nb\x1b[201~" and submit == "\r"


def test_steps_follow_the_phase_and_stop_when_failed_or_archived() -> None:
    """pending → worktree → terminal → prompt → watch; failed/removed stop everything,
    archived stops before a prompt is typed."""
    flags = {"failed": False, "archived": False, "removed": False}
    assert core.next_step("pending", **flags) is Step.CREATE_WORKTREE
    assert core.next_step("worktree", **flags) is Step.SPAWN_TERMINAL
    assert core.next_step("terminal", **flags) is Step.DELIVER_PROMPT
    assert core.next_step("prompted", **flags) is Step.WATCH
    assert core.next_step("pending", **{**flags, "failed": True}) is Step.STOP
    assert core.next_step("terminal", **{**flags, "archived": True}) is Step.STOP


def test_readiness_and_prompt_evidence_come_from_hooks_rows() -> None:
    """Ready: a waiting/done row; a prompt was taken when a turn began after it was typed."""
    assert not core.is_ready(None)
    assert core.is_ready(row("waiting")) and not core.is_ready(row("working"))
    assert core.prompt_taken(row("working", 200), 150)
    assert not core.prompt_taken(row("working", 100), 150)
    assert not core.prompt_taken(row("waiting", 200), 150)


def test_variant_state_projects_phase_row_and_terminal() -> None:
    """starting until prompted; then hooks' state; exited, archived and merged win."""
    base = {"failed": False, "archived": False, "merged": False, "running": True}
    assert core.variant_state("terminal", row=row("waiting"), **base) == "starting"
    assert core.variant_state("prompted", row=row("blocked"), **base) == "needs-you"
    assert core.variant_state("prompted", row=row("done"), **base) == "idle"
    assert core.variant_state("prompted", row=row("working"), **base) == "working"
    # the ready row from before the prompt is not the turn's end
    assert core.variant_state("prompted", row=row("waiting", 100), prompted_ms=150, **base) == (
        "working"
    )
    assert core.variant_state("prompted", row=row("done", 200), prompted_ms=150, **base) == "idle"
    assert core.variant_state("prompted", row=None, **{**base, "running": False}) == "exited"
    assert core.variant_state("prompted", row=None, **{**base, "archived": True}) == "archived"
    assert core.variant_state("prompted", row=None, **{**base, "merged": True}) == "merged"


def test_recipients_of_all_leave_out_the_sender() -> None:
    """``all`` reaches every other variant; an unknown one is a bad request."""
    names = ["claude-1", "claude-2", "codex-1"]
    assert core.resolve_recipients("all", names, "claude-1") == ["claude-2", "codex-1"]
    assert core.resolve_recipients("codex-1", names, "operator") == ["codex-1"]
    with pytest.raises(BadRequest):
        core.resolve_recipients("gemini-1", names, "operator")


def test_merge_replays_the_merged_variant_and_refuses_another() -> None:
    """A run merged once answers a retry of that variant from the record, refuses any
    other; an unmerged variant without a worktree has nothing to merge."""
    assert core.merge_replays("r1", "merged", "claude-1", "claude-1", "wt") is True
    assert core.merge_replays("r1", "merged", "claude-1", "claude-1", "") is True
    with pytest.raises(Conflict, match="already merged claude-1"):
        core.merge_replays("r1", "merged", "claude-1", "codex-1", "wt")
    assert core.merge_replays("r1", "active", "", "codex-1", "wt") is False
    with pytest.raises(Conflict, match="no worktree yet"):
        core.merge_replays("r1", "active", "", "codex-1", "")


def test_merge_preview_refuses_conflicts_and_uncommitted_work_unless_committing() -> None:
    def check(*, conflicts: list[str] = [], uncommitted: int = 0, commit: bool = False) -> None:  # noqa: B006
        core.check_merge_preview(
            "fix", "codex-1", "/w", into="main", conflicts=conflicts,
            uncommitted=uncommitted, dirty=uncommitted > 0, commit=commit,
        )  # fmt: skip

    check()
    with pytest.raises(Conflict, match=r"into main conflicts in: a\.py, b\.py"):
        check(conflicts=["a.py", "b.py"], commit=True)
    with pytest.raises(Conflict, match="1 uncommitted change in /w: `orca run merge fix codex-1"):
        check(uncommitted=1)
    with pytest.raises(Conflict, match="2 uncommitted changes"):
        check(uncommitted=2)
    check(uncommitted=2, commit=True)
    assert core.merge_messages("fix", "codex-1", "codex") == (
        "orca run fix: codex-1 (codex)",
        "orca run fix: codex-1's uncommitted work (codex)\n",
    )
