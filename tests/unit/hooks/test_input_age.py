"""``actors.hooks.actor.input_age_ms``: a key's age as of the call's handling in hooks."""

from __future__ import annotations

from actors.hooks.actor import MAX_INPUT_TRANSIT_MS, input_age_ms
from orca.contracts.hooks import PaneInputArgs


def args(sent: int, stamp: int) -> PaneInputArgs:
    return PaneInputArgs(pane_key="p", evidence_age_ms=sent, typed_at_monotonic_ms=stamp)


def test_the_stamp_counts_the_calls_time_on_its_way() -> None:
    # typed at 10.000 s, sent at 10.050 s (age 50), handled at 10.400 s
    assert input_age_ms(args(50, 10_000), now_monotonic=10.4) == 400


def test_without_a_stamp_or_with_one_of_another_clock_the_sent_age_stands() -> None:
    assert input_age_ms(args(50, 0), now_monotonic=10.4) == 50  # an older ptyd
    assert input_age_ms(args(50, 20_000), now_monotonic=10.4) == 50  # from the future
    far = 10_400 - 50 - MAX_INPUT_TRANSIT_MS - 1  # "queued" longer than believable
    assert input_age_ms(args(50, far), now_monotonic=10.4) == 50
