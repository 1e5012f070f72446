"""Which of the store's pane retirements hooks has applied (docs/protocols.md §2). Pure.

``store`` numbers retirements per host with its topology revision. hooks keeps the
last ``local`` revision up to which every retirement is applied (``revision``, saved
in ``last-status.json``); a replay from the store's log (``session.retired_since``)
then applies exactly the ones missed while hooks was down.

A live event that skips revisions (events lost in flight) is applied at once but does
not move ``revision``: it is remembered in ``ahead`` so the replay that fills the gap
does not apply it a second time (re-fencing a pane a later spawn may have reopened).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RetirementCursor:
    revision: int = 0
    ahead: set[int] = field(default_factory=set)

    def on_live(self, revision: int) -> bool:
        """A live retirement at ``revision`` was applied; True if earlier ones are missing."""
        if revision > self.revision + 1:
            self.ahead.add(revision)
            return True
        self.revision = max(self.revision, revision)
        return False

    def wants(self, revision: int) -> bool:
        """Whether a replayed retirement at ``revision`` still has to be applied."""
        return revision > self.revision and revision not in self.ahead

    def settle(self, revision: int) -> None:
        """A replay up to the store's current ``revision`` is applied (it may be lower
        than ours when the store's state was reset: follow the store)."""
        self.revision = revision
        self.ahead = {r for r in self.ahead if r > revision}
