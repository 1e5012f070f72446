"""``orca hooks install|uninstall|status``: Orca's entries in the agents' own configs.

Each agent keeps hooks in a JSON file under the user's home, in the same three-level
shape - event name → list of matcher groups → list of handlers:

* Claude Code: ``~/.claude/settings.json`` (``timeout`` in seconds);
* Codex: ``~/.codex/hooks.json`` (``timeout`` in seconds);
* Gemini CLI: ``~/.gemini/settings.json`` (``timeout`` in milliseconds, ``name``).

Editing rules: Orca's handlers are recognised by the script name in their command;
install removes any earlier Orca handler and adds exactly one group per event, so
running it twice changes nothing; the user's own groups, handlers and every other key
are kept as they were; a file about to change is first copied to ``<file>.orca-backup``;
a file that is not a JSON object is left alone and reported (the user's fault, and
overwriting it would lose their settings); the new content replaces the file with
``orca.fsio.write_atomic`` (a crash leaves the old config or the new one, with the old
file's mode).

Only the CLI uses this module (no actor edits an agent's config); it imports neither
trio nor ``actors.*``.
"""

from __future__ import annotations

import copy
import json
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from orca.fsio import write_atomic
from orca.hook_script import HOOK_SCRIPT_NAME

BACKUP_SUFFIX = ".orca-backup"
HANDLER_NAME = "orca-agent-status"


class UnreadableConfig(Exception):
    """The agent's config file exists but is not a JSON object; we will not edit it."""


@dataclass(frozen=True)
class AgentHookConfig:
    agent: str
    relative_path: str
    events: tuple[str, ...]
    # Each agent's timeout unit: the script itself gives up after a few seconds.
    timeout: int
    named_handlers: bool = False
    empty_matcher: bool = False

    def config_path(self, home: Path) -> Path:
        return home / self.relative_path


INTEGRATIONS: Mapping[str, AgentHookConfig] = {
    "claude": AgentHookConfig(
        "claude",
        ".claude/settings.json",
        (
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "PermissionRequest",
            "Notification",
            "Stop",
            "SubagentStop",
            "SessionEnd",
        ),
        timeout=10,
        empty_matcher=True,
    ),
    "codex": AgentHookConfig(
        "codex",
        ".codex/hooks.json",
        (
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PermissionRequest",
            "PostToolUse",
            "Stop",
        ),
        timeout=10,
    ),
    "gemini": AgentHookConfig(
        "gemini",
        ".gemini/settings.json",
        (
            "SessionStart",
            "BeforeAgent",
            "BeforeTool",
            "AfterTool",
            "Notification",
            "AfterAgent",
            "SessionEnd",
        ),
        timeout=10_000,
        named_handlers=True,
    ),
}


@dataclass(frozen=True)
class IntegrationStatus:
    agent: str
    config_path: Path
    installed_events: tuple[str, ...]
    missing_events: tuple[str, ...]

    @property
    def installed(self) -> bool:
        return not self.missing_events


def _is_orca_handler(handler: object) -> bool:
    if not isinstance(handler, dict):
        return False
    command = handler.get("command")
    return isinstance(command, str) and HOOK_SCRIPT_NAME in command


def hook_command(script: Path, agent: str) -> str:
    return f"{shlex.quote(str(script))} {agent}"


def without_orca_hooks(config: Mapping[str, object]) -> dict[str, object]:
    """``config`` with every Orca handler removed and nothing else changed."""
    result = copy.deepcopy(dict(config))
    hooks = result.get("hooks")
    if not isinstance(hooks, dict):
        return result
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list) or not any(map(_is_orca_handler, handlers)):
                kept_groups.append(group)
                continue
            remaining = [h for h in handlers if not _is_orca_handler(h)]
            if remaining:
                kept_groups.append({**group, "hooks": remaining})
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if not hooks:
        del result["hooks"]
    return result


def with_orca_hooks(
    config: Mapping[str, object], spec: AgentHookConfig, command: str
) -> dict[str, object]:
    """``config`` with exactly one Orca handler group per event of ``spec``."""
    result = without_orca_hooks(config)
    hooks = result.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise UnreadableConfig(f"'hooks' in the {spec.agent} config is not an object")
    handler: dict[str, object] = {"type": "command", "command": command, "timeout": spec.timeout}
    if spec.named_handlers:
        handler = {"name": HANDLER_NAME, **handler}
    for event in spec.events:
        group: dict[str, object] = {"hooks": [handler]}
        if spec.empty_matcher:
            group = {"matcher": "", **group}
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise UnreadableConfig(f"hooks.{event} in the {spec.agent} config is not a list")
        groups.append(group)
    return result


def installed_events(config: Mapping[str, object]) -> list[str]:
    hooks = config.get("hooks")
    if not isinstance(hooks, dict):
        return []
    found = []
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else []:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(handlers, list) and any(map(_is_orca_handler, handlers)):
                found.append(event)
                break
    return found


def read_config(path: Path) -> dict[str, object]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    if not text.strip():
        return {}
    try:
        config = json.loads(text)
    except ValueError as exc:
        raise UnreadableConfig(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(config, dict):
        raise UnreadableConfig(f"{path} does not hold a JSON object")
    return config


def write_config(path: Path, old: Mapping[str, object], new: Mapping[str, object]) -> bool:
    """Back up and atomically replace ``path`` when ``new`` differs; returns whether."""
    if new == old and (path.exists() or not new):
        return False
    mode = 0o600
    if path.exists():
        shutil.copy2(path, path.with_name(path.name + BACKUP_SUFFIX))
        mode = path.stat().st_mode & 0o777
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, (json.dumps(new, indent=2, ensure_ascii=False) + "\n").encode(), mode=mode)
    return True


def install(agent: str, home: Path, script: Path) -> bool:
    """Add Orca's handlers to ``agent``'s config; returns whether the file changed."""
    spec = INTEGRATIONS[agent]
    path = spec.config_path(home)
    old = read_config(path)
    return write_config(path, old, with_orca_hooks(old, spec, hook_command(script, agent)))


def uninstall(agent: str, home: Path) -> bool:
    """Remove Orca's handlers from ``agent``'s config; returns whether the file changed."""
    path = INTEGRATIONS[agent].config_path(home)
    if not path.exists():
        return False
    old = read_config(path)
    return write_config(path, old, without_orca_hooks(old))


def status(agent: str, home: Path) -> IntegrationStatus:
    spec = INTEGRATIONS[agent]
    path = spec.config_path(home)
    present = set(installed_events(read_config(path)))
    return IntegrationStatus(
        agent=agent,
        config_path=path,
        installed_events=tuple(e for e in spec.events if e in present),
        missing_events=tuple(e for e in spec.events if e not in present),
    )
