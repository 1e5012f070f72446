"""``orca worktree ps`` and ``orca hooks`` as real processes against a real hooks actor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from support.hooks_harness import WT, running_hooks
from support.procs import REPO as ROOT

OTHER_WT = "repo1::/src/wt-b"


def _orca(
    home: Path, *argv: str, user_home: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, ORCA_HOME=str(home), PYTHONPATH=str(ROOT))
    if user_home is not None:
        env["HOME"] = str(user_home)
    return subprocess.run(
        [sys.executable, "-m", "orca.cli.main", *argv],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "orca-home"
    home.mkdir()
    monkeypatch.setenv("ORCA_HOME", str(home))
    return home


async def test_worktree_ps_lists_agents_per_worktree_from_the_snapshot(home: Path) -> None:
    """ps --json shows each worktree's summary and agents, read from agentStatus.snapshot."""
    with trio.fail_after(60):
        async with running_hooks(home) as hooks:
            await hooks.post(
                "claude", {"hook_event_name": "PermissionRequest", "tool_name": "Bash"}
            )
            await hooks.post(
                "codex",
                {"hook_event_name": "UserPromptSubmit"},
                pane="tab-2:0d2a0000-0000-4000-8000-000000000002",
                extra={"X-Orca-Worktree-Id": OTHER_WT},
            )
            result = await trio.to_thread.run_sync(_orca, home, "worktree", "ps", "--json")
            assert result.returncode == 0, result.stderr
            listing = json.loads(result.stdout)["worktrees"]
            assert [(w["worktreeId"], w["summary"]["state"]) for w in listing] == [
                (WT, "blocked"),
                (OTHER_WT, "working"),
            ]
            agent = listing[0]["agents"][0]
            assert (agent["agent"], agent["displayState"], agent["fresh"]) == (
                "claude",
                "blocked",
                True,
            )
            assert agent["ageMs"] >= 0
            table = await trio.to_thread.run_sync(_orca, home, "worktree", "ps")
            assert table.returncode == 0 and "blocked" in table.stdout and "codex" in table.stdout


async def test_worktree_ps_without_service_exits_3(home: Path) -> None:
    """With no hooks actor running, ps says so and exits 3 (not running)."""
    with trio.fail_after(30):
        result = await trio.to_thread.run_sync(_orca, home, "worktree", "ps", "--json")
    assert result.returncode == 3 and "orca" in result.stderr


async def test_hooks_install_cli_twice_keeps_one_entry(home: Path, tmp_path: Path) -> None:
    """`orca hooks install claude` twice: one Orca handler per event, user's hooks intact."""
    user_home = tmp_path / "user"
    settings = user_home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    mine = {"type": "command", "command": "notify-send done"}
    settings.write_text(json.dumps({"hooks": {"Stop": [{"matcher": "", "hooks": [mine]}]}}))
    with trio.fail_after(30):
        first = await trio.to_thread.run_sync(
            lambda: _orca(home, "hooks", "install", "claude", user_home=user_home)
        )
        second = await trio.to_thread.run_sync(
            lambda: _orca(home, "hooks", "install", "claude", user_home=user_home)
        )
        status = await trio.to_thread.run_sync(
            lambda: _orca(home, "hooks", "status", "claude", "--json", user_home=user_home)
        )
    assert first.returncode == 0 and "installed into" in first.stdout
    assert second.returncode == 0 and "already installed" in second.stdout
    stop_groups = json.loads(settings.read_text())["hooks"]["Stop"]
    handlers = [h for g in stop_groups for h in g["hooks"]]
    assert mine in handlers
    assert sum("orca-agent-hook" in h["command"] for h in handlers) == 1
    report = json.loads(status.stdout)["integrations"][0]
    assert report["installed"] is True and report["serverPort"] is None
    assert (home / "data" / "agent-hooks" / "orca-agent-hook.sh").exists()
