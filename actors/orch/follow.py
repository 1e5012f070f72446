"""What orch follows: hooks' status rows and session bindings, ptyd's sessions.

Each is an ``orca.actor.Mirror`` (either peer may be down or restart: the mirror
re-snapshots); every change of any of them bumps one :class:`Beacon`, which the task
drivers wait on with a predicate, so no driver ever polls.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from orca.contracts import ptyd
from orca.wire.envelope import Event


class Beacon:
    """A version number and a way to wait until a predicate over the world holds."""

    def __init__(self) -> None:
        self.version = 0
        self._changed = trio.Event()

    def bump(self) -> None:
        self.version += 1
        self._changed.set()
        self._changed = trio.Event()

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        while not predicate():
            await self._changed.wait()


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
