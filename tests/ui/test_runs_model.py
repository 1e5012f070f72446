"""The run view's projection (pure): orch's RunInfo into columns, a merge preview into
the question asked (or the refusal)."""

from __future__ import annotations

from typing import Any

from actors.ui.runs_model import (
    column_text,
    cost_text,
    elapsed_text,
    merge_question,
    run_line,
    variant_columns,
)
from orca.contracts import gitwatch, orch


def variant(name: str, agent: str, state: Any, **kw: Any) -> orch.VariantInfo:
    return orch.VariantInfo(variant=name, agent=agent, state=state, phase="prompted", **kw)


def run_info(*variants: orch.VariantInfo, check: str = "pytest -q") -> orch.RunInfo:
    return orch.RunInfo(
        run="r-1", name="login-fix", repo_id="repo-1", repo="proj", prompt="fix the login\nmore",
        base="main", check=check, state="active", created_at_ms=0, revision=3,
        variants=list(variants),
    )  # fmt: skip


def preview(**kw: Any) -> gitwatch.MergePreview:
    fields: dict[str, Any] = dict(
        into="main", branch="login-fix-claude-1", mode="merge", ahead=2, behind=0,
        diffstat=gitwatch.Diffstat(files=3, insertions=40, deletions=2), conflicts=[],
        dirty=False,
    )  # fmt: skip
    fields.update(kw)
    return gitwatch.MergePreview(**fields)


def test_columns_carry_agent_light_diffstat_check_time_and_cost() -> None:
    """One column per variant, in orch's order, every figure orch gave shown as text."""
    info = run_info(
        variant("claude-1", "claude", "idle", diffstat=orch.Diffstat(files=3, insertions=40, deletions=2),
                check=orch.CheckResult(exit_code=0, tail="5 passed\n", ran_at_ms=1, duration_ms=9),
                elapsed_s=252.0, tokens=120_000, cost_usd=0.4213),
        variant("codex-1", "codex", "working", check=orch.CheckResult(
                exit_code=1, tail="a\nb\nc\nFAILED test_login\n", ran_at_ms=1, duration_ms=9),
                elapsed_s=30.5, tokens=12_000),
        variant("gemini-1", "gemini", "failed", error="worktree.create: conflict"),
    )  # fmt: skip
    columns = variant_columns(info)
    assert [(c.variant, c.agent, c.state) for c in columns] == [
        ("claude-1", "claude", "idle"), ("codex-1", "codex", "working"),
        ("gemini-1", "gemini", "failed"),
    ]  # fmt: skip
    claude, codex, gemini = columns
    assert (claude.diffstat, claude.check, claude.time, claude.cost) == (
        "3 files +40 -2", "check ✔ passed", "4m12s", "$0.42",
    )  # fmt: skip
    assert (codex.diffstat, codex.check, codex.cost) == ("diff ?", "check ✖ exit 1", "12k tok")
    assert codex.check_tail == ("b", "c", "FAILED test_login")
    assert (gemini.check, gemini.time, gemini.cost) == ("check: not run", "-", "-")
    assert gemini.note == "worktree.create: conflict"
    assert len({c.light_style for c in columns}) == 3  # three states, three colours
    text = column_text(claude, selected=True).plain
    assert text.startswith("▶ claude-1") and "● idle" in text and "$0.42" in text


def test_a_run_without_check_says_so_and_the_list_line_counts_states() -> None:
    info = run_info(variant("claude-1", "claude", "starting"), check="")
    assert variant_columns(info)[0].check == "no check"
    summary = orch.RunSummary(
        run="r-1", name="login-fix", repo="proj", state="active", created_at_ms=0, revision=1,
        variants=3, states={"working": 2, "idle": 1},
    )  # fmt: skip
    line = run_line(summary, now_ms=125_000).plain
    assert "login-fix" in line and "3 variants (1 idle, 2 working)" in line
    assert "2m05s ago" in line


def test_figures_read_short() -> None:
    assert [elapsed_text(s) for s in (None, 9.9, 61, 7325)] == ["-", "9s", "1m01s", "2h02m"]
    assert [cost_text(None, 0.001), cost_text(2_500_000, None), cost_text(0, None)] == [
        "<$0.01", "2.5M tok", "-",
    ]  # fmt: skip


def test_a_clean_preview_asks_and_names_what_is_archived() -> None:
    info = run_info(variant("claude-1", "claude", "idle"), variant("codex-1", "codex", "idle"))
    ask = merge_question(info, info.variants[0], preview())
    assert ask.refusal == "" and ask.question == "Merge claude-1 (claude) into main?"
    assert "2 ahead, 0 behind; 3 files +40 -2" in ask.details
    assert "archived afterwards (worktrees kept): codex-1" in ask.details


def test_conflicts_refuse_the_merge_and_list_the_paths() -> None:
    """A conflicting preview is a refusal: no question is asked, the paths are listed."""
    info = run_info(variant("claude-1", "claude", "idle"))
    paths = [f"src/f{i}.py" for i in range(15)]
    ask = merge_question(info, info.variants[0], preview(conflicts=paths))
    assert ask.refusal == "conflicts in 15 path(s)"
    assert "src/f0.py" in ask.details and "... and 3 more" in ask.details


def test_dirty_worktree_dirty_checkout_and_nothing_to_merge_refuse() -> None:
    info = run_info(variant("claude-1", "claude", "idle"))
    v = info.variants[0]
    dirty = merge_question(info, v, preview(dirty=True, uncommitted=["?? notes.txt"]))
    assert dirty.refusal == "uncommitted changes" and "?? notes.txt" in dirty.details
    checkout = merge_question(info, v, preview(checkout="/src/proj", checkout_dirty=True))
    assert checkout.refusal == "main's checkout is dirty" and "/src/proj" in checkout.question
    assert merge_question(info, v, preview(ahead=0)).refusal == "nothing to merge"


def test_automations_under_the_runs_say_schedule_next_and_last_firing() -> None:
    from actors.ui.runs_model import automations_text
    from orca.model.automations import (
        Automation,
        AutomationAgent,
        AutomationRun,
        AutomationSchedule,
        AutomationTarget,
    )

    def info(
        name: str, kind: str, last: AutomationRun | None, due: int | None
    ) -> orch.AutomationInfo:
        schedule = (
            AutomationSchedule(kind="cron", cron="0 3 * * 1-5", tz="Europe/Paris")
            if kind == "cron"
            else AutomationSchedule(kind="every", every_seconds=21600)
        )
        automation = Automation(
            id=name, name=name, target=AutomationTarget(repo_id="r"), prompt="p",
            agents=(AutomationAgent(agent="claude"),), schedule=schedule,
        )  # fmt: skip
        return orch.AutomationInfo(automation=automation, next_due_ms=due, last_run=last)

    failed = AutomationRun(
        id="b@1", automation_id="b", scheduled_for=1, trigger="schedule", status="failed",
        error="no claude on PATH",
    )  # fmt: skip
    text = automations_text([info("a", "cron", None, 0), info("b", "every", failed, None)]).plain
    first, second = text.splitlines()[1:]
    assert "a" in first and "cron 0 3 * * 1-5 Europe/Paris" in first and "next" in first
    assert "every 21600s" in second and "paused" in second
    assert "failed no claude on PATH" in second
    assert "no automations" in automations_text([]).plain
