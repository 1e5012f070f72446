"""When an automation is due: its schedule's due times, and the catch-up rule (pure).

Essay. An automation's due times are the instants its schedule names after its
``activeSince`` (its creation, or its last resume): for ``every N s`` the instants
``activeSince + k·N`` (k ≥ 1); for a cron expression (five fields, read by croniter in
the automation's IANA time zone) the instants croniter gives going forward. croniter
handles daylight saving as its documentation says: a slot inside the hour skipped in
spring fires at the jump (02:30 → 03:00); in the hour repeated in autumn each of the
slot's two instants is a due time of its own.

The scheduler remembers nothing in memory that matters: the last due time an
automation fired for is the newest ``scheduledFor`` among its schedule-triggered
records in the store (``automationRuns``). From it, :func:`due_slot` decides:

* the first due time after it is in the future: nothing is due; sleep until then;
* it has come: fire **once**, for the latest due time at or before now. Every due
  time between the two (missed while Orca was down, orch was restarting, or the
  machine slept) is folded into that one firing and counted in ``missed``; its
  trigger reads ``catch-up`` when anything was missed or it fires more than
  :data:`LATE_MS` after its time. A time missed while down runs once, not once per
  missed slot.

Invariant: ``due_slot`` returns a due time strictly after the last one fired, so the
record's id (``<automationId>@<scheduledFor>``) never repeats, and the store's
``automationRun.begin`` refuses a second record for a due time whichever process asks.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final, NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from orca.model.automations import Automation, AutomationRun, AutomationSchedule
from orca.wire.errors import BadRequest

# A firing later than this after its due time is labelled catch-up (it was missed:
# the service was down or asleep), not schedule.
LATE_MS: Final = 60_000
# Counting missed cron slots walks them one by one through croniter (~0.3 ms a slot),
# in orch's trio loop: the count stops here ("200 or more"), so a month down under an
# every-minute cron costs ~60 ms, not the seconds a full walk would hold the loop for.
MISSED_COUNT_CAP: Final = 200
MIN_EVERY_S: Final = 1
MAX_EVERY_S: Final = 366 * 24 * 3600
SCHEDULE_TRIGGERS: Final = frozenset({"schedule", "catch-up"})


class Slot(NamedTuple):
    scheduled_for: int  # ms since the epoch
    trigger: str  # "schedule" | "catch-up"
    missed: int  # due times folded into this one


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise BadRequest(f"unknown time zone {name!r} (an IANA name: Europe/Paris, UTC)") from exc


def check_schedule(schedule: AutomationSchedule) -> None:
    """BadRequest unless the schedule can be computed."""
    if schedule.kind == "every":
        if not MIN_EVERY_S <= schedule.every_seconds <= MAX_EVERY_S:
            raise BadRequest(
                f"an interval is {MIN_EVERY_S} s to 366 days, not {schedule.every_seconds} s"
            )
        return
    if schedule.kind != "cron":
        raise BadRequest(f"a schedule is cron or every, not {schedule.kind!r}")
    zone(schedule.tz)
    if len(schedule.cron.split()) != 5 or not croniter.is_valid(schedule.cron):
        raise BadRequest(
            f"not a cron expression of five fields (minute hour day month weekday):"
            f" {schedule.cron!r}"
        )


def _cron(schedule: AutomationSchedule, at_ms: int) -> croniter:
    start = datetime.fromtimestamp(at_ms / 1000, zone(schedule.tz))
    return croniter(schedule.cron, start)


def next_after(schedule: AutomationSchedule, anchor_ms: int, after_ms: int) -> int:
    """The first due time strictly after ``after_ms`` (never before ``anchor_ms``)."""
    if schedule.kind == "every":
        step = schedule.every_seconds * 1000
        k = max(0, (after_ms - anchor_ms) // step) + 1
        return anchor_ms + k * step
    at = max(after_ms, anchor_ms)
    return round(float(_cron(schedule, at).get_next(float)) * 1000)


def latest_at_or_before(schedule: AutomationSchedule, anchor_ms: int, now_ms: int) -> int:
    """The latest due time at or before ``now_ms`` (callers know one exists)."""
    if schedule.kind == "every":
        step = schedule.every_seconds * 1000
        return anchor_ms + ((now_ms - anchor_ms) // step) * step
    prev = round(float(_cron(schedule, now_ms).get_prev(float)) * 1000)
    following = next_after(schedule, anchor_ms, prev)
    return following if following <= now_ms else prev


def _count_between(schedule: AutomationSchedule, anchor_ms: int, first: int, latest: int) -> int:
    """Due times from ``first`` up to, not including, ``latest``."""
    if schedule.kind == "every":
        return (latest - first) // (schedule.every_seconds * 1000)
    count, at = 0, first
    while at < latest and count < MISSED_COUNT_CAP:
        count += 1
        at = next_after(schedule, anchor_ms, at)
    return count


def last_fired(runs: list[AutomationRun], automation_id: str) -> int | None:
    """The newest due time the schedule fired for (manual firings do not count)."""
    times = [
        r.scheduled_for
        for r in runs
        if r.automation_id == automation_id and r.trigger in SCHEDULE_TRIGGERS
    ]
    return max(times, default=None)


def due_slot(
    automation: Automation, last: int | None, now_ms: int
) -> tuple[Slot | None, int | None]:
    """(the firing due now, or None; the next due time after it, None when paused)."""
    if not automation.enabled:
        return None, None
    schedule, anchor = automation.schedule, automation.active_since
    after = anchor if last is None else max(anchor, last)
    first = next_after(schedule, anchor, after)
    if first > now_ms:
        return None, first
    latest = latest_at_or_before(schedule, anchor, now_ms)
    missed = _count_between(schedule, anchor, first, latest)
    late = now_ms - latest > LATE_MS
    trigger = "catch-up" if missed or late else "schedule"
    return Slot(latest, trigger, missed), next_after(schedule, anchor, latest)


WORKING_STATES: Final = frozenset({"starting", "working", "needs-you"})


def still_working(states: dict[str, int]) -> bool:
    """A run whose variants (``run.list``'s counts by state) are not all settled."""
    return any(states.get(state, 0) for state in WORKING_STATES)
