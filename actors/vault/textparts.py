"""Bounded text out of agents' JSON documents: content blocks, tool calls, timestamps. Pure.

Every row the index stores is cut here, at the boundary, so no transcript can make one
row (or one parse) unbounded: a tool's output is cut at :data:`TOOL_OUTPUT_CHARS` (a
`cat` of a log would otherwise dominate the index and every search), any other text at
:data:`TEXT_CHARS`. Walking a nested value stops at :data:`MAX_WALK_DEPTH` and at the
character budget, whichever comes first.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

# One tool output per row: enough to find an error message or a path in it; the
# whole output stays in the agent's own transcript.
TOOL_OUTPUT_CHARS = 2_000
# A prompt or an answer: long ones (a pasted file) are cut, the start is what is searched.
TEXT_CHARS = 32_000
# Tool inputs are JSON the model wrote (a command, a path, a patch); cut like an output.
TOOL_INPUT_CHARS = 2_000
MAX_WALK_DEPTH = 16


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit]


def collect_strings(value: Any, limit: int, depth: int = 0) -> str:
    """Every string inside ``value`` (dict values, list items), joined by newlines,
    at most ``limit`` characters: for tool results, whose shape differs per tool."""
    parts: list[str] = []
    budget = [limit]

    def walk(item: Any, level: int) -> None:
        if budget[0] <= 0 or level > MAX_WALK_DEPTH:
            return
        if isinstance(item, str):
            if item:
                piece = item[: budget[0]]
                parts.append(piece)
                budget[0] -= len(piece) + 1
        elif isinstance(item, dict):
            for child in item.values():
                walk(child, level + 1)
        elif isinstance(item, list):
            for child in item:
                walk(child, level + 1)

    walk(value, depth)
    return cut("\n".join(parts), limit)


def compact_json(value: Any, limit: int) -> str:
    """``value`` as one line of JSON (a tool's input), cut at ``limit``."""
    if isinstance(value, str):
        return cut(value, limit)
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError, RecursionError):
        return ""
    return cut(text, limit)


def timestamp_ms(value: Any, default: int = 0) -> int:
    """An ISO 8601 time (``2025-10-29T00:59:38.317Z``, what all three agents write) or a
    number (seconds or milliseconds since the epoch) as milliseconds; ``default`` if
    it is neither."""
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return default
        if parsed.tzinfo is None:
            return default  # no zone: the agents always write one; refuse to guess
        return int(parsed.timestamp() * 1000)
    if isinstance(value, bool):
        return default
    if isinstance(value, (int, float)):
        # Seconds until the year 33658; milliseconds beyond.
        return int(value * 1000) if value < 1e12 else int(value)
    return default


def text_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def as_int(value: Any) -> int:
    """A token count: a non-negative int, anything else 0 (a damaged count never
    turns into a negative cost)."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value == value and value >= 0:
            return int(value)
        return 0
    return max(0, value)
