"""`orca ui`'s run view (issue 26): a run made by the real orch actor, with fake agents
that speak the hook protocol, shown variant by variant; a conflicting merge refused from
its preview; another variant merged from the view.

The agents are ``support/orch_agent.sh`` (as ``claude`` and ``codex`` on PATH): each
commits ``answer-<agent>.txt`` in its worktree, reports and stops.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.journey import User, make_git_repo
from support.orch import orch_user

from actors.ui.app import OrcaApp
from actors.ui.dialogs import ChoiceScreen
from actors.ui.runs_view import RunsScreen
from orca.contracts import orch
from orca.paths import resolve_paths

PROMPT = "write the answer"


def _git(repo: Path, *args: str) -> str:
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", "-C", str(repo)]
    return subprocess.run([*git, *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def world(orca_home: Path, tmp_path: Path) -> Iterator[tuple[User, Path]]:
    user, _log = orch_user(orca_home, tmp_path)
    project = make_git_repo(tmp_path / "project")
    user.ok("up")
    try:
        user.ok("repo", "add", str(project))
        yield user, project
    finally:
        user.run("down", "--kill-terminals")


def _settled(info: orch.RunInfo | None) -> bool:
    """Every variant idle, checked and its diffstat known."""
    return info is not None and all(
        v.state == "idle" and v.check is not None and v.diffstat is not None for v in info.variants
    )


def test_the_run_view_compares_variants_refuses_a_conflict_and_merges(
    world: tuple[User, Path], drive: Any
) -> None:
    user, project = world
    run = user.json(
        "run", "new", "project", PROMPT, "--agents", "claude,codex", "--check",
        "cat answer-*.txt", "--name", "answer",
    )["run"]["run"]  # fmt: skip
    seen: dict[str, Any] = {}

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await app.wait_for(lambda: all(app.backend.alive.values()), 30)
        await pilot.press("ctrl+g", "e")
        await app.wait_for(lambda: isinstance(app.screen, RunsScreen))
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        await app.wait_for(lambda: screen.current == run and _settled(screen.shown), 60)
        await app.wait_for(lambda: screen.previews > 0)
        seen["columns"] = [str(w.render()) for w in screen.query(".variant-col")]
        seen["preview"] = str(screen.query_one("#variant-screen").render())
        attached: list[list[str]] = []
        app.zoom_command = lambda argv: attached.append(argv) or 0
        app.suspend = contextlib.nullcontext  # type: ignore[method-assign,assignment]  # headless
        await pilot.press("a")
        await app.wait_for(lambda: bool(attached))
        seen["attached"] = attached[0][-3:]
        seen["claude-session"] = screen.shown.variants[0].session_id  # type: ignore[union-attr]

        checks = {v.variant: v.check.ran_at_ms for v in screen.shown.variants}  # type: ignore[union-attr]
        await pilot.press("c")  # the check again, now
        await app.wait_for(
            lambda: "check done" in str(screen.query_one("#runs-status").render()), 30
        )
        seen["rechecked"] = all(
            v.check is not None and v.check.ran_at_ms > checks[v.variant]
            for v in screen.shown.variants  # type: ignore[union-attr]
        )

        # main gets its own answer-claude.txt: claude-1's merge would conflict
        (project / "answer-claude.txt").write_text("main's answer\n")
        _git(project, "add", "answer-claude.txt")
        _git(project, "commit", "-q", "-m", "main answers first")
        await pilot.press("m")
        await app.wait_for(lambda: isinstance(app.screen, ChoiceScreen), 20)
        refusal = app.screen
        assert isinstance(refusal, ChoiceScreen)
        seen["refusal"] = (refusal.question, refusal.details, set(refusal.choices))
        await pilot.press("n")
        await app.wait_for(lambda: app.screen is screen)

        await pilot.press("right")  # codex-1
        await app.wait_for(lambda: screen.selected_variant() is not None)
        seen["selected"] = screen.selected_variant().variant  # type: ignore[union-attr]
        await pilot.press("m")
        await app.wait_for(lambda: isinstance(app.screen, ChoiceScreen), 20)
        question = app.screen
        assert isinstance(question, ChoiceScreen)
        seen["question"] = question.question
        await pilot.press("s")  # squash
        await app.wait_for(
            lambda: screen.shown is not None and screen.shown.merged_variant == "codex-1", 30
        )
        seen["states"] = {v.variant: v.state for v in screen.shown.variants}  # type: ignore[union-attr]
        seen["status"] = str(screen.query_one("#runs-status").render())

        # closed while orch still answers: the answer finds no screen, and that is fine
        done = screen.tasks_done
        await pilot.press("c", "escape")
        await app.wait_for(lambda: screen.closed and screen.tasks_done >= done + 2, 30)
        seen["runtime error"] = app.guest.error

    drive(OrcaApp(resolve_paths(), bell=False), scenario, timeout=90)
    claude, codex = seen["columns"]
    assert claude.startswith("▶ claude-1") and codex.startswith("  codex-1")
    for column, agent in ((claude, "claude"), (codex, "codex")):
        assert agent in column and "● idle" in column and "1 file +1 -0" in column
        assert "check ✔ passed" in column
    assert "claude: ready" in seen["preview"] or "claude: done" in seen["preview"]
    assert seen["rechecked"]
    assert seen["attached"] == ["term", "attach", seen["claude-session"]]
    question, details, keys = seen["refusal"]
    assert "cannot be merged into main: it conflicts" in question
    assert "answer-claude.txt" in details and keys == {"n"}
    assert seen["selected"] == "codex-1"
    assert seen["question"] == "Merge codex-1 (codex) into main?"
    assert seen["states"] == {"claude-1": "archived", "codex-1": "merged"}
    assert "merged codex-1 into main" in seen["status"]
    assert seen["runtime error"] is None
    assert (project / "answer-codex.txt").read_text() == f"codex: {PROMPT}\n"
    assert _git(project, "status", "--porcelain") == ""


def test_the_run_view_lists_automations_and_their_last_firing(
    world: tuple[User, Path], drive: Any
) -> None:
    """Beside the runs (issue 38): each automation, its schedule, and its last firing as
    it settles: here a run-now that could not start (the repo's folder gone)."""
    user, project = world
    user.ok("auto", "add", "weekly", "project", PROMPT, "--agents", "claude",
            "--cron", "0 4 * * 6", "--tz", "UTC")  # fmt: skip
    seen: dict[str, str] = {}

    async def scenario(app: OrcaApp, pilot: Any) -> None:
        await app.wait_for(lambda: all(app.backend.alive.values()), 30)
        await pilot.press("ctrl+g", "e")
        await app.wait_for(lambda: isinstance(app.screen, RunsScreen))
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        shown = screen.query_one("#automations")
        await app.wait_for(lambda: "weekly" in str(shown.render()), 30)
        seen["listed"] = str(shown.render())
        shutil.rmtree(project)
        failed = user.run("auto", "run-now", "weekly")
        assert failed.returncode == 1, failed.stderr
        await app.wait_for(lambda: "failed" in str(shown.render()), 30)
        seen["failed"] = str(shown.render())
        await pilot.press("escape")

    drive(OrcaApp(resolve_paths(), bell=False), scenario, timeout=60)
    assert "cron 0 4 * * 6 UTC" in seen["listed"] and "next" in seen["listed"]
    assert "failed" in seen["failed"] and "gone" in seen["failed"]
