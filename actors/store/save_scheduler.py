"""When to save: trailing debounce with a max wait, retry after failure, stop fence.

Pure timing logic with no I/O and no clock of its own: every method takes ``now``.
The trio shell (``actors.store.saver``) sleeps until ``deadline()`` and asks
``begin_save``.

Rules (seed 01 §7.4, seed 02 §4):
- A mutation marks the state dirty. The save happens ``SAVE_DEBOUNCE_S`` after the last
  mutation, but never later than ``SAVE_MAX_WAIT_S`` after the first unsaved one, so a
  steady stream of mutations still reaches disk.
- A failed save (disk full, I/O error) keeps the state dirty and is retried no sooner
  than ``SAVE_RETRY_S`` later.
- ``begin_flush`` saves now regardless of the deadline (stop, pane retirement).
- ``fence`` (stop): from then on ``deadline`` is None; no debounced save can start,
  so the flush on stop is the last write (upstream's "quit flush started").
"""

from __future__ import annotations

from dataclasses import dataclass

SAVE_DEBOUNCE_S = 1.0  # coalesce mutation bursts (a UI writes its session per change)
SAVE_MAX_WAIT_S = 5.0  # bounds how much a crash can lose under a constant mutation stream
SAVE_RETRY_S = 5.0  # after ENOSPC/EIO: retry later instead of spinning on a full disk


@dataclass(frozen=True)
class SchedulerStatistics:
    dirty: bool
    fenced: bool
    deadline: float | None


class SaveScheduler:
    """Decides when the next save is due; see the module docstring for the rules."""

    def __init__(
        self,
        *,
        debounce_s: float = SAVE_DEBOUNCE_S,
        max_wait_s: float = SAVE_MAX_WAIT_S,
        retry_s: float = SAVE_RETRY_S,
    ) -> None:
        self._debounce_s = debounce_s
        self._max_wait_s = max_wait_s
        self._retry_s = retry_s
        # Invariant: _first_dirty_at is None <=> _last_dirty_at is None <=> clean.
        self._first_dirty_at: float | None = None
        self._last_dirty_at: float | None = None
        self._retry_at: float | None = None
        self._fenced = False

    @property
    def dirty(self) -> bool:
        return self._first_dirty_at is not None

    @property
    def fenced(self) -> bool:
        return self._fenced

    def mark_dirty(self, now: float) -> None:
        if self._first_dirty_at is None:
            self._first_dirty_at = now
        self._last_dirty_at = now

    def deadline(self) -> float | None:
        """When the next debounced save is due, or None (clean, or fenced by stop)."""
        if self._fenced or self._first_dirty_at is None or self._last_dirty_at is None:
            return None
        due = min(self._last_dirty_at + self._debounce_s, self._first_dirty_at + self._max_wait_s)
        if self._retry_at is not None:
            due = max(due, self._retry_at)
        return due

    def begin_save(self, now: float) -> bool:
        """Claim a due debounced save: True means save the current state now."""
        due = self.deadline()
        if due is None or now < due:
            return False
        self._clear()
        return True

    def begin_flush(self) -> bool:
        """Claim a save regardless of the deadline; True when anything was unsaved."""
        was_dirty = self.dirty
        self._clear()
        return was_dirty

    def save_failed(self, now: float) -> None:
        """The claimed save did not reach disk: dirty again, retried after a pause."""
        if self._first_dirty_at is None:
            self._first_dirty_at = now
        if self._last_dirty_at is None:
            self._last_dirty_at = now
        self._retry_at = now + self._retry_s

    def save_succeeded(self) -> None:
        self._retry_at = None

    def fence(self) -> None:
        """Stop: no debounced save may start after this (the stop flush is the last)."""
        self._fenced = True

    def statistics(self) -> SchedulerStatistics:
        return SchedulerStatistics(self.dirty, self._fenced, self.deadline())

    def _clear(self) -> None:
        self._first_dirty_at = None
        self._last_dirty_at = None
