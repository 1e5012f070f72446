"""What ``orca ui``'s run view shows of orch's runs (pure: ``orch`` structs in, text out).

A run (``orca run new``, issue 26) is one task given to N agents, each a *variant* in a
worktree of its own. The view lists the runs (:func:`run_line`), shows one run's
variants side by side, one column each (:func:`variant_columns`: agent, a state light,
diffstat, check result, time, cost), and asks before a merge (:func:`merge_question`),
refusing one the preview says conflicts. Nothing here decides a state: orch did, and
the view only projects its rows (docs/architecture.md §1: a reader never re-decides).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text

from orca.contracts import gitwatch, orch

# state → (light, style): one glyph per state, the colours of the sidebar's lights.
STATE_LIGHTS: dict[str, tuple[str, str]] = {
    "starting": ("◌", "grey62"),
    "working": ("●", "yellow"),
    "needs-you": ("●", "bold red"),
    "idle": ("●", "green"),
    "exited": ("○", "grey50"),
    "archived": ("▪", "grey42"),
    "failed": ("✖", "red"),
    "merged": ("✔", "bold green"),
}
UNKNOWN_LIGHT = ("?", "grey50")
# How many conflicting paths the merge question lists before "... and N more".
LISTED_CONFLICTS = 12
# A column's check output: its last lines, cut to the column.
CHECK_TAIL_LINES = 3


@dataclass(frozen=True)
class VariantColumn:
    """One variant as its column shows it."""

    variant: str
    agent: str
    light: str
    light_style: str
    state: str
    diffstat: str
    check: str
    check_style: str
    time: str
    cost: str
    note: str  # the error, else the worker's last report ("" when neither)
    check_tail: tuple[str, ...] = ()


def diffstat_text(
    stat: orch.Diffstat | gitwatch.Diffstat | None,
    uncommitted: orch.Diffstat | gitwatch.Diffstat | None = None,
) -> str:
    if stat is None:
        return "diff ?"
    if not stat.files:
        return "no changes"
    files = f"{stat.files} file{'s' if stat.files != 1 else ''}"
    pending = f" ({uncommitted.files} uncommitted)" if uncommitted and uncommitted.files else ""
    return f"{files} +{stat.insertions} -{stat.deletions}{pending}"


def check_text(check: orch.CheckResult | None, has_command: bool) -> tuple[str, str]:
    """(text, style) of a variant's check result."""
    if check is None:
        return ("check: not run", "grey62") if has_command else ("no check", "grey50")
    if check.exit_code == 0:
        return "check ✔ passed", "green"
    return f"check ✖ exit {check.exit_code}", "red"


def elapsed_text(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    total = int(seconds)
    if total < 60:
        return f"{total}s"
    if total < 3600:
        return f"{total // 60}m{total % 60:02d}s"
    return f"{total // 3600}h{total % 3600 // 60:02d}m"


def cost_text(tokens: int | None, cost_usd: float | None) -> str:
    if cost_usd is not None:
        return "<$0.01" if cost_usd < 0.005 else f"${cost_usd:.2f}"
    if tokens:
        return f"{tokens / 1e6:.1f}M tok" if tokens >= 1e6 else f"{tokens / 1e3:.0f}k tok"
    return "-"


def _tail(text: str) -> tuple[str, ...]:
    lines = [line for line in text.splitlines() if line.strip()]
    return tuple(lines[-CHECK_TAIL_LINES:])


def variant_columns(run: orch.RunInfo) -> list[VariantColumn]:
    columns = []
    for v in run.variants:
        light, style = STATE_LIGHTS.get(v.state, UNKNOWN_LIGHT)
        check, check_style = check_text(v.check, bool(run.check))
        columns.append(
            VariantColumn(
                variant=v.variant,
                agent=v.agent,
                light=light,
                light_style=style,
                state=v.state,
                diffstat=diffstat_text(v.diffstat, v.uncommitted),
                check=check,
                check_style=check_style,
                time=elapsed_text(v.elapsed_s),
                cost=cost_text(v.tokens, v.cost_usd),
                note=v.error or v.report,
                check_tail=_tail(v.check.tail) if v.check is not None else (),
            )
        )
    return columns


def column_text(column: VariantColumn, *, selected: bool, merged: bool = False) -> Text:
    """A column's lines: the variant and agent, the light and state, then the figures."""
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(("▶ " if selected else "  ") + column.variant, style="bold" if selected else "")
    text.append(f"\n  {column.agent}", style="grey62")
    text.append("\n  ")
    text.append(column.light, style=column.light_style)
    text.append(f" {column.state}" + (" (merged)" if merged and column.state != "merged" else ""))
    text.append(f"\n  {column.diffstat}")
    text.append("\n  ")
    text.append(column.check, style=column.check_style)
    for line in column.check_tail:
        text.append(f"\n    {line}", style="grey50")
    text.append(f"\n  {column.time}  {column.cost}")
    if column.note:
        text.append(f"\n  {column.note}", style="italic grey62")
    return text


def run_line(run: orch.RunSummary, now_ms: int | None = None) -> Text:
    """One run in the list: name, repo, state, its variants' states, how long ago."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(run.name, style="bold")
    text.append(f"  {run.repo}", style="grey62")
    counts = ", ".join(f"{n} {state}" for state, n in sorted(run.states.items()) if n)
    text.append(f"\n  {run.state} · {run.variants} variant{'s' if run.variants != 1 else ''}")
    if counts:
        text.append(f" ({counts})")
    text.append(f" · {_ago(now - run.created_at_ms)}", style="grey62")
    if run.merged_variant:
        text.append(f" · merged {run.merged_variant}", style="green")
    return text


def _ago(ms: int) -> str:
    return elapsed_text(max(ms, 0) / 1000) + " ago"


@dataclass(frozen=True)
class MergeAsk:
    """What the view asks before merging (``refusal``: why it will not, then no question)."""

    question: str
    details: str
    refusal: str = ""


def merge_question(
    run: orch.RunInfo, variant: orch.VariantInfo, preview: gitwatch.MergePreview
) -> MergeAsk:
    """The confirmation of a merge, from gitwatch's preview (computed, nothing changed)."""
    stat = diffstat_text(preview.diffstat, preview.uncommitted_diffstat)
    lines = [
        f"{preview.branch} → {preview.into}: {preview.ahead} ahead, {preview.behind} behind; {stat}",
    ]
    others = [
        v.variant for v in run.variants if v.variant != variant.variant and v.state != "archived"
    ]
    if others:
        lines.append(f"archived afterwards (worktrees kept): {', '.join(others)}")
    if preview.conflicts:
        shown = _listed(preview.conflicts)
        return MergeAsk(
            question=f"{variant.variant} cannot be merged into {preview.into}: it conflicts.",
            details="\n".join([*lines, "conflicts:", *(f"  {p}" for p in shown)]),
            refusal=f"conflicts in {len(preview.conflicts)} path(s)",
        )
    if preview.dirty:
        return MergeAsk(
            question=f"{variant.variant} has uncommitted changes: commit them first.",
            details="\n".join([*lines, *(f"  {c}" for c in preview.uncommitted)]),
            refusal="uncommitted changes",
        )
    if preview.checkout_dirty:
        return MergeAsk(
            question=f"{preview.into} is checked out at {preview.checkout} with uncommitted changes.",
            details="\n".join(lines),
            refusal=f"{preview.into}'s checkout is dirty",
        )
    if not preview.ahead:
        return MergeAsk(
            question=f"{variant.variant} has nothing {preview.into} lacks.",
            details="\n".join(lines),
            refusal="nothing to merge",
        )
    return MergeAsk(
        question=f"Merge {variant.variant} ({variant.agent}) into {preview.into}?",
        details="\n".join(lines),
    )


def _listed(paths: Sequence[str]) -> list[str]:
    shown = list(paths[:LISTED_CONFLICTS])
    if len(paths) > LISTED_CONFLICTS:
        shown.append(f"... and {len(paths) - LISTED_CONFLICTS} more")
    return shown


def automation_line(info: orch.AutomationInfo) -> Text:
    """One automation (issue 38) under the runs: its schedule, when next, its last firing."""
    a = info.automation
    s = a.schedule
    when = f"cron {s.cron} {s.tz}" if s.kind == "cron" else f"every {s.every_seconds}s"
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(a.name, style="bold")
    line.append(f"  {when}")
    if info.next_due_ms is None:
        line.append("  paused", style="grey62")
    else:
        line.append("  next " + time.strftime("%H:%M", time.localtime(info.next_due_ms / 1000)))
    last = info.last_run
    if last is not None:
        style = {"started": "green", "skipped": "yellow", "failed": "red"}.get(last.status, "")
        what = last.output.run_id if last.output is not None else (last.error or "")
        line.append(f"  {last.status} {what}".rstrip(), style=style)
    return line


def automations_text(infos: Sequence[orch.AutomationInfo]) -> Text:
    if not infos:
        return Text("no automations (orca auto add)", style="grey62")
    out = Text("Automations\n", style="bold")
    for n, info in enumerate(infos):
        out.append_text(automation_line(info))
        if n < len(infos) - 1:
            out.append("\n")
    return out
