"""orca hooks install/uninstall/status edit the agents' real config files (issue 7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orca import integrations
from orca.hook_script import install_hook_script

USER_HOOK = {"type": "command", "command": "/usr/local/bin/my-linter --check"}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def script(tmp_path: Path) -> Path:
    return install_hook_script(tmp_path / "orca" / "agent-hooks")


def _write(path: Path, config: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config))


def _orca_entries(config: dict[str, object], event: str) -> int:
    hooks = config["hooks"]
    assert isinstance(hooks, dict)
    return sum(
        1
        for group in hooks.get(event, [])
        for handler in group["hooks"]
        if "orca-agent-hook" in handler["command"]
    )


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_install_twice_leaves_one_entry_and_user_hooks_intact(
    home: Path, script: Path, agent: str
) -> None:
    """Installing twice yields one Orca handler per event; the user's hooks and keys stay."""
    spec = integrations.INTEGRATIONS[agent]
    path = spec.config_path(home)
    user_config = {
        "model": "best",
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [USER_HOOK]}],
            spec.events[0]: [{"hooks": [USER_HOOK]}],
        },
    }
    _write(path, user_config)
    assert integrations.install(agent, home, script) is True
    assert integrations.install(agent, home, script) is False
    config = json.loads(path.read_text())
    assert config["model"] == "best"
    for event in spec.events:
        assert _orca_entries(config, event) == 1
    assert {"matcher": "Bash", "hooks": [USER_HOOK]} in config["hooks"]["PreToolUse"]
    assert {"hooks": [USER_HOOK]} in config["hooks"][spec.events[0]]
    backup = path.with_name(path.name + integrations.BACKUP_SUFFIX)
    assert json.loads(backup.read_text()) == user_config
    assert integrations.status(agent, home).installed


def test_uninstall_restores_the_users_config(home: Path, script: Path) -> None:
    """Uninstall removes only Orca's handlers; the result equals the user's original."""
    path = integrations.INTEGRATIONS["claude"].config_path(home)
    user_config = {"hooks": {"Stop": [{"matcher": "", "hooks": [USER_HOOK]}]}, "theme": "dark"}
    _write(path, user_config)
    integrations.install("claude", home, script)
    assert integrations.uninstall("claude", home) is True
    assert json.loads(path.read_text()) == user_config
    status = integrations.status("claude", home)
    assert not status.installed and status.installed_events == ()


def test_install_creates_a_missing_config(home: Path, script: Path) -> None:
    """With no config file yet, install creates one holding only Orca's hooks."""
    integrations.install("gemini", home, script)
    path = integrations.INTEGRATIONS["gemini"].config_path(home)
    handler = json.loads(path.read_text())["hooks"]["AfterAgent"][0]["hooks"][0]
    assert handler["name"] == "orca-agent-status" and handler["timeout"] == 10_000
    assert handler["command"].endswith(" gemini") and str(script) in handler["command"]


def test_invalid_config_is_left_alone(home: Path, script: Path) -> None:
    """A config that is not JSON is reported, never overwritten."""
    path = integrations.INTEGRATIONS["codex"].config_path(home)
    path.parent.mkdir(parents=True)
    path.write_text("{ not json")
    with pytest.raises(integrations.UnreadableConfig):
        integrations.install("codex", home, script)
    assert path.read_text() == "{ not json"


def test_uninstall_without_config_changes_nothing(home: Path) -> None:
    """Uninstalling where nothing was installed creates no file."""
    assert integrations.uninstall("claude", home) is False
    assert not (home / ".claude").exists()
