"""ptyd's TOML settings: ``config/ptyd.toml`` (shipped) with ``<config dir>/ptyd.toml`` on top.

The same mechanism as ``supervisor.toml`` (``actors/supervisor/config.py``): the
shipped file holds every key with its default, the user's file replaces keys one by
one. Unlike orcad's tree, a bad value must not keep ptyd - and so every terminal -
from starting: it is logged naming the file and key, and that key keeps its default.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

from actors.ptyd.archive import HistoryBudget
from orca.config_files import layered, shipped_path

log = logging.getLogger(__name__)

CONFIG_NAME = "ptyd.toml"
SHIPPED_CONFIG = shipped_path(CONFIG_NAME)
_DAY_S = 86400.0
# Fallbacks when the shipped file is missing too (a broken install).
DEFAULT_BUDGET = HistoryBudget(max_bytes=256 * 1024 * 1024, max_age_s=30 * _DAY_S)


def _section(raw: dict[str, Any], path: Path) -> dict[str, Any]:
    history = raw.get("history", {})
    if not isinstance(history, dict):
        log.error("%s: [history] must be a table; ignored", path)
        return {}
    unknown = set(history) - {"max_bytes", "max_age_days"}
    if unknown:
        log.error("%s: [history] unknown keys %s ignored", path, sorted(unknown))
    return history


def _apply(budget: HistoryBudget, history: dict[str, Any], path: Path) -> HistoryBudget:
    max_bytes, max_age_s = budget.max_bytes, budget.max_age_s
    if "max_bytes" in history:
        value = history["max_bytes"]
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            max_bytes = value
        else:
            log.error("%s: [history] max_bytes must be an integer >= 0; kept %d", path, max_bytes)
    if "max_age_days" in history:
        value = history["max_age_days"]
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if ok and math.isfinite(value) and value >= 0:
            max_age_s = float(value) * _DAY_S
        else:
            log.error("%s: [history] max_age_days must be a number >= 0; kept", path)
    return HistoryBudget(max_bytes=max_bytes, max_age_s=max_age_s)


def load_budget(config_dir: Path, shipped: Path = SHIPPED_CONFIG) -> HistoryBudget:
    """The ended-history budget: shipped defaults, then the user's keys."""
    budget = DEFAULT_BUDGET
    for path, raw in layered(
        CONFIG_NAME, config_dir, on_error="log", shipped_file=shipped, log=log
    ):
        budget = _apply(budget, _section(raw, path), path)
    return budget


def load_resume_on_start(config_dir: Path, shipped: Path = SHIPPED_CONFIG) -> bool:
    """``resume_on_start``: after a reboot, ptyd resumes every agent that was running
    (``actors/ptyd/resume_on_start.py``). A value that is not a boolean is logged and the
    key keeps its earlier value."""
    enabled = False
    for path, raw in layered(
        CONFIG_NAME, config_dir, on_error="log", shipped_file=shipped, log=log
    ):
        if "resume_on_start" not in raw:
            continue
        value = raw["resume_on_start"]
        if isinstance(value, bool):
            enabled = value
        else:
            log.error("%s: resume_on_start must be true or false; kept %s", path, enabled)
    return enabled
