"""The automations' due times and catch-up rule (actors/orch/schedule.py; issue 38)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.orch.schedule import (
    Slot,
    check_schedule,
    due_slot,
    last_fired,
    next_after,
    still_working,
)
from orca.model.automations import (
    Automation,
    AutomationAgent,
    AutomationRun,
    AutomationSchedule,
    AutomationTarget,
)
from orca.wire.errors import BadRequest

PARIS = ZoneInfo("Europe/Paris")


def ms(dt: datetime) -> int:
    return int(dt.timestamp() * 1000)


def automation(schedule: AutomationSchedule, since: int, enabled: bool = True) -> Automation:
    return Automation(
        id="a1", name="n", target=AutomationTarget(repo_id="r"), prompt="p",
        agents=(AutomationAgent(agent="claude"),), schedule=schedule, active_since=since,
        enabled=enabled,
    )  # fmt: skip


EVERY_10 = AutomationSchedule(kind="every", every_seconds=10)
WEEKDAYS_3AM = AutomationSchedule(kind="cron", cron="0 3 * * 1-5", tz="Europe/Paris")


def test_nothing_is_due_before_the_first_interval() -> None:
    assert due_slot(automation(EVERY_10, 0), None, 9_999) == (None, 10_000)


def test_a_due_time_fires_once_then_waits_for_the_next() -> None:
    a = automation(EVERY_10, 0)
    assert due_slot(a, None, 10_500) == (Slot(10_000, "schedule", 0), 20_000)
    assert due_slot(a, 10_000, 10_600) == (None, 20_000)


def test_times_missed_while_down_are_caught_up_once() -> None:
    """Down from 10 s to 95 s: one firing, for 90 s, with the seven slots between folded."""
    a = automation(EVERY_10, 0)
    slot, following = due_slot(a, 10_000, 95_000)
    assert slot == Slot(90_000, "catch-up", 7) and following == 100_000
    assert due_slot(a, 90_000, 95_000) == (None, 100_000)


def test_a_paused_automation_is_never_due() -> None:
    assert due_slot(automation(EVERY_10, 0, enabled=False), None, 10**9) == (None, None)


def test_resume_moves_the_anchor_so_paused_times_are_not_caught_up() -> None:
    a = automation(EVERY_10, 500_000)  # resumed at 500 s; last fired at 10 s
    assert due_slot(a, 10_000, 505_000) == (None, 510_000)


def test_cron_in_a_time_zone_and_its_weekend() -> None:
    """Friday 03:00 Paris fires; the next is Monday 03:00 (weekdays only)."""
    friday = ms(datetime(2026, 1, 9, 3, 0, tzinfo=PARIS))
    since = ms(datetime(2026, 1, 9, 2, 0, tzinfo=PARIS))
    slot, following = due_slot(automation(WEEKDAYS_3AM, since), None, friday + 1_000)
    assert slot == Slot(friday, "schedule", 0)
    assert following == ms(datetime(2026, 1, 12, 3, 0, tzinfo=PARIS))


def test_cron_catch_up_after_a_long_weekend_down() -> None:
    """Down from Thursday 03:00 until Tuesday noon: one firing for Tuesday 03:00, Friday
    and Monday counted as missed."""
    thursday = ms(datetime(2026, 1, 8, 3, 0, tzinfo=PARIS))
    tuesday_noon = ms(datetime(2026, 1, 13, 12, 0, tzinfo=PARIS))
    slot, _ = due_slot(automation(WEEKDAYS_3AM, 0), thursday, tuesday_noon)
    assert slot == Slot(ms(datetime(2026, 1, 13, 3, 0, tzinfo=PARIS)), "catch-up", 2)


def test_the_skipped_spring_hour_fires_at_the_jump() -> None:
    """02:30 does not exist on 2026-03-29 in Paris: croniter fires at 03:00 CEST."""
    nightly = AutomationSchedule(kind="cron", cron="30 2 * * *", tz="Europe/Paris")
    before = ms(datetime(2026, 3, 29, 1, 0, tzinfo=PARIS))
    assert next_after(nightly, 0, before) == ms(datetime(2026, 3, 29, 3, 0, tzinfo=PARIS))


@pytest.mark.parametrize(
    "schedule",
    [
        AutomationSchedule(kind="cron", cron="0 3 * *", tz="UTC"),
        AutomationSchedule(kind="cron", cron="0 3 * * * *", tz="UTC"),
        AutomationSchedule(kind="cron", cron="61 3 * * *", tz="UTC"),
        AutomationSchedule(kind="cron", cron="0 3 * * *", tz="Mars/Olympus"),
        AutomationSchedule(kind="every", every_seconds=0),
        AutomationSchedule(kind="hourly"),
    ],
)
def test_bad_schedules_are_refused(schedule: AutomationSchedule) -> None:
    with pytest.raises(BadRequest):
        check_schedule(schedule)


@given(
    step=st.integers(1, 3600),
    since=st.integers(0, 10**12),
    last_k=st.integers(0, 100),
    gap=st.integers(0, 10**8),
)
def test_every_fires_strictly_after_the_last_and_never_in_the_future(
    step: int, since: int, last_k: int, gap: int
) -> None:
    a = automation(AutomationSchedule(kind="every", every_seconds=step), since)
    last = since + last_k * step * 1000 if last_k else None
    now = (last or since) + gap
    slot, following = due_slot(a, last, now)
    assert following is not None and following > now
    if slot is not None:
        assert (last or since) < slot.scheduled_for <= now
        assert (slot.scheduled_for - since) % (step * 1000) == 0


def test_last_fired_ignores_manual_firings() -> None:
    def run(t: int, trigger: str) -> AutomationRun:
        return AutomationRun(
            id=f"a1@{t}", automation_id="a1", scheduled_for=t, trigger=trigger, status="started"
        )

    runs = [run(10, "schedule"), run(30, "catch-up"), run(50, "manual")]
    assert last_fired(runs, "a1") == 30 and last_fired(runs, "other") is None


def test_still_working_reads_the_run_states() -> None:
    assert still_working({"starting": 1}) and still_working({"idle": 1, "working": 1})
    assert not still_working({"idle": 2, "exited": 1})


CRONS = ["0 3 * * 1-5", "*/15 * * * *", "30 2 * * *", "0 0 1 * *", "5 4 * * 0", "0 */6 * * *"]
ZONES = ["UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"]


@settings(deadline=None)  # croniter walks up to MISSED_COUNT_CAP slots: ~60 ms, more when loaded
@given(
    expr=st.sampled_from(CRONS),
    tz=st.sampled_from(ZONES),
    since=st.integers(1_600_000_000_000, 1_900_000_000_000),
    gap=st.integers(0, 90 * 24 * 3600 * 1000),
    fired_first=st.booleans(),
)
def test_cron_fires_strictly_after_the_last_and_never_in_the_future(
    expr: str, tz: str, since: int, gap: int, fired_first: bool
) -> None:
    """Across zones with daylight saving (Lord Howe's is half an hour): a slot due now is
    after the last one fired and not after now, and the next is in the future."""
    a = automation(AutomationSchedule(kind="cron", cron=expr, tz=tz), since)
    last = next_after(a.schedule, since, since) if fired_first else None
    now = (last or since) + gap
    slot, following = due_slot(a, last, now)
    assert following is not None and following > now
    if slot is not None:
        assert (last or since) < slot.scheduled_for <= now
        assert due_slot(a, slot.scheduled_for, now)[0] is None  # fired: nothing more due now


def test_missed_cron_slots_are_counted_up_to_the_cap() -> None:
    """A month down under an every-minute cron: one catch-up, its count capped."""
    from actors.orch.schedule import MISSED_COUNT_CAP

    every_minute = AutomationSchedule(kind="cron", cron="* * * * *", tz="UTC")
    slot, _ = due_slot(automation(every_minute, 0), 60_000, 30 * 24 * 3600 * 1000)
    assert slot is not None and slot.missed == MISSED_COUNT_CAP
