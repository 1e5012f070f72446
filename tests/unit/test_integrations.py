"""orca hooks install/uninstall/status edit the agents' real config files (issue 7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orca import integrations
from orca.cli import integrations as edits
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
    assert edits.install(agent, home, script) is True
    assert edits.install(agent, home, script) is False
    config = json.loads(path.read_text())
    assert config["model"] == "best"
    for event in spec.events:
        assert _orca_entries(config, event) == 1
    assert {"matcher": "Bash", "hooks": [USER_HOOK]} in config["hooks"]["PreToolUse"]
    assert {"hooks": [USER_HOOK]} in config["hooks"][spec.events[0]]
    backup = path.with_name(path.name + edits.BACKUP_SUFFIX)
    assert json.loads(backup.read_text()) == user_config
    assert integrations.status(agent, home).installed


def test_uninstall_restores_the_users_config(home: Path, script: Path) -> None:
    """Uninstall removes only Orca's handlers; the result equals the user's original."""
    path = integrations.INTEGRATIONS["claude"].config_path(home)
    user_config = {"hooks": {"Stop": [{"matcher": "", "hooks": [USER_HOOK]}]}, "theme": "dark"}
    _write(path, user_config)
    edits.install("claude", home, script)
    assert edits.uninstall("claude", home) is True
    assert json.loads(path.read_text()) == user_config
    status = integrations.status("claude", home)
    assert not status.installed and status.installed_events == ()


def test_install_creates_a_missing_config(home: Path, script: Path) -> None:
    """With no config file yet, install creates one holding only Orca's hooks."""
    edits.install("gemini", home, script)
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
        edits.install("codex", home, script)
    assert path.read_text() == "{ not json"


def test_uninstall_without_config_changes_nothing(home: Path) -> None:
    """Uninstalling where nothing was installed creates no file."""
    assert edits.uninstall("claude", home) is False
    assert not (home / ".claude").exists()


# -- issue 12: edits a user can trust -----------------------------------------------
PRETTY_USER_FILE = """{
    "model": "best",   // a comment the user wrote
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}
        ]
    },
    "env": {"LANG": "fr_FR.UTF-8", "NOTE": "déjà vu"}
}
"""


@pytest.mark.parametrize("agent", ["claude", "codex", "gemini"])
def test_install_then_uninstall_gives_the_original_back_byte_for_byte(
    home: Path, script: Path, agent: str
) -> None:
    path = integrations.INTEGRATIONS[agent].config_path(home)
    path.parent.mkdir(parents=True)
    path.write_text(PRETTY_USER_FILE)
    codex_toml = (
        '# my codex config\nmodel = "o3"  # pinned\n\n[projects."/src"]\ntrust_level = "trusted"\n'
    )
    if agent == "codex":
        (home / ".codex" / "config.toml").write_text(codex_toml)
    assert edits.install(agent, home, script) is True
    installed = path.read_text()
    assert "// a comment the user wrote" in installed and "déjà vu" in installed
    assert integrations.status(agent, home).installed
    assert edits.uninstall(agent, home) is True
    assert path.read_text() == PRETTY_USER_FILE
    if agent == "codex":
        assert (home / ".codex" / "config.toml").read_text() == codex_toml


def test_gemini_settings_with_comments_keep_them(home: Path, script: Path) -> None:
    path = integrations.INTEGRATIONS["gemini"].config_path(home)
    path.parent.mkdir(parents=True)
    original = '{\n  /* theme */\n  "theme": "GitHub", // dark one\n  "hooks": {}\n}\n'
    path.write_text(original)
    edits.install("gemini", home, script)
    text = path.read_text()
    assert "/* theme */" in text and "// dark one" in text
    value = integrations.read_config(path)
    assert value["theme"] == "GitHub"
    assert integrations.installed_events(value) == list(integrations.INTEGRATIONS["gemini"].events)
    edits.uninstall("gemini", home)
    assert path.read_text() == original


def test_symlinked_settings_are_edited_at_their_target(
    home: Path, script: Path, tmp_path: Path
) -> None:
    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"theme": "dark"}\n')
    link = integrations.INTEGRATIONS["claude"].config_path(home)
    link.parent.mkdir(parents=True)
    link.symlink_to(dotfiles)
    edits.install("claude", home, script)
    assert link.is_symlink() and link.resolve() == dotfiles
    assert "orca-agent-hook.sh" in dotfiles.read_text()
    edits.uninstall("claude", home)
    assert link.is_symlink() and dotfiles.read_text() == '{"theme": "dark"}\n'


def test_the_first_backup_of_the_users_original_is_never_overwritten(
    home: Path, script: Path
) -> None:
    path = integrations.INTEGRATIONS["claude"].config_path(home)
    path.parent.mkdir(parents=True)
    path.write_text('{"theme": "dark"}\n')
    backup = path.with_name(path.name + edits.BACKUP_SUFFIX)
    edits.install("claude", home, script)
    edits.uninstall("claude", home)
    path.write_text('{"theme": "light"}\n')  # the user changes it later
    edits.install("claude", home, script)
    assert backup.read_text() == '{"theme": "dark"}\n'


def _codex_state(home: Path) -> dict[str, str]:
    import tomllib

    doc = tomllib.loads((home / ".codex" / "config.toml").read_text())
    return {k: v["trusted_hash"] for k, v in doc.get("hooks", {}).get("state", {}).items()}


def test_codex_trust_entries_match_codex_hash_and_survive_user_hooks(
    home: Path, script: Path
) -> None:
    """Every Orca handler gets Codex's positional trust entry with the identity hash
    Codex computes; the user's own hooks added after ours leave our keys valid."""
    edits.install("codex", home, script)
    path = integrations.INTEGRATIONS["codex"].config_path(home)
    state = _codex_state(home)
    command = integrations.hook_command(script, "codex")
    key = f"{path}:stop:0:0"
    assert state[key] == integrations.codex_trust_hash("Stop", command, 10, None)
    assert len(state) == len(integrations.INTEGRATIONS["codex"].events)
    toml = (home / ".codex" / "config.toml").read_text()
    assert "notify" in toml and str(script) in toml
    # the user adds a Stop hook of their own after ours, and trusts it
    config = json.loads(path.read_text())
    config["hooks"]["Stop"].append({"hooks": [USER_HOOK]})
    path.write_text(json.dumps(config, indent=2))
    with (home / ".codex" / "config.toml").open("a") as f:
        f.write(f'\n[hooks.state."{path}:stop:1:0"]\ntrusted_hash = "sha256:user"\n')
    assert edits.install("codex", home, script) is False  # nothing moved
    after = _codex_state(home)
    assert after[key] == state[key] and after[f"{path}:stop:1:0"] == "sha256:user"
    assert integrations.status("codex", home).installed
    edits.uninstall("codex", home)
    assert _codex_state(home) == {f"{path}:stop:0:0": "sha256:user"} or (
        _codex_state(home) == {f"{path}:stop:1:0": "sha256:user"}
    )


def test_codex_status_reports_untrusted_handlers(home: Path, script: Path) -> None:
    edits.install("codex", home, script)
    (home / ".codex" / "config.toml").write_text("")
    status = integrations.status("codex", home)
    assert not status.installed and "stop" in status.untrusted_events


def test_codex_keeps_a_users_own_notify_program(home: Path, script: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('notify = ["my-notifier"]\n')
    edits.install("codex", home, script)
    assert 'notify = ["my-notifier"]' in config.read_text()
    edits.uninstall("codex", home)
    assert config.read_text() == 'notify = ["my-notifier"]\n'


@pytest.mark.parametrize(
    "original",
    [
        PRETTY_USER_FILE,
        "{}",
        '{"a": 1}',
        '{\n\t"hooks": {\n\t\t"Stop": []\n\t}\n}\n',
        '// lead\n{\n  "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}\n}',
    ],
)
@pytest.mark.parametrize("agent", ["claude", "gemini"])
def test_the_splice_itself_is_its_own_inverse(original: str, agent: str) -> None:
    """Without any backup: uninstall cuts exactly what install added."""
    spec = integrations.INTEGRATIONS[agent]
    installed = edits.install_text(original, spec, "/x/orca-agent-hook.sh a", "f")
    events = integrations.installed_events(integrations.parse_jsonc(installed).value)
    assert sorted(events) == sorted(spec.events)
    assert edits.install_text(installed, spec, "/x/orca-agent-hook.sh a", "f") == installed
    value = integrations.parse_jsonc(original).value
    assert edits.uninstall_text(installed, "f", value) == original


def test_codex_trust_hash_reproduces_hashes_codex_itself_wrote() -> None:
    """Vectors: `trusted_hash` values Codex 0.153.4 wrote into a real config.toml for one
    command (published as a fixture by an independent re-implementation)."""
    command = (
        "/Users/jonathanreed/Downloads/sidepulse-JR-Fork/.venv/bin/python "
        "/Users/jonathanreed/Downloads/sidepulse-JR-Fork/src/sidepulse/hook_entry.py "
        "--provider codex --log /Users/jonathanreed/.local/state/sidepulse/agent-monitor/codex.jsonl"
    )
    known = {
        "SessionStart": "sha256:50d208423ba289319dd21dc390163ef9af2188f703c3c824ddde924edcb3b208",
        "PreToolUse": "sha256:f5c5056e9ce099f7a4bbb62021357346b86044e21f0d4ec9b8aa7007a317431a",
        "Stop": "sha256:188d617d8db44a845989694f346f905d3a447afffe5019af363f45411910c930",
    }
    for event, digest in known.items():
        assert integrations.codex_trust_hash(event, command, None, "*") == digest
    assert integrations.codex_trust_hash("Stop", command, None, None) == known["Stop"]


@pytest.mark.parametrize(("agent", "timeout"), [("claude", 120), ("codex", 60)])
def test_permission_request_is_installed_held_with_its_own_timeout(
    home: Path, script: Path, agent: str, timeout: int
) -> None:
    """Issue 27: the PermissionRequest handler runs the script's permission mode, holding
    a margin less than the timeout the installer sets for that event alone; a
    re-install changes nothing; Codex's trust entry covers the held handler."""
    assert edits.install(agent, home, script)
    spec = integrations.INTEGRATIONS[agent]
    config = json.loads(spec.config_path(home).read_text())
    (group,) = config["hooks"]["PermissionRequest"]
    (handler,) = group["hooks"]
    hold = timeout - integrations.HOLD_MARGIN_S
    assert handler["command"] == f"{integrations.hook_command(script, agent)} permission {hold}"
    assert handler["timeout"] == timeout
    (pre,) = config["hooks"]["PreToolUse"]
    assert pre["hooks"][0]["timeout"] == spec.timeout
    assert pre["hooks"][0]["command"] == integrations.hook_command(script, agent)
    assert not edits.install(agent, home, script)
    assert integrations.status(agent, home).installed


def test_an_older_unheld_permission_handler_is_rewritten_in_place(home: Path, script: Path) -> None:
    """A config installed before issue 27 (status-only PermissionRequest handler) gets the
    held one on the next install, at the same index."""
    spec = integrations.INTEGRATIONS["claude"]
    old = {
        "hooks": {
            "PermissionRequest": [
                USER_HOOK_GROUP,
                {
                    "matcher": "",
                    "hooks": [
                        {
                            "type": "command",
                            "command": integrations.hook_command(script, "claude"),
                            "timeout": 10,
                        }
                    ],
                },
            ]
        }
    }
    _write(spec.config_path(home), old)
    assert edits.install("claude", home, script)
    groups = json.loads(spec.config_path(home).read_text())["hooks"]["PermissionRequest"]
    assert groups[0] == USER_HOOK_GROUP
    assert groups[1]["hooks"][0]["command"].endswith(" permission 115")


USER_HOOK_GROUP = {"matcher": "Bash", "hooks": [USER_HOOK]}


def test_codex_home_moves_codexs_hooks_and_trust(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 40 item 8: with CODEX_HOME set, `orca hooks install codex` writes its hooks
    and trust entries there (Codex reads nothing from ~/.codex then)."""
    home, moved = tmp_path / "home", tmp_path / "codex-home"
    home.mkdir()
    monkeypatch.setenv("CODEX_HOME", str(moved))
    script = install_hook_script(tmp_path / "agent-hooks")
    assert edits.install("codex", home, script) is True
    assert json.loads((moved / "hooks.json").read_text())["hooks"]["Stop"]
    assert str(moved / "hooks.json") in (moved / "config.toml").read_text()
    assert not (home / ".codex").exists()
    assert integrations.status("codex", home).installed
    assert edits.uninstall("codex", home) is True
