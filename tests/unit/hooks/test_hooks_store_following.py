"""The store's facts in the pure core: pane retirements and worktree renames (§3.2)."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from actors.hooks.store_core import AgentStatusStore, StatusEvent
from actors.hooks.store_follower import (
    PaneRetired,
    WorktreeRenamed,
    parse_resolution,
    parse_store_event,
)
from orca.wire.envelope import Event

TAB, LEAF = "tab-1", "3f1c2a9e-0000-4000-8000-000000000001"
PANE = f"{TAB}:{LEAF}"
OTHER = "tab-2:3f1c2a9e-0000-4000-8000-000000000002"
OLD = "repo1::/src/before"
NEW = "repo1::/src/after"
T0 = 1_800_000_000_000


def _ev(state: str | None = "working", *, pane: str = PANE, **kw: object) -> StatusEvent:
    kw.setdefault("source", "hook")
    return StatusEvent(pane_key=pane, state=state, **kw)  # type: ignore[arg-type]


def _event(type_: str, data: object) -> Event:
    return Event(v=1, src="store", epoch="e", seq=1, type=type_, data=data)


def test_store_retirement_clears_the_row_and_fences_the_pane() -> None:
    """session.paneRetired acts as retire_pane: one clear, then late status rejected (§3.2)."""
    store = AgentStatusStore("local")
    store.apply_normalized_status(_ev(worktree_id=OLD), T0)
    fx = store.retire_from_store("local", TAB, LEAF, T0 + 5)
    assert fx.outcome == "applied" and fx.persist
    assert [(p.type, p.data["paneKey"]) for p in fx.publish] == [("agentStatus.clear", PANE)]
    assert store.row(PANE) is None
    late = store.apply_normalized_status(_ev("done", worktree_id=OLD), T0 + 6)
    assert (late.outcome, late.reason) == ("rejected", "retired_pane")
    (fence,) = store.authority.fences()
    assert (fence.pane_key, fence.retired_at_ms) == (PANE, T0 + 5)


def test_store_retirement_of_another_host_keeps_this_hosts_row() -> None:
    """A retirement for another execution host publishes no clear for this host's row."""
    store = AgentStatusStore("local")
    store.apply_normalized_status(_ev(worktree_id=OLD), T0)
    fx = store.retire_from_store("ssh:other", TAB, LEAF, T0 + 1)
    assert fx.publish == ()
    assert store.row(PANE) is not None
    assert store.authority.is_fenced(PANE)


def test_store_retirement_with_a_malformed_pane_is_rejected() -> None:
    """A tab id with ':' cannot form a pane key: rejected, nothing fenced."""
    store = AgentStatusStore("local")
    fx = store.retire_from_store("local", "a:b", LEAF)
    assert (fx.outcome, fx.reason) == ("rejected", "bad_pane_key")
    assert store.authority.fence_count() == 0


def test_rename_moves_rows_and_publishes_each_under_the_new_id() -> None:
    """worktree.renamed re-files every row of the old id and publishes agentStatus.set."""
    store = AgentStatusStore()
    store.apply_normalized_status(_ev(worktree_id=OLD), T0)
    store.apply_normalized_status(_ev(pane=OTHER, worktree_id="repo1::/src/other"), T0)
    rev = store.rev
    fx = store.rekey_worktree(OLD, NEW)
    assert fx.outcome == "applied" and fx.persist
    assert [(p.type, p.data["row"]["worktreeId"]) for p in fx.publish] == [  # type: ignore[index]
        ("agentStatus.set", NEW)
    ]
    row = store.row(PANE)
    assert row is not None and row.worktree_id == NEW and row.rev > rev
    other = store.row(OTHER)
    assert other is not None and other.worktree_id == "repo1::/src/other"


def test_rename_of_a_worktree_without_rows_changes_nothing_visible() -> None:
    """No rows under the old id: no events, nothing to persist."""
    store = AgentStatusStore()
    fx = store.rekey_worktree(OLD, NEW)
    assert (fx.outcome, fx.publish, fx.persist) == ("unchanged", (), False)


def test_write_naming_the_old_id_lands_under_the_new_id() -> None:
    """An agent launched before the move keeps reporting the old id; its row uses the new."""
    store = AgentStatusStore()
    store.apply_normalized_status(_ev(worktree_id=OLD), T0)
    store.rekey_worktree(OLD, NEW)
    fx = store.apply_normalized_status(_ev("done", worktree_id=OLD), T0 + 1)
    assert fx.outcome == "applied"
    row = store.row(PANE)
    assert row is not None and (row.state, row.worktree_id) == ("done", NEW)


def test_osc_row_for_a_known_pane_follows_the_rename() -> None:
    """A pane remembered without a row (OSC names no worktree) is re-keyed too."""
    store = AgentStatusStore()
    store.restart_pane(PANE, worktree_id=OLD)
    store.rekey_worktree(OLD, NEW)
    fx = store.apply_normalized_status(_ev(source="terminal", worktree_id=""), T0)
    assert fx.outcome == "applied"
    row = store.row(PANE)
    assert row is not None and row.worktree_id == NEW


def test_renames_chain_and_a_rename_back_ends() -> None:
    """A -> B -> C resolves A to C; renaming back C -> A makes A current again."""
    store = AgentStatusStore()
    store.rekey_worktree("r::/a", "r::/b")
    store.rekey_worktree("r::/b", "r::/c")
    assert store.current_worktree("r::/a") == "r::/c"
    store.rekey_worktree("r::/c", "r::/a")
    assert store.current_worktree("r::/a") == "r::/a"
    assert store.current_worktree("r::/b") == "r::/a"


@given(st.lists(st.sampled_from(["r::/a", "r::/b", "r::/c", "r::/d"]), min_size=2, max_size=20))
def test_any_rename_sequence_leaves_the_last_target_current(ids: list[str]) -> None:
    """Whatever the renames, resolution terminates and the last target resolves to itself."""
    store = AgentStatusStore()
    for old, new in itertools.pairwise(ids):
        store.rekey_worktree(old, new)
    assert store.current_worktree(ids[-1]) == ids[-1]
    for worktree_id in ids:
        assert store.current_worktree(store.current_worktree(worktree_id)) == (
            store.current_worktree(worktree_id)
        )


def test_store_events_parse_into_their_facts() -> None:
    """Both followed events parse; other types are ignored."""
    retired = _event("session.paneRetired", {"hostId": "local", "tabId": TAB, "leafId": LEAF})
    assert parse_store_event(retired) == PaneRetired("local", TAB, LEAF)
    renamed = _event("worktree.renamed", {"oldId": OLD, "newId": NEW})
    assert parse_store_event(renamed) == WorktreeRenamed(OLD, NEW)
    assert parse_store_event(_event("repo.added", {})) is None


@given(
    st.sampled_from(["session.paneRetired", "worktree.renamed"]),
    st.one_of(
        st.none(),
        st.integers(),
        st.text(),
        st.dictionaries(
            st.sampled_from(["hostId", "tabId", "leafId", "oldId", "newId"]),
            st.one_of(st.none(), st.integers(), st.just("")),
        ),
    ),
)
def test_malformed_store_events_raise_value_error_only(type_: str, data: object) -> None:
    """A malformed event is the publisher's fault: ValueError, nothing else."""
    try:
        parse_store_event(_event(type_, data))
    except ValueError:
        return
    raise AssertionError(f"accepted malformed {type_} {data!r}")


def test_identity_resolution_re_keys_only_aliases() -> None:
    """Only an ``alias`` answer with a current id re-keys; current and unknown do not."""
    assert parse_resolution({"status": "alias", "worktreeId": NEW}) == NEW
    assert parse_resolution({"status": "current", "worktreeId": OLD}) is None
    assert parse_resolution({"status": "unknown", "worktreeId": None}) is None
    assert parse_resolution({"status": "alias", "worktreeId": None}) is None
    assert parse_resolution(["alias"]) is None
