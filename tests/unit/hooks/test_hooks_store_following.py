"""The store's facts in the pure core: pane retirements and worktree renames (§3.2)."""

from __future__ import annotations

import itertools
import logging
from pathlib import Path

import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from actors.hooks.service import HooksService
from actors.hooks.status_table import AgentStatusTable, StatusEvent
from actors.hooks.store_follower import (
    CONSUMER,
    FOLLOWED,
    StoreFollower,
    removal_candidates,
    renamed_to,
)
from orca.actor import ActorContext
from orca.actor.publisher import EventPublisher
from orca.actor.rpc_server import RpcServer
from orca.contracts import hooks, store
from orca.contracts.base import DecodeStats, decode_event_data, specs_by_type
from orca.paths import resolve_paths
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
    store = AgentStatusTable("local")
    store.apply_normalized_status(_ev(worktree_id=OLD), T0)
    fx = store.retire_from_store("local", TAB, LEAF, T0 + 5)
    assert fx.outcome == "applied" and fx.persist
    assert fx.events == (hooks.StatusCleared(pane_key=PANE, worktree_id=OLD, reason="retired"),)
    assert store.row(PANE) is None
    late = store.apply_normalized_status(_ev("done", worktree_id=OLD), T0 + 6)
    assert (late.outcome, late.reason) == ("rejected", "retired_pane")
    (fence,) = store.authority.fences()
    assert (fence.pane_key, fence.retired_at_ms) == (PANE, T0 + 5)


def test_store_retirement_of_another_host_keeps_this_hosts_row() -> None:
    """A retirement for another execution host publishes no clear for this host's row."""
    store = AgentStatusTable("local")
    store.apply_normalized_status(_ev(worktree_id=OLD), T0)
    fx = store.retire_from_store("ssh:other", TAB, LEAF, T0 + 1)
    assert fx.events == ()
    assert store.row(PANE) is not None
    assert store.authority.is_fenced(PANE)


def test_store_retirement_with_a_malformed_pane_is_rejected() -> None:
    """A tab id with ':' cannot form a pane key: rejected, nothing fenced."""
    store = AgentStatusTable("local")
    fx = store.retire_from_store("local", "a:b", LEAF)
    assert (fx.outcome, fx.reason) == ("rejected", "bad_pane_key")
    assert store.authority.fence_count() == 0


def test_rename_moves_rows_and_publishes_each_under_the_new_id() -> None:
    """worktree.renamed re-files every row of the old id and publishes agentStatus.set."""
    store = AgentStatusTable()
    store.apply_normalized_status(_ev(worktree_id=OLD), T0)
    store.apply_normalized_status(_ev(pane=OTHER, worktree_id="repo1::/src/other"), T0)
    rev = store.rev
    fx = store.rekey_worktree(OLD, NEW)
    assert fx.outcome == "applied" and fx.persist
    (moved,) = fx.events
    assert isinstance(moved, hooks.StatusSet) and moved.row.worktree_id == NEW
    row = store.row(PANE)
    assert row is not None and row.worktree_id == NEW and row.rev > rev
    other = store.row(OTHER)
    assert other is not None and other.worktree_id == "repo1::/src/other"


def test_rename_of_a_worktree_without_rows_changes_nothing_visible() -> None:
    """No rows under the old id: no events, nothing to persist."""
    store = AgentStatusTable()
    fx = store.rekey_worktree(OLD, NEW)
    assert (fx.outcome, fx.events, fx.persist) == ("unchanged", (), False)


def test_write_naming_the_old_id_lands_under_the_new_id() -> None:
    """An agent launched before the move keeps reporting the old id; its row uses the new."""
    store = AgentStatusTable()
    store.apply_normalized_status(_ev(worktree_id=OLD), T0)
    store.rekey_worktree(OLD, NEW)
    fx = store.apply_normalized_status(_ev("done", worktree_id=OLD), T0 + 1)
    assert fx.outcome == "applied"
    row = store.row(PANE)
    assert row is not None and (row.state, row.worktree_id) == ("done", NEW)


def test_osc_row_for_a_known_pane_follows_the_rename() -> None:
    """A pane remembered without a row (OSC names no worktree) is re-keyed too."""
    store = AgentStatusTable()
    store.restart_pane(PANE, worktree_id=OLD)
    store.rekey_worktree(OLD, NEW)
    fx = store.apply_normalized_status(_ev(source="terminal", worktree_id=""), T0)
    assert fx.outcome == "applied"
    row = store.row(PANE)
    assert row is not None and row.worktree_id == NEW


def test_renames_chain_and_a_rename_back_ends() -> None:
    """A -> B -> C resolves A to C; renaming back C -> A makes A current again."""
    store = AgentStatusTable()
    store.rekey_worktree("r::/a", "r::/b")
    store.rekey_worktree("r::/b", "r::/c")
    assert store.current_worktree("r::/a") == "r::/c"
    store.rekey_worktree("r::/c", "r::/a")
    assert store.current_worktree("r::/a") == "r::/a"
    assert store.current_worktree("r::/b") == "r::/a"


@given(st.lists(st.sampled_from(["r::/a", "r::/b", "r::/c", "r::/d"]), min_size=2, max_size=20))
def test_any_rename_sequence_leaves_the_last_target_current(ids: list[str]) -> None:
    """Whatever the renames, resolution terminates and the last target resolves to itself."""
    store = AgentStatusTable()
    for old, new in itertools.pairwise(ids):
        store.rekey_worktree(old, new)
    assert store.current_worktree(ids[-1]) == ids[-1]
    for worktree_id in ids:
        assert store.current_worktree(store.current_worktree(worktree_id)) == (
            store.current_worktree(worktree_id)
        )


def test_store_events_decode_into_their_facts() -> None:
    """Both followed events decode with the store contract; other types are not followed."""
    specs = specs_by_type(FOLLOWED)
    retired = _event(
        store.PANE_RETIRED.type, {"hostId": "local", "tabId": TAB, "leafId": LEAF, "revision": 3}
    )
    assert decode_event_data(retired, specs, consumer="test") == store.PaneRetired(
        host_id="local", tab_id=TAB, leaf_id=LEAF, revision=3
    )
    renamed = _event(store.WORKTREE_RENAMED.type, {"oldId": OLD, "newId": NEW})
    assert decode_event_data(renamed, specs, consumer="test") == store.WorktreeRenamed(
        old_id=OLD, new_id=NEW
    )
    assert decode_event_data(_event("repo.added", {}), specs, consumer="test") is None


@given(
    st.sampled_from([spec.type for spec in FOLLOWED]),
    st.one_of(
        st.none(),
        st.integers(),
        st.text(),
        st.dictionaries(
            st.sampled_from(["hostId", "tabId", "leafId", "oldId", "newId", "revision"]),
            st.one_of(st.none(), st.integers(), st.just("")),
        ),
    ),
)
def test_malformed_store_events_are_counted_and_dropped(type_: str, data: object) -> None:
    """A malformed event is the publisher's fault: counted, dropped, never raised."""
    stats = DecodeStats()
    specs = specs_by_type(FOLLOWED)
    assert decode_event_data(_event(type_, data), specs, consumer="t", stats=stats) is None
    assert (stats.malformed, stats.decoded) == (1, 0)


def _resolved(status: str, worktree_id: str | None) -> store.IdentityResolved:
    return store.IdentityResolved(status=status, worktree_id=worktree_id)  # type: ignore[arg-type]


def test_identity_resolution_re_keys_only_aliases() -> None:
    """Only an ``alias`` answer naming another id re-keys; current and unknown do not."""
    assert renamed_to(OLD, _resolved("alias", NEW)) == NEW
    assert renamed_to(OLD, _resolved("current", OLD)) is None
    assert renamed_to(OLD, _resolved("unknown", None)) is None
    assert renamed_to(OLD, _resolved("alias", None)) is None
    assert renamed_to(OLD, _resolved("alias", OLD)) is None


def test_removal_events_name_the_worktrees_to_check() -> None:
    """A meta removal names its ids; a repo or folder removal also every filed id of it."""
    filed = ["repo1::/src/a", "repo1::/src/main", "repo2::/x", "folder:f1"]
    meta = store.WorktreeMetaRemoved(worktree_ids=["repo1::/src/a"])
    assert removal_candidates(meta, filed) == {"repo1::/src/a"}
    repo = store.RepoRemoved(id="repo1", worktree_ids=["repo1::/src/gone"])
    assert removal_candidates(repo, filed) == {
        "repo1::/src/a",
        "repo1::/src/main",
        "repo1::/src/gone",
    }
    folder = store.FolderWorkspaceRemoved(id="f1")
    assert removal_candidates(folder, filed) == {"folder:f1"}
    assert removal_candidates(store.FolderWorkspaceRemoved(id="f2"), filed) == set()


async def test_follower_logs_a_malformed_store_event_once_and_applies_the_next(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A paneRetired without leafId is logged once by the shared decoder; the next retires."""
    paths = resolve_paths({"ORCA_HOME": str(tmp_path / "home")}).ensure()
    table = AgentStatusTable("local")
    table.apply_normalized_status(_ev(worktree_id=OLD), T0)
    send, emitted = trio.open_memory_channel[hooks.StatusEventData](100)
    service = HooksService(table, send.send_nowait, lambda: None)
    store_pub = EventPublisher("store")
    store_pub.bind(paths.ipc_endpoint("store", "pub"))
    rpc, events = RpcServer("hooks"), EventPublisher("hooks")
    flushes: list[None] = []
    try:
        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                ctx = ActorContext("hooks", paths, rpc, events, nursery)
                follower = StoreFollower(ctx, service, lambda: flushes.append(None))
                await nursery.start(follower.run)
                # PUB drops what a subscription still in flight would get (slow joiner):
                # repeat a rename (a no-op once applied) until the follower has seen it.
                while True:
                    store_pub.emit(store.WorktreeRenamed(old_id=OLD, new_id=NEW))
                    with trio.move_on_after(0.05):
                        moved = await emitted.receive()
                        break
                assert isinstance(moved, hooks.StatusSet) and moved.row.worktree_id == NEW
                with caplog.at_level(logging.WARNING):
                    store_pub.publish(store.PANE_RETIRED.type, {"hostId": "local", "tabId": TAB})
                    store_pub.emit(
                        store.PaneRetired(host_id="local", tab_id=TAB, leaf_id=LEAF, revision=1)
                    )
                    cleared = await emitted.receive()
                nursery.cancel_scope.cancel()
    finally:
        store_pub.close()
        rpc.close()
        events.close()
    assert cleared == hooks.StatusCleared(pane_key=PANE, worktree_id=NEW, reason="retired")
    assert table.row(PANE) is None and flushes == [None]
    assert follower.subscriber.stats.malformed == 1
    warnings = [r for r in caplog.records if CONSUMER in r.getMessage()]
    assert len(warnings) == 1 and "malformed" in warnings[0].getMessage()
