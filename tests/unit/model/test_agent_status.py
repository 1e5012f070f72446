"""The shared agent-status summary and freshness rule (seed 03, PR 3)."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from orca.contracts import hooks
from orca.contracts.base import decode_event_data, specs_by_type
from orca.model.agent_status import (
    AGENT_STATES,
    DISPLAY_DECAY_MS,
    AgentStatusRow,
    display_state,
    is_fresh,
    map_structured_state,
    project_worktrees,
    state_age_ms,
    summarize_all,
    summarize_worktree,
)
from orca.wire.envelope import Event

NOW = 1_800_000_000_000


def _row(
    state: str = "working",
    *,
    pane: str = "tab1:leaf-a",
    wt: str = "repo::/w/a",
    age_ms: int = 0,
    **extra: object,
) -> AgentStatusRow:
    return AgentStatusRow(
        pane_key=pane,
        worktree_id=wt,
        state=state,  # type: ignore[arg-type]
        source="hook",
        updated_at_ms=NOW - age_ms,
        state_since_ms=NOW - age_ms,
        **extra,  # type: ignore[arg-type]
    )


def test_row_is_fresh_until_the_thirty_minute_decay() -> None:
    """A live row is fresh for 30 minutes after its evidence, then shows idle (seed 03 PR 3)."""
    assert is_fresh(_row(age_ms=DISPLAY_DECAY_MS - 1), NOW)
    assert not is_fresh(_row(age_ms=DISPLAY_DECAY_MS), NOW)
    assert display_state(_row("blocked", age_ms=DISPLAY_DECAY_MS), NOW) == "idle"
    assert display_state(_row("blocked", age_ms=5), NOW) == "blocked"


def test_restored_unconfirmed_row_is_never_fresh() -> None:
    """A hydrated row is never live truth, however recent (seed 03, 水合诚实性)."""
    row = _row("working", age_ms=0, restored_unconfirmed=True)
    assert not is_fresh(row, NOW)
    assert display_state(row, NOW) == "idle"
    assert summarize_worktree(row.worktree_id, [row], NOW).state == "idle"


def test_structured_host_row_bypasses_the_decay() -> None:
    """A row owned by a structured host stays fresh until the host deletes it (seed 03 PR 1a)."""
    row = _row("working", age_ms=10 * DISPLAY_DECAY_MS, structured_host="local")
    assert is_fresh(row, NOW)


def test_summary_prefers_the_most_urgent_fresh_state() -> None:
    """blocked > waiting > working > done > idle, counting only fresh rows as live."""
    rows = [
        _row("done", pane="t:a"),
        _row("working", pane="t:b"),
        _row("waiting", pane="t:c"),
        _row("blocked", pane="t:d", age_ms=DISPLAY_DECAY_MS + 1),
    ]
    summary = summarize_worktree("repo::/w/a", rows, NOW)
    assert summary.state == "waiting"
    assert summary.counts == {"done": 1, "working": 1, "waiting": 1, "idle": 1}
    assert summary.latest_update_ms == NOW


def test_structured_states_map_once() -> None:
    """working/attention/idle map to working/blocked/done (seed 03, 状态词汇表)."""
    assert [map_structured_state(s) for s in ("working", "attention", "idle")] == [
        "working",
        "blocked",
        "done",
    ]


def test_state_age_is_never_negative_after_a_clock_step() -> None:
    """A row stamped in the future (clock stepped back) shows age zero, not negative."""
    assert state_age_ms(_row(age_ms=-5000), NOW) == 0


def test_summarize_all_groups_by_worktree_in_order() -> None:
    """Every worktree gets one summary, ordered by id."""
    rows = [_row(pane="t:1", wt="b"), _row("blocked", pane="t:2", wt="a")]
    assert [(s.worktree_id, s.state) for s in summarize_all(rows, NOW)] == [
        ("a", "blocked"),
        ("b", "working"),
    ]


def test_row_wire_names_are_camel_case() -> None:
    """Rows cross the wire with the seeds' camelCase field names."""
    wire = msgspec.to_builtins(_row(restored_unconfirmed=True))
    expected = {"paneKey", "worktreeId", "updatedAtMs", "stateSinceMs", "restoredUnconfirmed"}
    assert expected <= set(wire)


@given(
    states=st.lists(st.sampled_from(AGENT_STATES), min_size=1, max_size=8),
    ages=st.lists(
        st.integers(min_value=-(10**6), max_value=3 * DISPLAY_DECAY_MS), min_size=8, max_size=8
    ),
    restored=st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_summary_counts_every_row_and_ignores_unconfirmed(
    states: list[str], ages: list[int], restored: list[bool]
) -> None:
    """The summary counts each row once and is never driven by an unconfirmed or stale row."""
    rows = [
        _row(s, pane=f"t:{i}", age_ms=ages[i], restored_unconfirmed=restored[i])
        for i, s in enumerate(states)
    ]
    summary = summarize_worktree("w", rows, NOW)
    assert sum(summary.counts.values()) == len(rows)
    live = [r.state for r in rows if is_fresh(r, NOW)]
    if not live:
        assert summary.state == "idle"
    else:
        assert summary.state in live


def test_projection_groups_agents_under_their_worktree_summary() -> None:
    """The ps projection shows each worktree's summary and its agents with age and freshness."""
    rows = [
        _row("blocked", pane="t:2", wt="a", age_ms=90_000),
        _row("working", pane="t:1", wt="a", restored_unconfirmed=True),
        _row("done", pane="t:3", wt="b", structured_host="local"),
    ]
    projected = project_worktrees(rows, NOW)
    assert [p["worktreeId"] for p in projected] == ["a", "b"]
    first = projected[0]
    assert first["summary"] == {
        "state": "blocked",
        "counts": {"blocked": 1, "idle": 1},
        "latestUpdateMs": NOW,
    }
    agents = first["agents"]
    assert isinstance(agents, list)
    assert [(a["paneKey"], a["displayState"], a["fresh"], a["ageMs"]) for a in agents] == [
        ("t:1", "idle", False, 0),
        ("t:2", "blocked", True, 90_000),
    ]
    second_agents = projected[1]["agents"]
    assert isinstance(second_agents, list) and second_agents[0]["structuredHostOwned"] is True


def _event(seq: int, type_: str, data: object) -> Event:
    return Event(1, "hooks", "e", seq, type_, data)


def test_mirror_helpers_replay_set_and_clear() -> None:
    """A mirror loads the snapshot and folds typed set/clear events into the same rows."""
    first = _row("working", pane="t:1")
    wire = {"epoch": "e", "seq": 3, "rev": 1, "rows": [msgspec.to_builtins(first)]}
    rows = hooks.load_mirror(msgspec.convert(wire, hooks.Snapshot))
    assert rows == {"t:1": first}
    second = _row("blocked", pane="t:2")
    specs = specs_by_type(hooks.EVENTS)
    events = [
        _event(4, hooks.STATUS_SET.type, {"row": msgspec.to_builtins(second)}),
        _event(5, hooks.STATUS_CLEARED.type, {"paneKey": "t:1", "worktreeId": "wt", "reason": "r"}),
        _event(6, "sys.heartbeat", None),
    ]
    for event in events:
        typed = decode_event_data(event, specs, consumer="test")
        if typed is not None:
            rows = hooks.apply_to_mirror(rows, event, typed)
    assert rows == {"t:2": second}
