"""Retired-pane fences in last-status.json: written in order, bounded, restored (seed 02 §9, §13)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from actors.hooks.pane_authority import RETIRED_FENCE_CAPACITY, Fence
from actors.hooks.status_file import decode_status_file, encode_status_file
from actors.hooks.status_table import AgentStatusTable, StatusEvent

PANE = "tab-1:3f1c2a9e-0000-4000-8000-000000000001"
WT = "repo1::/src/wt-a"
T0 = 1_800_000_000_000


def _key(i: int) -> str:
    return f"tab-x:00000000-0000-4000-8000-{i:012d}"


def _working(pane: str = PANE) -> StatusEvent:
    return StatusEvent(pane_key=pane, state="working", source="hook", worktree_id=WT)


def _reload(store: AgentStatusTable, now_ms: int = T0) -> AgentStatusTable:
    """What a restarted hooks actor holds after reading the file ``store`` would write."""
    data = encode_status_file(store.rows(), store.authority.commitments, store.authority.fences())
    loaded = decode_status_file(data, now_ms)
    fresh = AgentStatusTable()
    fresh.hydrate(loaded.rows, loaded.commitments, loaded.fences)
    return fresh


def test_fence_survives_a_reload_until_a_live_restart() -> None:
    """A pane retired before a restart rejects late status after it; restart lifts it (§9)."""
    store = AgentStatusTable()
    store.apply_normalized_status(_working(), T0)
    store.retire_pane(PANE, "r1", T0 + 10)
    reloaded = _reload(store)
    assert reloaded.row(PANE) is None
    late = reloaded.apply_normalized_status(_working(), T0 + 20)
    assert (late.outcome, late.reason) == ("rejected", "retired_pane")
    assert reloaded.authority.fences() == [Fence(PANE, "r1", T0 + 10)]
    assert reloaded.restart_pane(PANE) is True
    assert reloaded.apply_normalized_status(_working(), T0 + 30).outcome == "applied"
    assert _reload(reloaded).authority.fence_count() == 0


def test_fences_keep_their_order_and_capacity_across_a_reload() -> None:
    """The reloaded fences are the newest RETIRED_FENCE_CAPACITY, oldest first, as in memory."""
    store = AgentStatusTable()
    for i in range(RETIRED_FENCE_CAPACITY + 5):
        store.retire_pane(_key(i), f"r{i}", T0 + i)
    reloaded = _reload(store)
    assert reloaded.authority.fences() == store.authority.fences()
    assert reloaded.authority.fence_count() == RETIRED_FENCE_CAPACITY
    assert reloaded.authority.fences()[0] == Fence(_key(5), "r5", T0 + 5)
    # The bound holds after the reload too: one more close evicts the oldest.
    reloaded.retire_pane(_key(10_000_000), "late", T0 + 10**6)
    assert reloaded.authority.fence_count() == RETIRED_FENCE_CAPACITY
    assert not reloaded.authority.is_fenced(_key(5))


def test_an_oversized_fence_list_on_disk_is_cut_to_capacity() -> None:
    """A file holding more fences than the bound yields only the newest ones."""
    fences = [Fence(_key(i), "r", T0) for i in range(RETIRED_FENCE_CAPACITY + 3)]
    loaded = decode_status_file(encode_status_file([], {}, fences), T0)
    assert len(loaded.fences) == RETIRED_FENCE_CAPACITY
    assert loaded.fences[0].pane_key == _key(3)


def test_a_row_written_before_its_pane_was_fenced_is_not_hydrated() -> None:
    """If a file holds both a row and a fence for one pane, the fence wins."""
    store = AgentStatusTable()
    store.apply_normalized_status(_working(), T0)
    rows = store.rows()
    data = encode_status_file(rows, {}, [Fence(PANE, "r", T0 + 1)])
    loaded = decode_status_file(data, T0 + 2)
    fresh = AgentStatusTable()
    fresh.hydrate(loaded.rows, loaded.commitments, loaded.fences)
    assert fresh.rows() == [] and fresh.authority.is_fenced(PANE)


def test_a_retirement_always_asks_for_a_save() -> None:
    """Even a pane with no row must be saved: the fence itself is the new fact."""
    store = AgentStatusTable()
    assert store.retire_pane(PANE, None, T0).persist


def test_lifted_fences_are_not_written() -> None:
    """After a live restart the file no longer lists the pane."""
    store = AgentStatusTable()
    store.retire_pane(PANE, "r", T0)
    store.restart_pane(PANE)
    document = json.loads(
        encode_status_file(store.rows(), store.authority.commitments, store.authority.fences())
    )
    assert document["retiredPanes"] == []


@given(
    st.one_of(
        st.none(),
        st.integers(),
        st.text(max_size=20),
        st.lists(
            st.one_of(
                st.none(),
                st.integers(),
                st.dictionaries(
                    st.sampled_from(["paneKey", "retireId", "retiredAtMs"]),
                    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=60)),
                ),
            ),
            max_size=5,
        ),
    )
)
def test_malformed_fence_lists_cost_fences_never_a_crash(raw: object) -> None:
    """Whatever the file's retiredPanes holds, decoding keeps only well-formed fences."""
    document = {"version": 1, "rows": [], "launchTokenSha256": {}, "retiredPanes": raw}
    loaded = decode_status_file(json.dumps(document).encode(), T0)
    for fence in loaded.fences:
        assert isinstance(fence.retired_at_ms, int) and not isinstance(fence.retired_at_ms, bool)
        assert ":" in fence.pane_key
