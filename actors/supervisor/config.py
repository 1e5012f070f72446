"""The supervision tree as declared in TOML: shipped defaults plus the user's overrides.

Every value is validated here, where it is parsed, so a bad setting stops ``orcad``
before it starts anything (``ConfigError`` names the file and the key): durations are
finite numbers, the heartbeat and readiness timeouts are > 0 and the heartbeat timeout
outlasts its interval, and ``tcp_host`` is a loopback address (``check_tcp_host``: the
rule every bind obeys). ``ORCA_TCP_HOST`` in orcad's environment overrides
``tcp_host``; either way the one value is what orcad binds and what its actors get.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal

from orca.actor.endpoints import TCP_HOST_ENV, BadTcpHost, check_tcp_host
from orca.config_files import ConfigFileError, read_toml, shipped_path
from orca.paths import OrcaPaths

SHIPPED_CONFIG = shipped_path("supervisor.toml")
CONFIG_NAME = "supervisor.toml"

Restart = Literal["permanent", "transient", "temporary"]
Strategy = Literal["one_for_one", "rest_for_one"]
_NAME_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}")
_MODULE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


class ConfigError(ValueError):
    """The supervisor configuration is invalid; the message names the file and the key."""


@dataclass(frozen=True)
class ChildSpec:
    name: str
    module: str
    restart: Restart = "permanent"
    shutdown_grace_s: float | None = None  # None: the supervisor-wide grace
    args: tuple[str, ...] = ()
    # Off children are not part of the tree (``web``, issue 27: off unless enabled).
    enabled: bool = True


@dataclass(frozen=True)
class SupervisorSpec:
    children: tuple[ChildSpec, ...]
    strategy: Strategy = "one_for_one"
    intensity: int = 5
    period_s: float = 60.0
    backoff_initial_s: float = 0.25
    backoff_max_s: float = 8.0
    stable_after_s: float = 10.0
    heartbeat_interval_s: float = 30.0
    heartbeat_timeout_s: float = 90.0
    ready_timeout_s: float = 15.0
    shutdown_grace_s: float = 5.0
    log_max_bytes: int = 5_000_000
    log_backups: int = 3
    tcp_host: str = ""

    def grace_for(self, child: ChildSpec) -> float:
        return self.shutdown_grace_s if child.shutdown_grace_s is None else child.shutdown_grace_s

    def child(self, name: str) -> ChildSpec:
        for c in self.children:
            if c.name == name:
                return c
        raise KeyError(name)


_NUMBER_KEYS = {f.name for f in fields(SupervisorSpec)} - {"children", "strategy", "tcp_host"}
_INT_KEYS = {"intensity", "log_max_bytes", "log_backups"}
# Zero would kill every actor at once (or never let one be ready): must be > 0.
_POSITIVE_KEYS = {"heartbeat_interval_s", "heartbeat_timeout_s", "ready_timeout_s"}


def _number(key: str, value: Any, where: str) -> float | int:
    """``value`` as ``key`` needs it: an int for counts, else a finite float; >= 0
    (> 0 for the heartbeat and readiness timings)."""
    if key in _INT_KEYS:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{where}: {key} must be an integer >= 0, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{where}: {key} must be a finite number, got {value!r}")
    if key in _POSITIVE_KEYS and value <= 0:
        raise ConfigError(f"{where}: {key} must be > 0, got {value!r}")
    if value < 0:
        raise ConfigError(f"{where}: {key} must be a number >= 0, got {value!r}")
    return float(value)


def _tcp_host(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{where}: tcp_host must be a string")
    if not value:
        return value  # ipc only
    try:
        return check_tcp_host(value)
    except BadTcpHost as exc:
        raise ConfigError(f"{where}: tcp_host {exc}") from None


def _parse_child(raw: Any, where: str) -> ChildSpec:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: each [[child]] must be a table")
    name, module = raw.get("name"), raw.get("module")
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise ConfigError(f"{where}: child name {name!r} must match {_NAME_RE.pattern}")
    if not isinstance(module, str) or not _MODULE_RE.fullmatch(module):
        raise ConfigError(f"{where}: child {name}: module {module!r} is not a dotted module name")
    restart = raw.get("restart", "permanent")
    if restart not in ("permanent", "transient", "temporary"):
        raise ConfigError(f"{where}: child {name}: restart must be permanent|transient|temporary")
    grace = raw.get("shutdown_grace_s")
    if grace is not None and (
        isinstance(grace, bool)
        or not isinstance(grace, int | float)
        or not math.isfinite(grace)
        or grace < 0
    ):
        raise ConfigError(f"{where}: child {name}: shutdown_grace_s must be a finite number >= 0")
    args = raw.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"{where}: child {name}: args must be a list of strings")
    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{where}: child {name}: enabled must be true or false")
    unknown = set(raw) - {"name", "module", "restart", "shutdown_grace_s", "args", "enabled"}
    if unknown:
        raise ConfigError(f"{where}: child {name}: unknown keys {sorted(unknown)}")
    return ChildSpec(
        name, module, restart, None if grace is None else float(grace), tuple(args), enabled
    )


def _enable(children: tuple[ChildSpec, ...], raw: Any, where: str) -> tuple[ChildSpec, ...]:
    """``[enable]``: turn children of the tree on or off by name (``web = true``),
    without restating the whole ``[[child]]`` list."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: [enable] must be a table of child names = true/false")
    known = {c.name for c in children}
    for name, value in raw.items():
        if name not in known:
            raise ConfigError(f"{where}: [enable] names no child {name!r} (known: {sorted(known)})")
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: [enable] {name} must be true or false")
    return tuple(replace(c, enabled=raw.get(c.name, c.enabled)) for c in children)


def _apply(spec: SupervisorSpec, doc: dict[str, Any], where: str) -> SupervisorSpec:
    sup = doc.get("supervisor", {})
    if not isinstance(sup, dict):
        raise ConfigError(f"{where}: [supervisor] must be a table")
    changes: dict[str, Any] = {}
    for key, value in sup.items():
        if key == "strategy":
            if value not in ("one_for_one", "rest_for_one"):
                raise ConfigError(f"{where}: strategy must be one_for_one or rest_for_one")
            changes[key] = value
        elif key == "tcp_host":
            changes[key] = _tcp_host(value, where)
        elif key in _NUMBER_KEYS:
            changes[key] = _number(key, value, where)
        else:
            raise ConfigError(f"{where}: unknown [supervisor] key {key!r}")
    if "child" in doc:
        raw_children = doc["child"]
        if not isinstance(raw_children, list):
            raise ConfigError(f"{where}: child must be an array of tables ([[child]])")
        children = tuple(_parse_child(c, where) for c in raw_children)
        names = [c.name for c in children]
        if len(set(names)) != len(names):
            raise ConfigError(f"{where}: duplicate child names in {names}")
        changes["children"] = children
    if "enable" in doc:
        changes["children"] = _enable(changes.get("children", spec.children), doc["enable"], where)
    unknown_top = set(doc) - {"supervisor", "child", "enable"}
    if unknown_top:
        raise ConfigError(f"{where}: unknown top-level keys {sorted(unknown_top)}")
    return replace(spec, **changes)


def _read(path: Path) -> dict[str, Any]:
    """The TOML document at ``path``; anything unreadable is a ``ConfigError`` naming it."""
    try:
        return read_toml(path, on_error="raise", missing_ok=False)
    except ConfigFileError as exc:
        raise ConfigError(str(exc)) from None


def load_config(
    paths: OrcaPaths,
    shipped: Path = SHIPPED_CONFIG,
    environ: Mapping[str, str] | None = None,
) -> SupervisorSpec:
    """The shipped tree with the user's ``supervisor.toml`` applied on top, validated;
    then ``ORCA_TCP_HOST`` from ``environ`` (default: ours), if set, as ``tcp_host``."""
    where = str(shipped)
    spec = _apply(SupervisorSpec(children=()), _read(shipped), where)
    override = paths.config_dir / CONFIG_NAME
    if os.path.lexists(override):  # a dangling symlink is an error, not "no override"
        where = str(override)
        spec = _apply(spec, _read(override), where)
    spec = replace(spec, children=tuple(c for c in spec.children if c.enabled))
    if not spec.children:
        raise ConfigError("the supervision tree has no children")
    if spec.heartbeat_timeout_s <= spec.heartbeat_interval_s:
        raise ConfigError(
            f"{where}: heartbeat_timeout_s ({spec.heartbeat_timeout_s:g}) must be longer than"
            f" heartbeat_interval_s ({spec.heartbeat_interval_s:g}), or healthy actors are killed"
        )
    env_host = (os.environ if environ is None else environ).get(TCP_HOST_ENV)
    if env_host:
        spec = replace(spec, tcp_host=_tcp_host(env_host, f"environment {TCP_HOST_ENV}"))
    return spec
