"""Automation and AutomationRun records: ``automations`` and ``automationRuns`` of
``orca-data.json`` (seed 02 §2; issue 38).

An *automation* is an orchestration run on a clock: its ``target`` (which repo, which
base branch), what to ask (``prompt``, ``agents``, ``check``) and when (``schedule``:
a five-field cron expression in a time zone, or a fixed interval). An *automation run*
is one firing of it, keyed by its due time, linked to the orchestration run it started
(``output.runId``) or saying why none started (``status`` skipped or failed, ``error``).

The store keeps both lists; orch is the one writer of them (it owns the schedule:
docs/architecture.md "Automations"). Field names are the wire's camelCase; unknown
fields survive in ``extra`` like every record's, and enumerations are typed ``str``
(a value a newer build adds must not make the file unreadable).
"""

from __future__ import annotations

from typing import Final, Literal

from orca.model.codec import Record

__all__ = [
    "MAX_RUNS_PER_AUTOMATION",
    "Automation",
    "AutomationAgent",
    "AutomationOutput",
    "AutomationRun",
    "AutomationRunStatus",
    "AutomationSchedule",
    "AutomationTarget",
    "AutomationTrigger",
    "ScheduleKind",
    "automation_run_id",
]

ScheduleKind = Literal["cron", "every"]
# starting: the intent is recorded, the orchestration run not known to exist yet;
# started: it exists (output.runId); skipped: the previous run still works (no overlap);
# failed: it could not start (error says why).
AutomationRunStatus = Literal["starting", "started", "skipped", "failed"]
# schedule: at its due time; catch-up: a due time missed while the service was down (or
# late); manual: `orca auto run-now`.
AutomationTrigger = Literal["schedule", "catch-up", "manual"]

# The runs kept per automation, newest first: a history for `orca auto show`, bounded
# so a schedule of every minute cannot grow orca-data.json without end.
MAX_RUNS_PER_AUTOMATION: Final = 50


class AutomationSchedule(Record, frozen=True, kw_only=True):
    """``kind`` cron: ``cron`` (five fields) read in ``tz`` (an IANA zone); ``kind``
    every: every ``everySeconds`` from the automation's ``activeSince``."""

    kind: str  # ScheduleKind
    cron: str = ""
    every_seconds: int = 0
    tz: str = "UTC"


class AutomationTarget(Record, frozen=True, kw_only=True):
    """Where a firing's run works: the repo (id, and its label when added) and the
    branch its worktrees start from ("" = the repo's current branch)."""

    repo_id: str
    repo_label: str = ""
    base: str = ""


class AutomationAgent(Record, frozen=True, kw_only=True):
    agent: str
    count: int = 1


class Automation(Record, frozen=True, kw_only=True):
    id: str
    name: str
    target: AutomationTarget
    prompt: str
    agents: tuple[AutomationAgent, ...]
    schedule: AutomationSchedule
    check: str = ""
    enabled: bool = True
    # A firing may start while the previous firing's run still works.
    overlap: bool = False
    created_at: int = 0
    updated_at: int = 0
    # Due times count from here: its creation, or its last resume (a paused
    # automation does not catch up the times it was paused for).
    active_since: int = 0


class AutomationOutput(Record, frozen=True, kw_only=True):
    """What a firing produced: the orchestration run (``orca run show <runId>`` has its
    variants, checks, diffstat and cost) and its name."""

    run_id: str
    run_name: str = ""


class AutomationRun(Record, frozen=True, kw_only=True):
    id: str  # automation_run_id(automationId, scheduledFor): one record per due time
    automation_id: str
    scheduled_for: int  # the due time (ms since the epoch); run-now: when it was asked
    trigger: str  # AutomationTrigger
    status: str  # AutomationRunStatus
    started_at: int = 0  # the intent's time
    finished_at: int | None = None  # the result's time
    output: AutomationOutput | None = None
    error: str | None = None
    # Due times missed while the service was down and folded into this catch-up (a
    # cron schedule counts at most 200: actors/orch/schedule.py).
    missed: int = 0


def automation_run_id(automation_id: str, scheduled_for: int) -> str:
    """The one id a due time of an automation can have: the fence's key."""
    return f"{automation_id}@{scheduled_for}"
