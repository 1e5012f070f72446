"""Shared CLI output: the ``--json`` convention, readable tables, error exits.

``--json`` prints one object keyed by the collection (``{"actors": [...]}``) with the
model's field names; without it, a table. Errors go to stderr as ``orca: <message>``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from orca.wire.errors import BadRequest, NotFound, OrcaError, Unavailable

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_NOT_RUNNING = 3


def print_json(collection: str, rows: Any) -> None:
    json.dump({collection: rows}, sys.stdout, indent=2, sort_keys=False, default=str)
    sys.stdout.write("\n")


def print_table(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None
) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, box=None, header_style="bold", pad_edge=False)
    for col in columns:
        table.add_column(col)
    for row in rows:
        table.add_row(*("-" if v is None else str(v) for v in row))
    Console(soft_wrap=True).print(table)


def fail(message: str, code: int = EXIT_FAILED) -> int:
    print(f"orca: {message}", file=sys.stderr)
    return code


def fail_from(exc: OrcaError) -> int:
    """Exit for an error reply: not running → 3, the caller's fault → 2, else 1."""
    if isinstance(exc, Unavailable):
        return fail(f"{exc.message}", EXIT_NOT_RUNNING)
    if isinstance(exc, BadRequest | NotFound):
        return fail(exc.message, EXIT_USAGE)
    return fail(exc.message)


def human_bytes(n: int | None) -> str | None:
    if n is None:
        return None
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return None


def human_duration(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600:02d}h"
