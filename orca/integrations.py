"""Orca's entries in the agents' own configs, as ``orca hooks status`` reads them.

Each agent keeps hooks in a JSON file under the user's home, in the same three-level
shape - event name → list of matcher groups → list of handlers:

* Claude Code: ``~/.claude/settings.json`` (``timeout`` in seconds;
  https://code.claude.com/docs/en/hooks);
* Codex: ``~/.codex/hooks.json`` (``timeout`` in seconds;
  https://developers.openai.com/codex/hooks), plus trust entries in
  ``~/.codex/config.toml`` (below);
* Gemini CLI: ``~/.gemini/settings.json`` (``timeout`` in milliseconds, ``name``;
  JSON *with comments*, parsed by Gemini with strip-json-comments -
  ``packages/cli/src/config/settings.ts``; docs/hooks/reference.md).

Codex trust: Codex runs a non-managed command hook only when
``[hooks.state."<hooks.json path>:<event>:<group>:<handler>"] trusted_hash`` in
``config.toml`` matches the hook's identity hash ("Non-managed command hooks must be
reviewed and trusted before they run", developers.openai.com/codex/hooks;
``codex-rs/hooks/src/engine/discovery.rs``). :func:`codex_trust_hash` computes it
(sha256 of the canonical JSON identity ``{event_name, matcher?, hooks: [handler]}``);
``orca hooks install`` writes one entry per Orca handler at its current position and
uninstall removes them (``orca.cli.integrations``).

Held events (issue 27): the ``PermissionRequest`` handler runs the hook script's
``permission`` mode (``<agent> permission <hold>``) with a timeout of its own
(``AgentHookConfig.held_events``), the hold ``HOLD_MARGIN_S`` shorter, so the script
answers (a verdict, or ``{}``) before the agent gives up on it.

Read here (the agents' table, the JSONC parser, Codex's trust hashes, :func:`status`):
the CLI and the UI's palette (``actors/ui/hook_offers.py``) read the same way. The edits
(``orca hooks install|uninstall``) are the CLI's: ``orca.cli.integrations``. Imports
neither trio nor ``actors.*``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions

from orca.hook_script import HOOK_SCRIPT_NAME, PERMISSION_MODE

HANDLER_NAME = "orca-agent-status"


class UnreadableConfig(Exception):
    """The agent's config file exists but cannot be read as a JSON object; we will not
    edit it (``orca hooks status`` shows it as that agent's error)."""


@dataclass(frozen=True)
class AgentHookConfig:
    agent: str
    relative_path: str
    events: tuple[str, ...]
    # Each agent's timeout unit: the script itself gives up after a few seconds.
    timeout: int
    named_handlers: bool = False
    empty_matcher: bool = False
    codex_trust: bool = False
    # Events whose hook Orca holds until a verdict (issue 27: the hook script's
    # ``permission`` mode), each with the timeout (the agent's unit) the agent gives it.
    held_events: Mapping[str, int] = field(default_factory=dict)
    # The variable that moves the agent's whole config folder (Codex: ``CODEX_HOME``,
    # default ``~/.codex``); set, the file is looked for there (issue 40 item 8).
    dir_env: str | None = None

    def config_path(self, home: Path, environ: Mapping[str, str] | None = None) -> Path:
        moved = _moved_dir(self.dir_env, environ)
        if moved is not None:
            return moved / Path(self.relative_path).name
        return home / self.relative_path

    def timeout_for(self, event: str) -> int:
        """The handler's timeout for ``event``: a held event's own, else the default."""
        return self.held_events.get(event, self.timeout)


INTEGRATIONS: Mapping[str, AgentHookConfig] = {
    # https://code.claude.com/docs/en/hooks: StopFailure replaces Stop when an API error
    # ends the turn; PostToolUseFailure follows a failed tool; PermissionDenied an
    # auto-mode denial (Claude carries on); SubagentStop a subagent finishing.
    "claude": AgentHookConfig(
        "claude",
        ".claude/settings.json",
        (
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "PostToolUseFailure",
            "PermissionRequest",
            "PermissionDenied",
            "Notification",
            "Stop",
            "StopFailure",
            "SubagentStop",
            "SessionEnd",
        ),
        timeout=10,
        empty_matcher=True,
        # "PermissionRequest: runs when the user is shown a permission dialog" (the
        # hooks reference): the dialog is up while Orca holds, so the user at the
        # terminal loses nothing by a longer hold; two minutes to answer from a phone.
        held_events={"PermissionRequest": 120},
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
        codex_trust=True,
        dir_env="CODEX_HOME",
        # Codex runs the hook "in the approval path, before guardian or user approval UI
        # is shown" (codex-rs/hooks/src/events/permission_request.rs): its own prompt
        # appears only when the hold ends, so the hold is shorter.
        held_events={"PermissionRequest": 60},
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
    # Codex only: Orca handlers whose trust entry is missing or stale.
    untrusted_events: tuple[str, ...] = ()

    @property
    def installed(self) -> bool:
        return not self.missing_events and not self.untrusted_events


def _is_orca_handler(handler: object) -> bool:
    if not isinstance(handler, dict):
        return False
    command = handler.get("command")
    return isinstance(command, str) and HOOK_SCRIPT_NAME in command


def hook_command(script: Path, agent: str) -> str:
    return f"{shlex.quote(str(script))} {agent}"


# A held hook's script must answer before the agent's timeout ends it (seconds).
HOLD_MARGIN_S = 5


def held_command(command: str, timeout_s: int) -> str:
    """A held event's handler command (``hook_command``'s, in the script's ``permission``
    mode): it holds at most ``timeout_s - HOLD_MARGIN_S`` seconds (at least one)."""
    return f"{command} {PERMISSION_MODE} {max(1, timeout_s - HOLD_MARGIN_S)}"


# -- JSON with comments, as spans ---------------------------------------------------
@dataclass
class Node:
    """One JSON value in the text: ``[start, end)``; containers keep their children."""

    start: int
    end: int
    value: Any = None
    keys: list[str] = field(default_factory=list)  # objects: member keys, in order
    key_starts: list[int] = field(default_factory=list)  # objects: where each key starts
    children: list[Node] = field(default_factory=list)  # members' values / items

    def member(self, key: str) -> Node | None:
        return self.children[self.keys.index(key)] if key in self.keys else None


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> UnreadableConfig:
        return UnreadableConfig(f"{what} at offset {self.pos}")

    def skip(self) -> None:
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch in " \t\r\n\ufeff":
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.fail("unterminated comment")
                self.pos = end + 2
            else:
                return

    def value(self) -> Node:
        self.skip()
        if self.pos >= len(self.text):
            raise self.fail("unexpected end")
        ch = self.text[self.pos]
        if ch == "{":
            return self.container("}", True)
        if ch == "[":
            return self.container("]", False)
        start = self.pos
        if ch == '"':
            self.string()
        else:
            while self.pos < len(self.text) and self.text[self.pos] not in ",]} \t\r\n/":
                self.pos += 1
        try:
            scalar = json.loads(self.text[start : self.pos])
        except ValueError:
            raise self.fail("bad value") from None
        return Node(start, self.pos, scalar)

    def string(self) -> str:
        start = self.pos
        self.pos += 1
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch == "\\":
                self.pos += 2
                continue
            self.pos += 1
            if ch == '"':
                return str(json.loads(self.text[start : self.pos]))
        raise self.fail("unterminated string")

    def container(self, close: str, is_object: bool) -> Node:
        node = Node(self.pos, self.pos)
        self.pos += 1
        while True:
            self.skip()
            if self.text.startswith(close, self.pos):
                break
            if node.children:
                if not self.text.startswith(",", self.pos):
                    raise self.fail("expected ','")
                self.pos += 1
                self.skip()
            if is_object:
                if not self.text.startswith('"', self.pos):
                    raise self.fail("expected a key")
                node.key_starts.append(self.pos)
                node.keys.append(self.string())
                self.skip()
                if not self.text.startswith(":", self.pos):
                    raise self.fail("expected ':'")
                self.pos += 1
            node.children.append(self.value())
        self.pos += 1
        node.end = self.pos
        if is_object:
            node.value = {k: c.value for k, c in zip(node.keys, node.children, strict=True)}
        else:
            node.value = [c.value for c in node.children]
        return node


def parse_jsonc(text: str, path: Path | str = "config") -> Node:
    """The root object of a JSON-with-comments text (raises UnreadableConfig)."""
    parser = _Parser(text)
    try:
        root = parser.value()
        parser.skip()
    except UnreadableConfig as exc:
        raise UnreadableConfig(f"{path} is not valid JSON: {exc}") from None
    if parser.pos != len(text):
        raise UnreadableConfig(f"{path} is not valid JSON: trailing text at {parser.pos}")
    if not isinstance(root.value, dict):
        raise UnreadableConfig(f"{path} does not hold a JSON object")
    return root


# -- Orca's handlers in a config ----------------------------------------------------
def orca_positions(root: Node) -> list[tuple[str, int, int]]:
    """(event, group index, handler index) of every Orca handler in the file."""
    found: list[tuple[str, int, int]] = []
    hooks = root.member("hooks")
    if hooks is None or not isinstance(hooks.value, dict):
        return found
    for event, groups in zip(hooks.keys, hooks.children, strict=True):
        if not isinstance(groups.value, list):
            continue
        for g, group in enumerate(groups.children):
            handlers = group.member("hooks") if isinstance(group.value, dict) else None
            if handlers is None or not isinstance(handlers.value, list):
                continue
            for h, handler in enumerate(handlers.value):
                if _is_orca_handler(handler):
                    found.append((event, g, h))
    return found


def has_orca(group: object) -> bool:
    handlers = group.get("hooks") if isinstance(group, dict) else None
    return isinstance(handlers, list) and any(map(_is_orca_handler, handlers))


# -- Codex trust (config.toml) ------------------------------------------------------
CODEX_EVENT_KEYS: Mapping[str, str] = {
    "PreToolUse": "pre_tool_use",
    "PermissionRequest": "permission_request",
    "PostToolUse": "post_tool_use",
    "PreCompact": "pre_compact",
    "PostCompact": "post_compact",
    "SessionStart": "session_start",
    "SessionEnd": "session_end",
    "UserPromptSubmit": "user_prompt_submit",
    "SubagentStart": "subagent_start",
    "SubagentStop": "subagent_stop",
    "Stop": "stop",
}
# Codex ignores a matcher on these events, and leaves it out of the identity.
_CODEX_MATCHERLESS = frozenset({"UserPromptSubmit", "Stop"})
_CODEX_DEFAULT_TIMEOUT_S = 600


def codex_trust_hash(event: str, command: str, timeout: int | None, matcher: str | None) -> str:
    """The ``trusted_hash`` Codex expects for one command handler (``sha256:<hex>``).

    Codex hashes the handler's normalized identity: event (snake case), matcher (not
    for matcherless events), one handler ``{type, command, timeout (default 600,
    at least 1), async}``, serialized as canonical (key-sorted, compact) JSON.
    """
    handler = {
        "type": "command",
        "command": command,
        "timeout": max(1, _CODEX_DEFAULT_TIMEOUT_S if timeout is None else timeout),
        "async": False,
    }
    identity: dict[str, object] = {"event_name": CODEX_EVENT_KEYS[event], "hooks": [handler]}
    if matcher is not None and event not in _CODEX_MATCHERLESS:
        identity["matcher"] = matcher
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def codex_trust_entries(hooks_text: str, hooks_path: Path) -> dict[str, str]:
    """``hooks.state`` key → hash for every Orca handler of a Codex hooks.json."""
    if not hooks_text.strip():
        return {}
    root = parse_jsonc(hooks_text, hooks_path)
    entries: dict[str, str] = {}
    for event, g, h in orca_positions(root):
        if event not in CODEX_EVENT_KEYS:
            continue
        group = root.value["hooks"][event][g]
        handler = group["hooks"][h]
        timeout = handler.get("timeout")
        matcher = group.get("matcher")
        key = f"{hooks_path}:{CODEX_EVENT_KEYS[event]}:{g}:{h}"
        entries[key] = codex_trust_hash(
            event,
            handler["command"],
            timeout if isinstance(timeout, int) else None,
            matcher if isinstance(matcher, str) else None,
        )
    return entries


# -- files --------------------------------------------------------------------------
def edit_target(path: Path) -> Path:
    """Where to edit: a symlinked config (dotfiles) is edited at its target."""
    return path.resolve() if path.is_symlink() else path


def read_text(path: Path) -> str | None:
    """The file's text; None when there is none. One that cannot be read (not UTF-8, a
    directory, no permission) is an :class:`UnreadableConfig`, never edited."""
    try:
        return edit_target(path).read_text()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise UnreadableConfig(f"{path} is not UTF-8 text") from None
    except OSError as exc:
        raise UnreadableConfig(f"{path} cannot be read: {exc.strerror or exc}") from None


def _moved_dir(name: str | None, environ: Mapping[str, str] | None) -> Path | None:
    """The folder ``$name`` names, if set (``environ``: this process's by default)."""
    if name is None:
        return None
    value = (os.environ if environ is None else environ).get(name)
    return Path(value) if value else None


def codex_config_path(home: Path) -> Path:
    return (_moved_dir("CODEX_HOME", None) or home / ".codex") / "config.toml"


def read_config(path: Path) -> dict[str, object]:
    text = read_text(path)
    if text is None or not text.strip():
        return {}
    value: dict[str, object] = parse_jsonc(text, path).value
    return value


def installed_events(config: Mapping[str, object]) -> list[str]:
    hooks = config.get("hooks")
    if not isinstance(hooks, dict):
        return []
    return [
        e for e, groups in hooks.items() if isinstance(groups, list) and any(map(has_orca, groups))
    ]


def status(agent: str, home: Path) -> IntegrationStatus:
    spec = INTEGRATIONS[agent]
    path = spec.config_path(home)
    present = set(installed_events(read_config(path)))
    untrusted: tuple[str, ...] = ()
    if spec.codex_trust:
        wanted = codex_trust_entries(read_text(path) or "", path)
        try:
            doc = tomlkit.parse(read_text(codex_config_path(home)) or "").unwrap()
        except tomlkit.exceptions.ParseError:
            doc = {}
        state = doc.get("hooks", {}).get("state", {})
        untrusted = tuple(
            sorted(
                {
                    key.split(":")[-3]
                    for key, digest in wanted.items()
                    if state.get(key, {}).get("trusted_hash") != digest
                }
            )
        )
    return IntegrationStatus(
        agent=agent,
        config_path=path,
        installed_events=tuple(e for e in spec.events if e in present),
        missing_events=tuple(e for e in spec.events if e not in present),
        untrusted_events=untrusted,
    )
