"""orch's copy of ptyd's sessions: spawned, exited, closed, re-keyed; by pane key."""

from __future__ import annotations

import trio
import trio.testing

from actors.orch.follow import (
    Beacon,
    apply_session_event,
    changed_keys,
    load_sessions,
    sessions_by_pane,
)
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


def test_changed_keys_are_the_rows_replaced_added_or_gone() -> None:
    """Mirrors fold events copy-on-write: an untouched row is the same object."""
    kept, old_row, new_row = object(), object(), object()
    before = {"same": kept, "moved": old_row, "gone": object()}
    after = {"same": kept, "moved": new_row, "new": object()}
    assert changed_keys(before, after) == {"moved", "gone", "new"}
    assert changed_keys(after, dict(after)) == set()


async def test_a_change_wakes_the_waiters_on_its_pane_and_those_on_none() -> None:
    """100 variants wait on their own panes: a change of one pane wakes its waiter (and
    any waiter without a pane), never the other 99; a change of everything wakes all."""
    beacon = Beacon()
    world: dict[str, int] = {}
    checks: dict[str, int] = {}
    done: list[str] = []

    async def wait(pane: str | None) -> None:
        name = pane or "any"

        def ready() -> bool:
            checks[name] = checks.get(name, 0) + 1
            return world.get(name, 0) > 0

        await beacon.wait_until(ready, key=pane)
        done.append(name)

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for i in range(100):
                nursery.start_soon(wait, f"p{i}")
            nursery.start_soon(wait, None)
            await trio.testing.wait_all_tasks_blocked()
            assert set(checks.values()) == {1}  # each looked once, then slept
            world["p7"] = 1
            beacon.bump({"p7"})
            await trio.testing.wait_all_tasks_blocked()
            assert done == ["p7"] and checks["p7"] == 2 and checks["p8"] == 1
            assert checks["any"] == 2  # a waiter without a pane checks at every change
            world.update({f"p{i}": 1 for i in range(100)} | {"any": 1})
            beacon.bump()
    assert sorted(done) == sorted([f"p{i}" for i in range(100)] + ["any"])
