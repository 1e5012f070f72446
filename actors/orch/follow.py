"""What orch follows: hooks' status rows and session bindings, ptyd's sessions.

Each is an ``orca.actor.Mirror`` (either peer may be down or restart: the mirror
re-snapshots); every change of any of them bumps one :class:`Beacon`, which the task
drivers wait on with a predicate, so no driver ever polls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import trio

from orca.contracts import ptyd
from orca.wire.envelope import Event


class Beacon:
    """A way to wait until a predicate over the world holds.

    A waiter that names a pane key is woken only by a change of that pane (its status
    row or its session): with 100 variants waiting, an event wakes one driver, not 100
    (each a task switch and a predicate). A waiter without a key wakes at every change.
    """

    def __init__(self) -> None:
        self._changed = trio.Event()
        self._by_key: dict[str, trio.Event] = {}

    def bump(self, keys: Iterable[str] | None = None) -> None:
        """Something changed: of the panes ``keys`` only, or (None) of any pane."""
        self._changed.set()
        self._changed = trio.Event()
        if keys is None:
            woken, self._by_key = self._by_key, {}
            for event in woken.values():
                event.set()
            return
        for key in keys:
            if key in self._by_key:
                self._by_key.pop(key).set()

    async def wait_until(self, predicate: Callable[[], bool], key: str | None = None) -> None:
        """Until ``predicate()`` holds; with ``key``, it must read nothing but that pane's
        status row and session (and the waiter's own locals)."""
        while not predicate():
            if key is None:
                await self._changed.wait()
            else:
                await self._by_key.setdefault(key, trio.Event()).wait()


def changed_keys(old: Mapping[str, object], new: Mapping[str, object]) -> set[str]:
    """The keys whose value is another object (or gone, or new): mirrors apply events
    copy-on-write, so an unchanged row is the same object."""
    changed = {key for key, value in new.items() if old.get(key) is not value}
    changed.update(key for key in old if key not in new)
    return changed


class PtySession:
    """What orch needs of one ptyd session."""

    __slots__ = ("exit_code", "pane_key", "running", "session_id", "worktree_id")

    def __init__(
        self, session_id: str, pane_key: str, worktree_id: str, running: bool, exit_code: int | None
    ) -> None:
        self.session_id = session_id
        self.pane_key = pane_key
        self.worktree_id = worktree_id
        self.running = running
        self.exit_code = exit_code


Sessions = dict[str, PtySession]  # by session id
PTY_EVENTS = (ptyd.SPAWNED, ptyd.EXIT, ptyd.CLOSED, ptyd.REKEYED)
# Subscribe to these prefixes only: never to the flood of output chunks.
PTY_TOPICS = [spec.type for spec in PTY_EVENTS]


def _session(row: ptyd.SessionRow) -> PtySession:
    return PtySession(row.session_id, row.pane_key, row.worktree_id, row.running, row.exit_code)


def load_sessions(snapshot: ptyd.Snapshot) -> Sessions:
    return {row.session_id: _session(row) for row in snapshot.sessions}


def apply_session_event(state: Sessions, _envelope: Event, event: object) -> Sessions:
    out = dict(state)
    if isinstance(event, ptyd.SessionSpawned):
        out[event.session_id] = _session(event)
    elif isinstance(event, ptyd.SessionExited):
        old = out.get(event.session_id)
        if old is not None:
            out[event.session_id] = PtySession(
                old.session_id, old.pane_key, old.worktree_id, False, event.exit_code
            )
    elif isinstance(event, ptyd.SessionClosed):
        out.pop(event.session_id, None)
    elif isinstance(event, ptyd.SessionRekeyed):
        old = out.pop(event.old, None)
        if old is not None:
            out[event.new] = PtySession(
                event.new, old.pane_key, old.worktree_id, old.running, old.exit_code
            )
    return out


def sessions_by_pane(state: Sessions) -> dict[str, PtySession]:
    """The session of each pane key (a running one before an ended one)."""
    out: dict[str, PtySession] = {}
    for s in state.values():
        if s.pane_key not in out or (s.running and not out[s.pane_key].running):
            out[s.pane_key] = s
    return out
