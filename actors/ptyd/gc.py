"""Session GC decisions (docs/protocols.md §1; seed 01 §4.3, §7.5; seed 02 §13): pure.

``ptyd`` never reaps a session on its own belief. The protocol:

1. Periodically, for every worktree id that has live sessions, ask ``store``
   ``identity.resolve {worktreeId}``. ``store`` knows current ids *and* every
   ``priorWorktreeIds`` alias.
2. Known under the same id: nothing to do (and any suspicion is cleared).
   Known under another id (an alias: the worktree was renamed and we missed the
   event): re-key the sessions to the current id - never kill.
3. Unknown: the first such answer only starts a grace period (the store may be
   mid-migration, or the worktree may be re-added).
4. Only an *unknown* answer received after the grace period has elapsed since the
   first one reaps, and the kill follows that answer with no wait in between: the
   grace ends with a re-check, not with a timer.
5. ``store`` unavailable or erroring: no decision, no progress towards a reap.
6. A ``worktree.renamed {old, new}`` event re-keys at once and cancels any suspicion
   of ``old``; a late "unknown" answer for ``old`` (asked before the rename) is
   ignored, since no session is keyed by ``old`` any more.

The "worktree id" is a session's owner, either shape ``orca.model.panes`` accepts: a
git worktree's ``<repoId>::<path>`` or a folder workspace's ``folder:<id>`` (seed 01
§5.1 route A). The store answers for both (a folder is current while its record is
listed, unknown once removed), so nothing here tells them apart; in particular a
folder workspace is never judged by gitwatch's listing or by its directory.

The class holds only suspicion timestamps; time is passed in, so tests drive it.
"""

from __future__ import annotations

from dataclasses import dataclass

from orca.contracts import store

# Default grace between the first "unknown" and the re-check that may reap. Long
# enough to ride out a worktree move (git + store migration take well under a second)
# and a store restart; short enough that a deleted worktree's agents stop soon.
DEFAULT_GRACE_S = 300.0
# How often live worktree ids are re-resolved; also bounds how long a missed rename
# event leaves a session under its old id.
DEFAULT_CHECK_INTERVAL_S = 60.0
# Renamed-away ids remembered to ignore late answers; an answer is late by at most
# one RPC timeout, so a modest bound is plenty.
_MAX_REMEMBERED_RENAMES = 1024


@dataclass(frozen=True)
class Resolution:
    """``store``'s answer: is ``worktree_id`` known, and under which current id."""

    worktree_id: str
    known: bool
    current_id: str | None = None

    @classmethod
    def of(cls, worktree_id: str, answer: store.IdentityResolved) -> Resolution:
        """The store's typed ``identity.resolve`` answer about ``worktree_id``."""
        if answer.status == "unknown":
            return cls(worktree_id, known=False)
        return cls(worktree_id, known=True, current_id=answer.worktree_id)


@dataclass(frozen=True)
class Rekey:
    """Move every session of ``old`` to ``new`` (a rename; never a kill)."""

    old: str
    new: str


@dataclass(frozen=True)
class Reap:
    """Kill and close every session of ``worktree_id``: store confirmed it twice unknown."""

    worktree_id: str


@dataclass(frozen=True)
class Suspect:
    """``worktree_id`` was reported unknown first at ``since``; the grace has started."""

    worktree_id: str
    since: float


Decision = Rekey | Reap | Suspect


class SessionGc:
    """Decides, from store answers and rename events, which sessions to re-key or reap."""

    def __init__(self, grace_s: float = DEFAULT_GRACE_S) -> None:
        self.grace_s = grace_s
        self._suspected_since: dict[str, float] = {}
        # Ids re-keyed away; insertion-ordered so the oldest are pruned first.
        self._renamed_away: dict[str, None] = {}

    @property
    def suspects(self) -> dict[str, float]:
        return dict(self._suspected_since)

    def on_resolution(self, answer: Resolution, now: float) -> Decision | None:
        """Fold one ``identity.resolve`` answer in; returns what to do, if anything."""
        wt = answer.worktree_id
        if wt in self._renamed_away:
            return None  # asked before a rename we already applied
        if answer.known:
            self._suspected_since.pop(wt, None)
            if answer.current_id and answer.current_id != wt:
                self._mark_renamed(wt, answer.current_id)
                return Rekey(wt, answer.current_id)
            return None
        since = self._suspected_since.get(wt)
        if since is None:
            self._suspected_since[wt] = now
            return Suspect(wt, now)
        if now - since >= self.grace_s:
            del self._suspected_since[wt]
            return Reap(wt)
        return None

    def on_store_unavailable(self, worktree_id: str) -> None:
        """No answer: nothing is decided (a down store is not evidence of deletion)."""

    def on_renamed(self, old: str, new: str) -> Rekey:
        """A ``worktree.renamed`` event: re-key, forget any suspicion of ``old``."""
        self._suspected_since.pop(old, None)
        self._mark_renamed(old, new)
        return Rekey(old, new)

    def on_sessions_spawned(self, worktree_id: str) -> None:
        """A new session under ``worktree_id``: its id is live again (e.g. re-added)."""
        self._renamed_away.pop(worktree_id, None)

    def _mark_renamed(self, old: str, new: str) -> None:
        self._renamed_away[old] = None
        self._renamed_away.pop(new, None)
        while len(self._renamed_away) > _MAX_REMEMBERED_RENAMES:
            del self._renamed_away[next(iter(self._renamed_away))]

    def forget(self, live_worktree_ids: set[str]) -> None:
        """Drop suspicion of ids that no longer have sessions (they exited or were reaped)."""
        for wt in list(self._suspected_since):
            if wt not in live_worktree_ids:
                del self._suspected_since[wt]
