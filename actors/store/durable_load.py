"""Loading a durable file: the primary, else the newest backup that parses.

A primary that cannot be read or parsed (torn by a disk fault, truncated, edited by
hand) is never overwritten blindly: it is renamed aside to
``<name>.corrupt-<UTC timestamp>`` so a person can inspect it, and the newest backup
that parses is loaded instead. What happened is returned as a ``LoadReport`` that the
store logs and exposes in ``sys.stats`` (and so in ``orca status``).

A missing primary is a fresh start, not a corruption: backups are not consulted, so
deleting the file really resets the state (the ring still holds the old copies).

``parse`` must raise ``ValueError`` (``json``/``msgspec`` decode errors are ValueErrors)
for content it rejects; any other exception is a bug and propagates.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

T = TypeVar("T")

LoadSource = Literal["primary", "backup", "missing", "no_valid_copy"]


@dataclass(frozen=True)
class LoadReport:
    """What ``load`` found; ``recovered`` is true when a backup replaced the primary."""

    source: LoadSource
    loaded_from: str | None  # file name the state came from
    corrupt_kept_as: str | None  # where the rejected primary was moved
    problems: tuple[str, ...]  # one line per rejected candidate: "<name>: <reason>"
    swept_temp_files: int

    @property
    def recovered(self) -> bool:
        return self.source in ("backup", "no_valid_copy")

    def to_dict(self) -> dict[str, object]:
        return {
            "source": self.source,
            "loadedFrom": self.loaded_from,
            "corruptKeptAs": self.corrupt_kept_as,
            "problems": list(self.problems),
            "sweptTempFiles": self.swept_temp_files,
        }


def _corrupt_name(primary: Path, wall_clock: Callable[[], float]) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(wall_clock()))
    candidate = primary.with_name(f"{primary.name}.corrupt-{stamp}")
    suffix = 1
    while candidate.exists():
        candidate = primary.with_name(f"{primary.name}.corrupt-{stamp}-{suffix}")
        suffix += 1
    return candidate


def _try_parse(path: Path, parse: Callable[[bytes], T]) -> tuple[T, bytes] | str:
    """The parsed value and raw bytes, or a one-line reason for rejecting ``path``."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return "missing"
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if not raw:
        return "empty"
    try:
        return parse(raw), raw
    except ValueError as exc:
        return f"does not parse ({str(exc)[:200]})"


def load_with_backups(
    primary: Path,
    backups: Sequence[Path],
    parse: Callable[[bytes], T],
    *,
    swept_temp_files: int,
    wall_clock: Callable[[], float],
) -> tuple[T | None, bytes | None, LoadReport]:
    """Return ``(value, raw bytes, report)``; value is None when nothing usable exists."""
    if not primary.exists():
        report = LoadReport("missing", None, None, (), swept_temp_files)
        return None, None, report
    outcome = _try_parse(primary, parse)
    if not isinstance(outcome, str):
        value, raw = outcome
        return value, raw, LoadReport("primary", primary.name, None, (), swept_temp_files)
    problems = [f"{primary.name}: {outcome}"]
    kept_as: str | None = None
    aside = _corrupt_name(primary, wall_clock)
    try:
        os.replace(primary, aside)
        kept_as = aside.name
    except OSError as exc:
        problems.append(f"{primary.name}: could not be moved aside ({exc.strerror or exc})")
    for backup in backups:
        candidate = _try_parse(backup, parse)
        if isinstance(candidate, str):
            if candidate != "missing":
                problems.append(f"{backup.name}: {candidate}")
            continue
        value, raw = candidate
        report = LoadReport("backup", backup.name, kept_as, tuple(problems), swept_temp_files)
        return value, raw, report
    report = LoadReport("no_valid_copy", None, kept_as, tuple(problems), swept_temp_files)
    return None, None, report
