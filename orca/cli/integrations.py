"""``orca hooks install|uninstall``: Orca's entries written into, and cut out of, the
agents' own configs (what they are, and how they are read: ``orca.integrations``).

Editing rules (issue 12, "config edits a user can trust"):

* the file is edited *as text*, by splicing: Orca's group is inserted after the
  event's last group (or the event/``hooks`` member is inserted), and uninstall cuts
  out exactly that text - so the user's comments, key order, spacing and every byte
  Orca did not add stay as they were, and install then uninstall with no change in
  between gives the original file back byte for byte;
* Orca's handlers are recognised by the script name in their command; an Orca group
  already in place is left in place (re-install changes nothing, and a user group
  added after it keeps its index, so Codex's positional trust keys stay valid);
* a symlinked config (dotfiles) is edited at its target, the link is kept;
* before the first change the user's original is copied to ``<file>.orca-backup``;
  later writes never overwrite that backup;
* a file that is not a JSON(C) object is left alone and reported;
* the new content replaces the file with ``orca.fsio.write_atomic`` (old or new
  config after a crash, the old file's mode).

Codex trust: install writes one ``trusted_hash`` entry per Orca handler at its current
position (``orca.integrations.codex_trust_entries``) and uninstall removes them, with
tomlkit (format-preserving). Codex's legacy ``notify`` program (``notify = [argv]``,
``agent-turn-complete``) is set to the hook script only when the user has none.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions

from orca.fsio import write_atomic
from orca.hook_script import HOOK_SCRIPT_NAME
from orca.integrations import (
    HANDLER_NAME,
    INTEGRATIONS,
    AgentHookConfig,
    Node,
    UnreadableConfig,
    codex_config_path,
    codex_trust_entries,
    edit_target,
    has_orca,
    held_command,
    hook_command,
    orca_positions,
    parse_jsonc,
    read_text,
)

BACKUP_SUFFIX = ".orca-backup"


# -- splicing JSON(C) text ----------------------------------------------------------
def _indent_at(text: str, pos: int) -> str:
    line_start = text.rfind("\n", 0, pos) + 1
    prefix = text[line_start:pos]
    return prefix if not prefix.strip() else ""


def _render(value: object, indent: str, unit: str) -> str:
    rendered = json.dumps(value, indent=len(unit) or None, ensure_ascii=False)
    return rendered.replace("\n", "\n" + indent)


def _insert(text: str, node: Node, rendered_child: str, unit: str) -> str:
    """Add a child (``"key": value`` or an item) at the end of container ``node``."""
    if node.children:
        last = node.children[-1]
        first = node.key_starts[0] if node.key_starts else node.children[0].start
        indent = _indent_at(text, first)
        sep = ",\n" + indent if indent else ", "
        return text[: last.end] + sep + rendered_child + text[last.end :]
    outer = _indent_at(text, node.start)
    body = "\n" + outer + unit + rendered_child + "\n" + outer if unit else rendered_child
    return text[: node.start + 1] + body + text[node.end - 1 :]


def _child_start(node: Node, index: int) -> int:
    return node.key_starts[index] if node.key_starts else node.children[index].start


def _remove(text: str, node: Node, index: int) -> str:
    """Cut child ``index`` of ``node`` with exactly one separator (inverse of _insert)."""
    count = len(node.children)
    if count == 1:
        return text[: node.start + 1] + text[node.end - 1 :]
    if index == count - 1:
        return text[: node.children[index - 1].end] + text[node.children[index].end :]
    return text[: _child_start(node, index)] + text[_child_start(node, index + 1) :]


def _unit(text: str, root: Node) -> str:
    """The file's indent step ("" for a one-line file: Orca's text stays on one line)."""
    if root.key_starts:
        if "\n" not in text[root.start : root.end]:
            return ""
        return _indent_at(text, root.key_starts[0]) or "  "
    return "  "


# -- the edits ----------------------------------------------------------------------
def _orca_group(spec: AgentHookConfig, command: str, event: str = "") -> dict[str, object]:
    timeout = spec.timeout_for(event)
    if event in spec.held_events:  # (seconds: the unit of every agent with held events)
        command = held_command(command, timeout)
    handler: dict[str, object] = {"type": "command", "command": command, "timeout": timeout}
    if spec.named_handlers:
        handler = {"name": HANDLER_NAME, **handler}
    group: dict[str, object] = {"hooks": [handler]}
    if spec.empty_matcher:
        group = {"matcher": "", **group}
    return group


def install_text(text: str, spec: AgentHookConfig, command: str, path: Path | str) -> str:
    """``text`` with exactly one Orca group per event of ``spec`` (others untouched)."""
    if not text.strip():
        text = "{}\n"
    for event in spec.events:
        group = _orca_group(spec, command, event)
        root = parse_jsonc(text, path)
        unit = _unit(text, root)
        hooks = root.member("hooks")
        if hooks is None:
            indent = _indent_at(text, root.start) + unit
            member = f'"hooks": {_render({event: [group]}, indent, unit)}'
            text = _insert(text, root, member, unit)
            continue
        if not isinstance(hooks.value, dict):
            raise UnreadableConfig(f"'hooks' in the {spec.agent} config is not an object")
        groups = hooks.member(event)
        if groups is None:
            indent = _indent_at(text, hooks.key_starts[0]) if hooks.key_starts else ""
            indent = indent or _indent_at(text, root.key_starts[0]) + unit
            member = f"{json.dumps(event)}: {_render([group], indent, unit)}"
            text = _insert(text, hooks, member, unit)
            continue
        if not isinstance(groups.value, list):
            raise UnreadableConfig(f"hooks.{event} in the {spec.agent} config is not a list")
        ours = [i for i, g in enumerate(groups.value) if has_orca(g)]
        if any(groups.value[i] == group for i in ours):
            continue  # already in place: leave it where it is (Codex trust keys)
        if ours:  # an older Orca group (other script path): rewrite it in place
            old = groups.children[ours[0]]
            rendered = _render(group, _indent_at(text, old.start), unit)
            text = text[: old.start] + rendered + text[old.end :]
            continue
        item_indent = _indent_at(text, groups.children[0].start) if groups.children else ""
        item_indent = item_indent or _indent_at(text, groups.start) + unit
        text = _insert(text, groups, _render(group, item_indent, unit), unit)
    return text


def uninstall_text(text: str, path: Path | str, original: object = None) -> str:
    """``text`` with every Orca handler cut out, and what held only them - unless the
    user's ``original`` (the backup's value) already had that container."""
    orig_hooks = original.get("hooks") if isinstance(original, dict) else None
    while True:
        root = parse_jsonc(text, path)
        positions = orca_positions(root)
        if not positions:
            return text
        event, g, h = positions[-1]
        hooks = root.member("hooks")
        assert hooks is not None
        groups = hooks.member(event)
        assert groups is not None
        handlers = groups.children[g].member("hooks")
        assert handlers is not None
        had_event = isinstance(orig_hooks, dict) and event in orig_hooks
        if len(handlers.children) > 1:
            text = _remove(text, handlers, h)
        elif len(groups.children) > 1 or had_event:
            text = _remove(text, groups, g)
        elif len(hooks.children) > 1 or isinstance(orig_hooks, dict):
            text = _remove(text, hooks, hooks.keys.index(event))
        else:
            text = _remove(text, root, root.keys.index("hooks"))


# -- Codex trust (config.toml) ------------------------------------------------------
def update_codex_config(
    text: str, old: Mapping[str, str], new: Mapping[str, str], notify: list[str] | None
) -> str:
    """config.toml with Orca's trust entries ``old`` replaced by ``new`` (tomlkit).

    ``notify``: set the legacy notify program to it when the user has none; ``None``
    removes it only if it is Orca's. A user's own entries are never touched: an old
    key is removed only while it still holds the hash Orca wrote.
    """
    try:
        doc = tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:
        raise UnreadableConfig(f"config.toml is not valid TOML: {exc}") from None
    hooks = doc.get("hooks")
    state = hooks.get("state") if isinstance(hooks, dict) else None
    for key, digest in old.items():
        if key not in new and isinstance(state, dict):
            entry = state.get(key)
            if isinstance(entry, dict) and entry.get("trusted_hash") == digest:
                del state[key]
    if new:
        if not isinstance(hooks, dict):
            hooks = tomlkit.table(is_super_table=True)
            doc["hooks"] = hooks
        if not isinstance(state, dict):
            state = tomlkit.table(is_super_table=True)
            hooks["state"] = state
        for key, digest in new.items():
            entry = state.get(key)
            if isinstance(entry, dict):
                entry["trusted_hash"] = digest
            else:
                table = tomlkit.table()
                table["trusted_hash"] = digest
                state[key] = table
    if isinstance(state, dict) and not state and isinstance(hooks, dict):
        del hooks["state"]
    if isinstance(hooks, dict) and not hooks:
        del doc["hooks"]
    current = doc.get("notify")
    ours = isinstance(current, list) and any(HOOK_SCRIPT_NAME in str(a) for a in current)
    if notify is not None and current is None:
        doc["notify"] = notify
    elif notify is None and ours:
        del doc["notify"]
    return tomlkit.dumps(doc)


# -- files --------------------------------------------------------------------------
def _write(path: Path, old: str | None, new: str) -> bool:
    """Replace ``path``'s target with ``new`` (first backup kept); returns whether."""
    if new == old:
        return False
    target = edit_target(path)
    backup = target.with_name(target.name + BACKUP_SUFFIX)
    mode = 0o600
    if old is not None:
        if not backup.exists():
            shutil.copy2(target, backup)  # the user's original, kept for good
        mode = target.stat().st_mode & 0o777
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, new.encode(), mode=mode)
    return True


def _backup(path: Path) -> Path:
    target = edit_target(path)
    return target.with_name(target.name + BACKUP_SUFFIX)


def _original_bytes_if_same(path: Path, new: str, same: Any) -> str:
    """The user's original text (the first backup) when ``new`` means the same to the
    agent (``same(a, b)``): a round trip gives the user's bytes back, spacing and all."""
    try:
        original = _backup(path).read_text()
    except (FileNotFoundError, UnicodeDecodeError):
        return new
    try:
        return original if same(original, new) else new
    except (UnreadableConfig, tomlkit.exceptions.ParseError):
        return new


def _same_json(a: str, b: str) -> bool:
    return bool(parse_jsonc(a).value == parse_jsonc(b).value)


def _same_toml(a: str, b: str) -> bool:
    return bool(tomlkit.parse(a).unwrap() == tomlkit.parse(b).unwrap())


def _backup_value(path: Path) -> object:
    try:
        return parse_jsonc(_backup(path).read_text()).value
    except (FileNotFoundError, UnicodeDecodeError, UnreadableConfig):
        return None


def install(agent: str, home: Path, script: Path) -> bool:
    """Add Orca's handlers to ``agent``'s config; returns whether a file changed."""
    spec = INTEGRATIONS[agent]
    path = spec.config_path(home)
    old = read_text(path)
    new = install_text(old or "", spec, hook_command(script, agent), path)
    if old is None and new == "{}\n":
        return False
    changed = _write(path, old, new)
    if spec.codex_trust:
        config = codex_config_path(home)
        old_toml = read_text(config)
        toml = update_codex_config(
            old_toml or "",
            codex_trust_entries(old or "", path),
            codex_trust_entries(new, path),
            [str(script), agent],
        )
        changed = _write(config, old_toml, toml) or changed
    return changed


def uninstall(agent: str, home: Path) -> bool:
    """Remove Orca's handlers from ``agent``'s config; returns whether a file changed."""
    spec = INTEGRATIONS[agent]
    path = spec.config_path(home)
    old = read_text(path)
    if old is None:
        return False
    new = uninstall_text(old, path, _backup_value(path))
    changed = _write(path, old, _original_bytes_if_same(path, new, _same_json))
    if spec.codex_trust:
        config = codex_config_path(home)
        old_toml = read_text(config)
        if old_toml is not None:
            toml = update_codex_config(old_toml, codex_trust_entries(old, path), {}, None)
            toml = _original_bytes_if_same(config, toml, _same_toml)
            changed = _write(config, old_toml, toml) or changed
    return changed
