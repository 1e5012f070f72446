"""The vault's settings: where the agents keep transcripts, how fast and how much to index.

``config/vault.toml`` (shipped, every key with its default) with
``<config dir>/vault.toml`` on top, key by key; a bad value is logged and keeps its
default (the vault must start whatever the file says). The agents' own variables
decide their directories unless the file names them, as the agents themselves do:
``CLAUDE_CONFIG_DIR`` (Claude Code; several, comma-separated), ``CODEX_HOME`` (Codex),
``GEMINI_CLI_HOME`` (the home Gemini CLI puts ``.gemini`` in); else the agents' default
directories in ``$HOME`` - except under ``ORCA_HOME``, which isolates an Orca profile
(or a test, or a benchmark) from the user's home: there only directories named
explicitly (the agents' variables, the file) are read. ``ORCA_VAULT_CLAUDE_DIRS``,
``ORCA_VAULT_CODEX_DIRS``, ``ORCA_VAULT_GEMINI_DIRS`` (``:``-separated; empty: none)
override everything (tests point them at their own directories).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orca.config_files import layered, shipped_path

log = logging.getLogger(__name__)

CONFIG_NAME = "vault.toml"
SHIPPED_CONFIG = shipped_path(CONFIG_NAME)
ROOT_ENV = {
    "claude": "ORCA_VAULT_CLAUDE_DIRS",
    "codex": "ORCA_VAULT_CODEX_DIRS",
    "gemini": "ORCA_VAULT_GEMINI_DIRS",
}
# Each agent's own variable for where it writes (module docstring).
AGENT_ENV = {"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME", "gemini": "GEMINI_CLI_HOME"}
_NUMBERS: dict[str, tuple[type, float, float]] = {
    "scan_interval_s": (float, 0.05, 3600.0),
    "step_bytes": (int, 4096, 1 << 30),
    "max_entries": (int, 1, 1 << 40),
    "max_text_bytes": (int, 1, 1 << 50),
}


@dataclass(frozen=True)
class VaultConfig:
    roots: dict[str, list[str]]
    # An agent with no root: why none is named (said by ``vault.status``).
    no_roots: dict[str, str] = field(default_factory=dict)
    scan_interval_s: float = 5.0
    step_bytes: int = 4 * 1024 * 1024
    max_entries: int = 2_000_000
    max_text_bytes: int = 1024 * 1024 * 1024


def _section(path: Path, doc: dict[str, Any]) -> dict[str, Any]:
    section = doc.get("vault", {})
    if not isinstance(section, dict):
        log.error("%s: [vault] must be a table; ignored", path)
        return {}
    return section


def default_roots(environ: Mapping[str, str]) -> dict[str, list[str]]:
    """Where each agent writes when nothing says otherwise (the agents' own rules; only
    their explicit variables under ORCA_HOME)."""
    isolated = bool(environ.get("ORCA_HOME"))
    home = environ.get("HOME") or os.path.expanduser("~")
    claude_env = environ.get("CLAUDE_CONFIG_DIR", "")
    claude = [p for p in (s.strip() for s in claude_env.split(",")) if p]
    if not claude and not isolated:
        claude = [os.path.join(home, ".claude"), os.path.join(home, ".config", "claude")]
    codex_home = environ.get("CODEX_HOME") or ("" if isolated else os.path.join(home, ".codex"))
    gemini_home = environ.get("GEMINI_CLI_HOME") or ("" if isolated else home)
    return {
        "claude": claude,
        "codex": [codex_home] if codex_home else [],
        "gemini": [os.path.join(gemini_home, ".gemini")] if gemini_home else [],
    }


def load_config(config_dir: Path, environ: Mapping[str, str] = os.environ) -> VaultConfig:
    settings: dict[str, Any] = {}
    for path, doc in layered(
        CONFIG_NAME, config_dir, on_error="log", shipped_file=SHIPPED_CONFIG, log=log
    ):
        for key, value in _section(path, doc).items():
            settings[key] = (value, path)
    roots = default_roots(environ)
    for agent in roots:
        if agent in settings:
            value, path = settings[agent]
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                if value:
                    roots[agent] = [os.path.expanduser(v) for v in value]
            else:
                log.error("%s: [vault] %s must be a list of directories; ignored", path, agent)
        env = environ.get(ROOT_ENV[agent])
        if env is not None:
            roots[agent] = [p for p in env.split(os.pathsep) if p]
    numbers: dict[str, Any] = {}
    for key, (kind, low, high) in _NUMBERS.items():
        if key not in settings:
            continue
        value, path = settings[key]
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok and low <= value <= high and (kind is float or isinstance(value, int)):
            numbers[key] = kind(value)
        else:
            log.error(
                "%s: [vault] %s must be a number in [%s, %s]; default kept", path, key, low, high
            )
    no_roots = {agent: _why_no_root(agent, environ) for agent, dirs in roots.items() if not dirs}
    interval = environ.get("ORCA_VAULT_SCAN_S")
    if interval:
        try:
            numbers["scan_interval_s"] = min(max(float(interval), 0.05), 3600.0)
        except ValueError:
            log.error("ORCA_VAULT_SCAN_S=%r is not a number; ignored", interval)
    return VaultConfig(roots=roots, no_roots=no_roots, **numbers)


def _why_no_root(agent: str, environ: Mapping[str, str]) -> str:
    if environ.get(ROOT_ENV[agent]) is not None:
        return f"{ROOT_ENV[agent]} is empty"
    named = f"{AGENT_ENV[agent]} or `{agent} = [...]` in {CONFIG_NAME}"
    if environ.get("ORCA_HOME"):
        return f"under ORCA_HOME only directories named are read: {named}"
    return f"none named: {named}"
