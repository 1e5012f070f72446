"""The one ingest path of the agent-status table (seed 03; architecture §3.2-3.3)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.hooks.pane_authority import RETIRED_FENCE_CAPACITY, parse_pane_key
from actors.hooks.status_table import (
    CLEARED_CAPACITY,
    PRIORITY_HOLD_MS,
    AgentStatusTable,
    StatusEvent,
)
from orca.contracts import hooks
from orca.model.agent_status import AgentStatusRow

PANE = "tab-1:3f1c2a9e-0000-4000-8000-000000000001"
WT = "repo1::/src/wt-a"
T0 = 1_800_000_000_000


def _sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _ev(
    state: str | None = "working", *, source: str = "hook", pane: str = PANE, **kw: object
) -> StatusEvent:
    kw.setdefault("worktree_id", WT)
    return StatusEvent(pane_key=pane, state=state, source=source, **kw)  # type: ignore[arg-type]


def test_hook_write_creates_row_and_publishes_set() -> None:
    """An accepted write stores one row with its source and publishes agentStatus.set."""
    table = AgentStatusTable()
    fx = table.apply_normalized_status(_ev("working", agent="claude"), T0)
    assert fx.outcome == "applied" and fx.persist
    row = table.row(PANE)
    assert row is not None and row.source == "hook" and row.agent == "claude"
    assert fx.events == (hooks.StatusSet(row=row),)
    assert (row.pane_key, row.state, row.source) == (PANE, "working", "hook")


def test_retired_pane_rejects_late_status_until_live_restart() -> None:
    """A retired pane rejects late writes; only a live restart lifts the fence (seed 02 §9)."""
    table = AgentStatusTable()
    table.apply_normalized_status(_ev("working"), T0)
    fx = table.retire_pane(PANE)
    assert fx.events == (hooks.StatusCleared(pane_key=PANE, worktree_id=WT, reason="retired"),)
    assert fx.persist
    assert table.row(PANE) is None
    late = table.apply_normalized_status(_ev("done"), T0 + 1)
    assert (late.outcome, late.reason) == ("rejected", "retired_pane")
    assert table.row(PANE) is None
    assert table.restart_pane(PANE) is True
    again = table.apply_normalized_status(_ev("working"), T0 + 2)
    assert again.outcome == "applied"


def test_retire_fences_the_whole_alias_group() -> None:
    """Closing a pane fences its aliases too (seed 03, 关闭一个已退役的物理别名会撤销其整个组)."""
    table = AgentStatusTable()
    table.alias_pane("tab-1:2", PANE)
    table.retire_pane(PANE)
    fx = table.apply_normalized_status(_ev("working", pane="tab-1:2"), T0)
    assert fx.reason == "retired_pane"


def test_fence_capacity_is_bounded() -> None:
    """Fences form a bounded LRU: the oldest closes are forgotten first (seed 02 §9)."""
    table = AgentStatusTable()
    for i in range(RETIRED_FENCE_CAPACITY + 10):
        table.retire_pane(f"tab-x:00000000-0000-4000-8000-{i:012d}")
    assert table.authority.fence_count() == RETIRED_FENCE_CAPACITY
    assert not table.authority.is_fenced("tab-x:00000000-0000-4000-8000-000000000000")
    newest = RETIRED_FENCE_CAPACITY + 9
    assert table.authority.is_fenced(f"tab-x:00000000-0000-4000-8000-{newest:012d}")


def test_launch_token_commitment_rejects_a_different_token() -> None:
    """The first hook commits the token hash; later hooks must present the same token."""
    table = AgentStatusTable()
    assert (
        table.apply_normalized_status(_ev(launch_token_sha256=_sha("a")), T0).outcome == "applied"
    )
    bad = table.apply_normalized_status(_ev("done", launch_token_sha256=_sha("b")), T0 + 1)
    assert bad.reason == "launch_token_mismatch"
    missing = table.apply_normalized_status(_ev("done"), T0 + 1)
    assert missing.reason == "launch_token_missing"
    assert table.authority.commitments[PANE] == _sha("a")
    assert (
        table.apply_normalized_status(_ev("done", launch_token_sha256=_sha("a")), T0 + 2).outcome
        == "applied"
    )


def test_restart_recommits_the_launch_token() -> None:
    """A live restart replaces the pane's commitment with the new launch's hash."""
    table = AgentStatusTable()
    table.apply_normalized_status(_ev(launch_token_sha256=_sha("old")), T0)
    table.restart_pane(PANE, _sha("new"))
    assert (
        table.apply_normalized_status(_ev(launch_token_sha256=_sha("old")), T0 + 1).reason
        == "launch_token_mismatch"
    )
    assert (
        table.apply_normalized_status(_ev(launch_token_sha256=_sha("new")), T0 + 2).outcome
        == "applied"
    )


def test_connection_watermark_drops_replays() -> None:
    """Events at or below a connection's watermark are replays and are dropped."""
    table = AgentStatusTable()
    assert (
        table.apply_normalized_status(
            _ev(source="terminal", connection_id="c1", connection_seq=5), T0
        ).outcome
        == "applied"
    )
    replay = table.apply_normalized_status(
        _ev("done", source="terminal", connection_id="c1", connection_seq=5), T0 + 1
    )
    assert replay.reason == "replayed"
    fresh = table.apply_normalized_status(
        _ev("done", source="terminal", connection_id="c2", connection_seq=1), T0 + 2
    )
    assert fresh.outcome == "applied"


def test_wall_clock_step_back_keeps_rows_ordered() -> None:
    """A clock stepping back never makes a newer write older than the previous one."""
    table = AgentStatusTable()
    table.apply_normalized_status(_ev("working"), T0)
    table.apply_normalized_status(_ev("done"), T0 - 60_000)
    row = table.row(PANE)
    assert row is not None and row.state == "done" and row.updated_at_ms == T0


def test_old_evidence_does_not_overwrite_newer_row() -> None:
    """A relayed observation older than the row's evidence is stale (seed 03 evidence age)."""
    table = AgentStatusTable()
    table.apply_normalized_status(_ev("working"), T0)
    fx = table.apply_normalized_status(_ev("done", evidence_age_ms=5_000), T0 + 1_000)
    assert fx.reason == "stale_evidence"


# The removals a late observation must not undo (seed 03 R10), each at T0 + 1_000.
REMOVALS: dict[str, Callable[[AgentStatusTable], object]] = {
    "clear_pane": lambda t: t.clear_pane(PANE, "closed", T0 + 1_000),
    "pty_exited": lambda t: t.pty_exited(PANE, "term_1", 0, T0 + 1_000),
    "session_ended": lambda t: t.apply_normalized_status(_ev(None), T0 + 1_000),
    "worktree_removed": lambda t: t.drop_worktree(WT, "worktree_removed", T0 + 1_000),
}


@pytest.mark.parametrize("removal", sorted(REMOVALS))
def test_evidence_from_before_a_removal_does_not_bring_the_row_back(removal: str) -> None:
    """The evidence age outlives the row: an observation dated before the clear (a relay
    or queue delivering it late) is stale, not a new row; a later one applies."""
    table = AgentStatusTable()
    table.apply_normalized_status(_ev("working"), T0)
    REMOVALS[removal](table)
    assert table.row(PANE) is None
    late = table.apply_normalized_status(_ev("working", evidence_age_ms=1_500), T0 + 2_000)
    assert (late.outcome, late.reason, late.events) == ("rejected", "stale_evidence", ())
    assert table.row(PANE) is None
    after = table.apply_normalized_status(_ev("done", evidence_age_ms=500), T0 + 2_000)
    assert after.outcome == "applied"


def test_a_live_restart_forgets_the_removal_for_its_new_launch() -> None:
    """A new launch in the pane: its first observation may predate the restart's
    arrival (scanned while ``restart_pane`` was in flight) and still applies."""
    table = AgentStatusTable()
    table.apply_normalized_status(_ev("working"), T0)
    table.clear_pane(PANE, "closed", T0 + 1_000)
    table.restart_pane(PANE, _sha("next"), WT)
    first = _ev("working", source="terminal", evidence_age_ms=1_500)
    assert table.apply_normalized_status(first, T0 + 2_000).outcome == "applied"


def test_removals_are_remembered_within_a_bound() -> None:
    """One memory per pane, bounded like the other per-pane memories: the oldest
    removal is forgotten first."""
    table = AgentStatusTable()
    table.clear_pane(PANE, "closed", T0)
    for i in range(CLEARED_CAPACITY):
        table.clear_pane(f"tab-2:3f1c2a9e-0000-4000-8000-{i:012x}", "closed", T0)
    late = table.apply_normalized_status(_ev("working", evidence_age_ms=1_000), T0 + 500)
    assert late.outcome == "applied"


def test_terminal_cannot_overwrite_live_hook_row() -> None:
    """Priority on write: OSC yields to a live hook row, then takes over after the hold."""
    table = AgentStatusTable()
    table.apply_normalized_status(_ev("blocked"), T0)
    fx = table.apply_normalized_status(_ev("working", source="terminal"), T0 + 1)
    assert fx.reason == "outranked"
    row = table.row(PANE)
    assert row is not None and row.state == "blocked" and row.source == "hook"
    later = table.apply_normalized_status(_ev("working", source="terminal"), T0 + PRIORITY_HOLD_MS)
    assert later.outcome == "applied"
    row = table.row(PANE)
    assert row is not None and row.source == "terminal"


def test_terminal_handle_is_carried_forward() -> None:
    """An HTTP hook without a handle keeps the handle the OSC path resolved (seed 03)."""
    table = AgentStatusTable()
    table.apply_normalized_status(_ev("working", source="terminal", terminal_handle="term_1"), T0)
    table.apply_normalized_status(_ev("done"), T0 + 1)
    row = table.row(PANE)
    assert row is not None and row.terminal_handle == "term_1" and row.source == "hook"


def test_outranked_write_still_attaches_its_handle() -> None:
    """An outranked OSC write cannot change state but supplies the terminal handle."""
    table = AgentStatusTable()
    table.apply_normalized_status(_ev("blocked"), T0)
    fx = table.apply_normalized_status(
        _ev("working", source="terminal", terminal_handle="term_9"), T0 + 1
    )
    row = table.row(PANE)
    assert fx.reason == "outranked_handle_only"
    assert row is not None and row.state == "blocked" and row.terminal_handle == "term_9"


def test_session_end_removes_row_with_one_clear() -> None:
    """A clear request removes the row and publishes exactly one clear."""
    table = AgentStatusTable()
    table.apply_normalized_status(_ev("working"), T0)
    fx = table.apply_normalized_status(_ev(None), T0 + 1)
    assert fx.events == (
        hooks.StatusCleared(pane_key=PANE, worktree_id=WT, reason="session_ended"),
    )
    assert table.rows() == []
    assert table.apply_normalized_status(_ev(None), T0 + 2).outcome == "unchanged"


def test_structured_row_is_never_persistable() -> None:
    """A structured row is applied and published but never scheduled for disk (seed 03 PR 1a)."""
    table = AgentStatusTable()
    fx = table.apply_normalized_status(
        _ev("working", source="structured", structured_host="local"), T0
    )
    assert fx.outcome == "applied" and not fx.persist
    assert table.persistable_rows() == []


def test_legacy_numeric_key_needs_alias_for_http() -> None:
    """HTTP writes need a stable key or a registered alias; OSC may keep a numeric key."""
    table = AgentStatusTable()
    assert (
        table.apply_normalized_status(_ev(pane="tab-1:2"), T0).reason == "legacy_numeric_pane_key"
    )
    osc = table.apply_normalized_status(_ev(pane="tab-1:2", source="terminal"), T0)
    assert osc.outcome == "applied" and not osc.persist
    table.alias_pane("tab-1:2", PANE)
    assert table.row(PANE) is not None
    assert table.apply_normalized_status(_ev("done", pane="tab-1:2"), T0 + 1).outcome == "applied"
    row = table.row(PANE)
    assert row is not None and row.pane_key == PANE and row.state == "done"


def test_restored_row_yields_to_any_live_event() -> None:
    """A hydrated row is no evidence: a live OSC write replaces even a restored hook row."""
    table = AgentStatusTable()
    restored = AgentStatusRow(
        pane_key=PANE,
        worktree_id=WT,
        state="working",
        source="hook",
        updated_at_ms=T0,
        state_since_ms=T0,
        restored_unconfirmed=True,
    )
    table.hydrate([restored], {})
    fx = table.apply_normalized_status(_ev("working", source="terminal"), T0 + 5)
    row = table.row(PANE)
    assert fx.outcome == "applied"
    assert row is not None and not row.restored_unconfirmed and row.state_since_ms == T0 + 5


def test_bad_pane_key_is_rejected() -> None:
    """A key that is not tabId:leaf is the caller's fault."""
    table = AgentStatusTable()
    assert table.apply_normalized_status(_ev(pane="no-colon"), T0).reason == "bad_pane_key"


@given(st.text(max_size=300))
def test_pane_key_parser_never_crashes(text: str) -> None:
    """Any text either parses to a tab/leaf pair that round-trips or is refused."""
    key = parse_pane_key(text)
    if key is not None:
        assert f"{key.tab_id}:{key.leaf}" == text


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["working", "blocked", "waiting", "done", None]),
            st.sampled_from(["hook", "terminal", "structured"]),
            st.integers(min_value=-10_000, max_value=10_000),
        ),
        max_size=40,
    )
)
def test_rev_and_updated_at_never_decrease(ops: list[tuple[str | None, str, int]]) -> None:
    """Whatever the order of writes and clock jumps, rev grows and updated_at never drops."""
    table = AgentStatusTable()
    last_rev, last_at = 0, 0
    for state, source, jump in ops:
        table.apply_normalized_status(_ev(state, source=source), T0 + jump)
        assert table.rev >= last_rev
        last_rev = table.rev
        row = table.row(PANE)
        if row is not None:
            assert row.updated_at_ms >= last_at
            last_at = row.updated_at_ms


def test_hydrated_rows_keep_write_order_ahead_of_new_writes() -> None:
    """After hydration, new writes get revs above every restored row's rev."""
    table = AgentStatusTable()
    restored = AgentStatusRow(
        pane_key=PANE,
        worktree_id=WT,
        state="done",
        source="hook",
        updated_at_ms=T0,
        state_since_ms=T0,
        rev=41,
    )
    table.hydrate([restored], {})
    other = "tab-2:3f1c2a9e-0000-4000-8000-000000000002"
    table.apply_normalized_status(_ev("working", pane=other), T0 - 10_000)
    row = table.row(other)
    assert row is not None and row.rev == 42 and row.updated_at_ms == T0


def test_rows_carry_their_execution_host_id() -> None:
    """Every row names the host whose table holds it, so mirrors of several hosts never merge."""
    table = AgentStatusTable("ssh:build-box")
    fx = table.apply_normalized_status(_ev("working"), T0)
    row = table.row(PANE)
    assert row is not None and row.host_id == "ssh:build-box"
    assert fx.events == (hooks.StatusSet(row=row),)
    (local,) = AgentStatusTable().apply_normalized_status(_ev("done"), T0).events
    assert isinstance(local, hooks.StatusSet) and local.row.host_id == "local"


def test_the_same_connections_next_message_is_never_stale_by_clock_rounding() -> None:
    """ptyd's link sends working then blocked within a millisecond: the evidence ages
    (rounded in another process) may put blocked 1 ms "before" working; the connection's
    sequence, not the clocks, orders them."""
    table = AgentStatusTable()
    first = _ev("working", source="terminal", connection_id="c1", connection_seq=1)
    assert table.apply_normalized_status(first, T0).outcome == "applied"
    second = _ev(
        "blocked", source="terminal", connection_id="c1", connection_seq=2, evidence_age_ms=1
    )
    assert table.apply_normalized_status(second, T0).outcome == "applied"
    row = table.row(PANE)
    assert row is not None and row.state == "blocked"
    other = _ev("done", source="terminal", connection_id="c2", connection_seq=1, evidence_age_ms=5)
    assert table.apply_normalized_status(other, T0).reason == "stale_evidence"


def test_a_key_typed_before_the_ask_answers_nothing() -> None:
    """ptyd's word of a key can reach hooks after the ask the key itself caused (its
    queue lagged: the web test's agent typed `ask` and its held request was released as
    answered in its terminal). The key's age says it came first: the row stays blocked."""
    table = AgentStatusTable()
    table.apply_normalized_status(_ev("working", agent="claude"), T0)
    table.apply_normalized_status(_ev("blocked", agent="claude"), T0 + 100)
    early = table.pane_input(PANE, T0 + 300, evidence_age_ms=250)  # typed at T0 + 50
    assert (early.outcome, early.reason) == ("unchanged", "typed_before_the_ask")
    row = table.row(PANE)
    assert row is not None and row.state == "blocked"
    answer = table.pane_input(PANE, T0 + 400, evidence_age_ms=50)  # typed at T0 + 350
    assert answer.outcome == "applied"
    row = table.row(PANE)
    assert row is not None and row.state == "working" and row.detail == "prompt answered"
