"""orch's copy of ptyd's sessions: spawned, exited, closed, re-keyed; by pane key."""

from __future__ import annotations

from actors.orch.follow import apply_session_event, load_sessions, sessions_by_pane
from orca.contracts import ptyd
from orca.wire.envelope import Event

ENV = Event(v=1, src="ptyd", epoch="e", seq=1, type="x", data={})


def row(session_id: str, pane: str, running: bool = True) -> ptyd.SessionSpawned:
    return ptyd.SessionSpawned(
        session_id=session_id, host_id="local", worktree_id="r::/w", pane_key=pane, tab_id="t",
        terminal_handle="h", argv=["claude"], cwd="/w", pid=1, cols=80, rows=24,
        created_at=0.0, exit_code=None, running=running, end_offset=0, subscribers=0,
    )  # fmt: skip


def test_events_fold_into_the_sessions_and_panes_prefer_the_running_one() -> None:
    """An exit marks the session ended; a close forgets it; a re-key moves it; a pane
    with an ended and a running session is the running one's."""
    state = load_sessions(ptyd.Snapshot(epoch="e", seq=0, sessions=[row("a", "p1")]))
    state = apply_session_event(state, ENV, row("b", "p2"))
    state = apply_session_event(
        state, ENV, ptyd.SessionExited(session_id="a", exit_code=0, end_offset=5)
    )
    assert (state["a"].running, state["a"].exit_code) == (False, 0)
    state = apply_session_event(state, ENV, row("c", "p1"))
    assert sessions_by_pane(state)["p1"].session_id == "c"
    state = apply_session_event(state, ENV, ptyd.SessionRekeyed(old="b", new="b2"))
    state = apply_session_event(state, ENV, ptyd.SessionClosed(session_id="a"))
    assert sorted(state) == ["b2", "c"] and state["b2"].pane_key == "p2"
