"""How an ended agent pane resumes its conversation (issue 34; orca.views.resume)."""

from __future__ import annotations

from orca.views.resume import kept_options, resume_plan


def test_claude_resumes_by_id_keeping_how_it_was_started_but_not_its_prompt() -> None:
    argv = ["/opt/bin/claude", "--permission-mode", "plan", "--model=opus", "fix the login"]
    plan = resume_plan("claude", argv, "S1")
    assert plan.argv == (
        "/opt/bin/claude", "--permission-mode", "plan", "--model=opus", "--resume", "S1"
    )  # fmt: skip


def test_claude_forks_under_a_new_id() -> None:
    assert resume_plan("claude", ["claude"], "S1", fork=True).argv == (
        "claude", "--resume", "S1", "--fork-session"
    )  # fmt: skip


def test_codex_resumes_with_its_subcommand() -> None:
    argv = ["codex", "-a", "on-request", "-c", "model=o3", "write tests"]
    assert resume_plan("codex", argv, "U1").argv == (
        "codex", "resume", "-a", "on-request", "-c", "model=o3", "U1"
    )  # fmt: skip


def test_gemini_resumes_by_id() -> None:
    assert resume_plan("gemini", ["gemini", "-y"], "G1").argv == ("gemini", "-y", "--resume", "G1")


def test_an_agent_run_through_a_wrapper_is_resumed_by_its_name() -> None:
    assert resume_plan("claude", ["/usr/bin/env", "claude"], "S1").argv == (
        "claude", "--resume", "S1"
    )  # fmt: skip


def test_what_cannot_be_resumed_says_why() -> None:
    assert "no agent session" in resume_plan("claude", ["claude"], "").refusal
    assert "no resume" in resume_plan("script", ["bash"], "S1").refusal
    assert "cannot fork" in resume_plan("codex", ["codex"], "U1", fork=True).refusal


def test_an_option_missing_its_value_is_dropped() -> None:
    assert kept_options("claude", ["claude", "--verbose", "--model"]) == ["--verbose"]
