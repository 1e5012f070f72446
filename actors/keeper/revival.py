"""When the keeper starts orcad again, and when it gives up: decided without I/O.

The keeper brings orcad back whenever it died without stopping on purpose
(``actors/keeper/orcad_watch.py``). A crash loop must not become a fork loop, so every
such death, and every start that failed before the new orcad took its lock, comes here
with how long that orcad ran:

- a run of at least ``STABLE_RUN_S`` was a working service that died (a ``kill -9``, the
  OOM killer): it is started again at once, and the count of fast failures restarts;
- a shorter run (or a start that failed) is a fast failure; the first death of a series
  is still answered at once, each further one waits the next step of
  ``REVIVE_DELAYS_S``;
- more than ``MAX_FAST_FAILURES`` fast failures in a row: give up. The keeper logs it,
  keeps holding every terminal, and waits until an orcad is started some other way
  (``orca up``), which starts the count afresh (``reset``).

Invariant: ``fast_failures`` counts consecutive deaths each within ``STABLE_RUN_S`` of
its start; nothing but a long run or ``reset`` lowers it.
"""

from __future__ import annotations

from typing import NamedTuple  # not dataclasses: the keeper stays off inspect and ast

# A run this long was a working service, not a start that keeps failing.
STABLE_RUN_S = 30.0
# The wait before the n-th start of a series of fast failures (then the last, again).
REVIVE_DELAYS_S = (0.0, 1.0, 2.0, 4.0, 8.0)
# Fast failures in a row before the keeper stops starting orcad (about 15 s of trying).
MAX_FAST_FAILURES = 5


class Revive(NamedTuple):
    """Start orcad after ``after_s`` seconds; ``fast_failures`` in a row so far."""

    after_s: float
    fast_failures: int


class GiveUp(NamedTuple):
    """Start no orcad until one is started some other way (``RevivalPolicy.reset``)."""

    fast_failures: int


class RevivalPolicy:
    """The back-off and give-up rule for bringing orcad back (module docstring)."""

    def __init__(
        self,
        delays: tuple[float, ...] = REVIVE_DELAYS_S,
        stable_run_s: float = STABLE_RUN_S,
        max_fast_failures: int = MAX_FAST_FAILURES,
    ) -> None:
        self.delays = delays
        self.stable_run_s = stable_run_s
        self.max_fast_failures = max_fast_failures
        self.fast_failures = 0

    def orcad_died(self, ran_s: float | None) -> Revive | GiveUp:
        """An orcad died unannounced after ``ran_s`` seconds (None: it never started)."""
        fast = ran_s is None or ran_s < self.stable_run_s
        if not fast:
            self.fast_failures = 0
        step = min(self.fast_failures, len(self.delays) - 1)
        if fast:
            self.fast_failures += 1
        if self.fast_failures > self.max_fast_failures:
            return GiveUp(self.fast_failures)
        return Revive(self.delays[step], self.fast_failures)

    def reset(self) -> None:
        """An orcad was started some other way (``orca up``, a service manager)."""
        self.fast_failures = 0
