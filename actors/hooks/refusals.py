"""Refused hooks, said in the log: each kind once a minute at most, with a count.

A hook that hooks refuses (a wrong secret, a pane it has no authority over, a launch
it has not heard of yet) leaves the agent's light where it was, and the agent never
learns: the hook script drops the answer. So the log says it, one line per kind
(status and reason) per minute, the ones left out counted in the next line. A peer
that floods refusals costs a line a minute, and the map of kinds is bounded.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

EVERY_S = 60.0
# Kinds remembered at once (status x reason: a few dozen exist).
MAX_KINDS = 64


class RefusalLog:
    def __init__(
        self, clock: Callable[[], float] = time.monotonic, *, said: str = "refused"
    ) -> None:
        self._clock = clock
        self._said = said
        # kind -> (when last said, refusals left unsaid since)
        self._kinds: dict[tuple[int, str], tuple[float, int]] = {}

    def refused(self, status: int, reason: str, what: str) -> bool:
        """Note one refusal; True if it was logged (``what``: the hook, the pane)."""
        kind = (status, reason)
        now = self._clock()
        said = self._kinds.get(kind)
        if said is not None and now - said[0] < EVERY_S:
            self._kinds[kind] = (said[0], said[1] + 1)
            return False
        if said is None and len(self._kinds) >= MAX_KINDS:
            self._kinds.pop(next(iter(self._kinds)))
        left_out = said[1] if said is not None else 0
        self._kinds[kind] = (now, 0)
        more = f" ({left_out} more like it since the last line)" if left_out else ""
        log.info("hook %s (%d %s): %s%s", self._said, status, reason, what, more)
        return True
