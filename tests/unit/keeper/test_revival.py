"""The keeper's rule for starting orcad again (actors/keeper/revival.py): at once after a
working run, backing off through a crash loop, giving up after too many fast failures."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from actors.keeper.revival import (
    MAX_FAST_FAILURES,
    REVIVE_DELAYS_S,
    STABLE_RUN_S,
    GiveUp,
    RevivalPolicy,
    Revive,
)


def test_a_crash_after_a_working_run_is_answered_at_once() -> None:
    """However many deaths came before, one after a stable run restarts at once."""
    policy = RevivalPolicy()
    for _ in range(3):
        policy.orcad_died(1.0)
    assert policy.orcad_died(STABLE_RUN_S + 1) == Revive(0.0, fast_failures=0)


def test_a_crash_loop_backs_off_then_gives_up() -> None:
    """Fast failures in a row wait 0, 1, 2, 4, 8 s; the next one gives up."""
    policy = RevivalPolicy()
    decisions = [policy.orcad_died(0.5) for _ in range(MAX_FAST_FAILURES + 1)]
    assert decisions[:-1] == [
        Revive(delay, fast_failures=n + 1) for n, delay in enumerate(REVIVE_DELAYS_S)
    ]
    assert decisions[-1] == GiveUp(MAX_FAST_FAILURES + 1)


def test_a_start_that_failed_counts_as_a_fast_failure() -> None:
    """None (the new orcad never ran) is as fast as a failure gets."""
    policy = RevivalPolicy()
    policy.orcad_died(None)
    assert policy.orcad_died(None) == Revive(REVIVE_DELAYS_S[1], fast_failures=2)


def test_reset_forgets_the_failures() -> None:
    """An orcad started some other way (`orca up`) starts the count afresh."""
    policy = RevivalPolicy()
    for _ in range(MAX_FAST_FAILURES + 1):
        policy.orcad_died(0.1)
    policy.reset()
    assert policy.orcad_died(0.1) == Revive(0.0, fast_failures=1)


@given(st.lists(st.none() | st.floats(min_value=0, max_value=3 * STABLE_RUN_S), max_size=40))
def test_starts_are_bounded_and_never_faster_than_the_schedule(runs: list[float | None]) -> None:
    """Whatever the runs: a give-up only after more than MAX_FAST_FAILURES fast ones in a
    row, and every wait is one of the schedule's, growing through a series."""
    policy = RevivalPolicy()
    in_a_row = 0
    for ran in runs:
        decision = policy.orcad_died(ran)
        fast = ran is None or ran < STABLE_RUN_S
        in_a_row = in_a_row + 1 if fast else 0
        if in_a_row > MAX_FAST_FAILURES:
            assert decision == GiveUp(in_a_row)
        else:
            assert isinstance(decision, Revive)
            assert decision.after_s == REVIVE_DELAYS_S[max(in_a_row - 1, 0)]
