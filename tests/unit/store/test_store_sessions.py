"""Host session partitions, pane identity normalization and the topology fence
(seed 01 §7.5 ① ③, seed 02 §7-§9)."""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from actors.store import sessions
from actors.store.session_normalize import normalize_session_for_write
from orca.contracts import store
from orca.model.codec import from_builtins, to_builtins
from orca.model.layout import iter_terminal_leaf_ids
from orca.model.panes import is_terminal_leaf_id
from orca.model.session import WorkspaceSessionState
from orca.model.state import PersistedState, session_for_host
from orca.wire.errors import BadRequest

U1, U2, U3 = (str(uuid.UUID(int=i)) for i in (1, 2, 3))


def minter() -> Any:
    counter = itertools.count(100)
    return lambda: str(uuid.UUID(int=next(counter)))


def leaf(leaf_id: str) -> dict[str, Any]:
    return {"type": "leaf", "leafId": leaf_id}


def split(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    return {"type": "split", "direction": "vertical", "first": a, "second": b}


def terminal_session(layouts: dict[str, dict[str, Any]], **extra: Any) -> dict[str, Any]:
    tabs = [
        {"id": t, "entityId": t, "groupId": "g", "worktreeId": "r::/w", "contentType": "terminal"}
        for t in layouts
    ]
    return {
        "terminalLayoutsByTabId": layouts,
        "unifiedTabs": {"r::/w": tabs},
        "tabGroups": {
            "r::/w": [
                {
                    "id": "g",
                    "worktreeId": "r::/w",
                    "tabOrder": list(layouts),
                    "activeTabId": next(iter(layouts), None),
                }
            ]
        },
        **extra,
    }


def set_local(
    state: PersistedState, raw: dict[str, Any], revision: int | None = None, host: str | None = None
) -> PersistedState:
    return sessions.set_session(state, host, raw, revision, minter()).state


def leaves(state: PersistedState, tab: str, host: str = "local") -> list[str]:
    layout = session_for_host(state, host).terminal_layouts_by_tab_id.get(tab)
    return [] if layout is None else list(iter_terminal_leaf_ids(layout.root))


def test_missing_host_id_means_local_and_lives_in_the_bare_field() -> None:
    """No host id → 'local', stored in workspaceSession for downgrade safety (seed 02 §7)."""
    state = set_local(PersistedState(), {"activeTabId": "t"})
    assert state.workspace_session.active_tab_id == "t"
    assert state.workspace_sessions_by_host_id == {}


def test_hosts_do_not_overwrite_each_other() -> None:
    """The same worktree id on two hosts keeps two layouts (seed 01 §7.5 ③)."""
    state = set_local(PersistedState(), {"activeTabId": "local-tab"})
    state = set_local(state, {"activeTabId": "ssh-tab"}, host="ssh:box")
    assert session_for_host(state, "local").active_tab_id == "local-tab"
    assert session_for_host(state, "ssh:box").active_tab_id == "ssh-tab"


def test_invalid_host_id_is_a_bad_request() -> None:
    """A host id that does not parse (bad percent-escape) is refused, not taken as local."""
    with pytest.raises(BadRequest):
        sessions.set_session(PersistedState(), "ssh:%zz", {}, None, minter())


def test_numeric_leaves_are_reminted_and_leaf_maps_follow() -> None:
    """Legacy numeric leaves become UUIDs; all four leaf-keyed maps move with them."""
    raw = terminal_session(
        {
            "t": {
                "root": split(leaf("0"), leaf("1")),
                "activeLeafId": "1",
                "ptyIdsByLeafId": {"0": "pty-a", "1": "pty-b"},
                "buffersByLeafId": {"0": "buf"},
                "scrollbackRefsByLeafId": {"1": "ref"},
                "titlesByLeafId": {"0": "zsh", "stray": "x"},
            }
        },
        sleepingAgentSessionsByPaneKey={"t:1": {"agent": "claude"}},
    )
    state = set_local(PersistedState(), raw)
    a, b = leaves(state, "t")
    assert is_terminal_leaf_id(a) and is_terminal_leaf_id(b) and a != b
    snap = state.workspace_session.terminal_layouts_by_tab_id["t"]
    assert snap.pty_ids_by_leaf_id == {a: "pty-a", b: "pty-b"}
    assert snap.buffers_by_leaf_id == {a: "buf"}
    assert snap.scrollback_refs_by_leaf_id == {b: "ref"}
    assert snap.titles_by_leaf_id == {a: "zsh"}
    assert snap.active_leaf_id == b
    assert state.workspace_session.sleeping_agent_sessions_by_pane_key == {
        f"t:{b}": {"agent": "claude"}
    }


def test_duplicate_leaf_ids_are_split_into_distinct_uuids() -> None:
    """A leaf id occurring twice (same or different tabs) never stays shared."""
    raw = terminal_session(
        {
            "t1": {"root": split(leaf(U1), leaf(U1))},
            "t2": {"root": leaf(U1)},
        }
    )
    state = set_local(PersistedState(), raw)
    all_leaves = leaves(state, "t1") + leaves(state, "t2")
    assert len(set(all_leaves)) == 3 and U1 not in all_leaves


def test_renumbered_leaf_realigns_with_the_stored_uuid_by_position() -> None:
    """An old renderer sending numbers again gets the stored UUIDs back (PTY bindings kept)."""
    state = set_local(
        PersistedState(),
        terminal_session(
            {"t": {"root": split(leaf(U1), leaf(U2)), "ptyIdsByLeafId": {U1: "p1", U2: "p2"}}}
        ),
    )
    state = set_local(state, terminal_session({"t": {"root": split(leaf("0"), leaf("1"))}}))
    assert leaves(state, "t") == [U1, U2]
    assert state.workspace_session.terminal_layouts_by_tab_id["t"].pty_ids_by_leaf_id == {
        U1: "p1",
        U2: "p2",
    }


def test_empty_incoming_pty_binding_never_erases_the_durable_one() -> None:
    """Upstream #217: a pre-spawn snapshot without bindings keeps the stored binding."""
    state = set_local(
        PersistedState(),
        terminal_session({"t": {"root": leaf(U1), "ptyIdsByLeafId": {U1: "pty-live"}}}),
    )
    state = set_local(
        state, terminal_session({"t": {"root": leaf(U1), "titlesByLeafId": {U1: "T"}}})
    )
    snap = state.workspace_session.terminal_layouts_by_tab_id["t"]
    assert snap.pty_ids_by_leaf_id == {U1: "pty-live"} and snap.titles_by_leaf_id == {U1: "T"}


def test_stale_snapshot_after_retirement_cannot_resurrect_the_pane() -> None:
    """After retire_pane a write with the older revision never brings the leaf back (§9)."""
    before = terminal_session(
        {"t": {"root": split(leaf(U1), leaf(U2)), "ptyIdsByLeafId": {U1: "p1", U2: "p2"}}}
    )
    state = set_local(PersistedState(), before, revision=0)
    retired = sessions.retire_session_pane(state, None, "t", U2)
    assert retired.durability == "flush"
    assert to_builtins(retired.result) == {"revision": 1, "durable": True}
    assert retired.events[0] == store.PaneRetired(
        host_id="local", tab_id="t", leaf_id=U2, revision=1
    )
    state = retired.state
    assert leaves(state, "t") == [U1]
    stale = terminal_session(
        {
            "t": {
                "root": split(leaf(U1), leaf(U2)),
                "ptyIdsByLeafId": {U1: "p1", U2: "p2"},
                "titlesByLeafId": {U1: "renamed"},
            }
        }
    )
    change = sessions.set_session(state, None, stale, 0, minter())
    assert change.result.applied == "metadata_only"
    assert leaves(change.state, "t") == [U1]
    snap = change.state.workspace_session.terminal_layouts_by_tab_id["t"]
    assert snap.titles_by_leaf_id == {U1: "renamed"}  # metadata of a survivor does update
    assert U2 not in snap.pty_ids_by_leaf_id


def test_write_without_revision_is_stale_once_the_host_retired_something() -> None:
    """A client that sends no revision cannot prove it saw the retirement."""
    state = set_local(PersistedState(), terminal_session({"t": {"root": leaf(U1)}}))
    state = sessions.retire_session_pane(state, None, "t", U1).state
    state = set_local(state, terminal_session({"t": {"root": leaf(U1)}}))
    assert leaves(state, "t") == []


def test_current_revision_write_may_add_new_panes() -> None:
    """A writer that saw the latest revision changes membership freely."""
    state = set_local(PersistedState(), terminal_session({"t": {"root": leaf(U1)}}))
    state = sessions.retire_session_pane(state, None, "t", U1).state
    state = set_local(state, terminal_session({"t": {"root": leaf(U3)}}), revision=1)
    assert leaves(state, "t") == [U3]


def test_current_revision_write_never_brings_a_retired_pane_back() -> None:
    """A writer that saw the latest revision still cannot add a pane the host retired
    (a UI adopting a terminal that was retired but not yet ended by ptyd)."""
    # (U2 in tab t is kept out by the same rule: its key t:U2 was retired.)
    state = set_local(
        PersistedState(), terminal_session({"t": {"root": split(leaf(U1), leaf(U2))}})
    )
    state = sessions.retire_session_pane(state, None, "t", U2).state
    state = set_local(state, terminal_session({"t": {"root": split(leaf(U1), leaf(U2))}}), 1)
    assert leaves(state, "t") == [U1]
    state = set_local(
        state, terminal_session({"t": {"root": leaf(U1)}, "t2": {"root": leaf(U2)}}), 1
    )
    assert leaves(state, "t2") == [U2]  # (a test of the test: the tab was there)
    state = sessions.retire_session_pane(state, None, "t2", U2).state
    state = set_local(
        state, terminal_session({"t": {"root": leaf(U1)}, "t2": {"root": leaf(U2)}}), 2
    )
    assert leaves(state, "t2") == []
    state = set_local(
        state, terminal_session({"t": {"root": leaf(U1)}, "t3": {"root": leaf(U3)}}), 2
    )
    assert leaves(state, "t3") == [U3]  # a new pane is still added


def test_retiring_the_last_pane_removes_the_tab_everywhere() -> None:
    """A tab whose only pane died leaves layouts, tab rows and its group's order."""
    state = set_local(
        PersistedState(), terminal_session({"t1": {"root": leaf(U1)}, "t2": {"root": leaf(U2)}})
    )
    state = sessions.retire_session_pane(state, None, "t1", U1).state
    session = state.workspace_session
    assert list(session.terminal_layouts_by_tab_id) == ["t2"]
    assert [t.id for t in (session.unified_tabs or {})["r::/w"]] == ["t2"]
    group = (session.tab_groups or {})["r::/w"][0]
    assert group.tab_order == ("t2",) and group.active_tab_id == "t2"


def test_retiring_an_unknown_pane_still_bumps_the_revision() -> None:
    """A pane retired before any save still fences snapshots taken before its exit."""
    change = sessions.retire_session_pane(PersistedState(), "ssh:box", "t", U1)
    assert change.state.topology_revision_by_host_id == {"ssh:box": 1}
    state = set_local(change.state, terminal_session({"t": {"root": leaf(U1)}}), host="ssh:box")
    assert leaves(state, "t", "ssh:box") == []


def test_identical_write_is_unchanged_and_publishes_nothing() -> None:
    """Re-sending the stored session changes nothing (no save, no event)."""
    raw = terminal_session({"t": {"root": leaf(U1)}})
    state = set_local(PersistedState(), raw)
    change = sessions.set_session(state, None, raw, None, minter())
    assert change.state is state and change.events == ()


leaf_ids = st.one_of(st.sampled_from([U1, U2, U3]), st.integers(0, 4).map(str), st.just("pane-x"))


def split_trees(
    leaf_strategy: st.SearchStrategy[str], depth: int
) -> st.SearchStrategy[dict[str, Any]]:
    """Split trees up to ``depth`` levels (at most 2**depth leaves), built level by level.

    Not ``st.recursive``: hypothesis checks an extend function by re-reading this file's
    source, which goes wrong when the file changes on disk during a long run.
    """
    trees_so_far = leaf_strategy.map(leaf)
    for _ in range(depth):
        trees_so_far = trees_so_far | st.tuples(trees_so_far, trees_so_far).map(
            lambda ab: split(*ab)
        )
    return trees_so_far


def trees() -> st.SearchStrategy[dict[str, Any]]:
    return split_trees(leaf_ids, depth=3)


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(st.sampled_from(["a", "b", "c"]), trees(), min_size=1, max_size=3),
    st.dictionaries(st.sampled_from(["a", "b"]), trees(), max_size=2),
)
def test_normalized_leaves_are_unique_uuids_and_normalization_is_idempotent(
    layouts: dict[str, Any], previous_layouts: dict[str, Any]
) -> None:
    """Whatever arrives, every stored leaf is a UUID unique in the host's session."""
    mint = minter()
    previous = normalize_session_for_write(
        from_builtins(
            WorkspaceSessionState,
            {"terminalLayoutsByTabId": {k: {"root": v} for k, v in previous_layouts.items()}},
        ),
        WorkspaceSessionState(),
        mint,
    ).session
    incoming = from_builtins(
        WorkspaceSessionState,
        {
            "terminalLayoutsByTabId": {
                k: {"root": v, "titlesByLeafId": {"0": "t"}} for k, v in layouts.items()
            }
        },
    )
    result = normalize_session_for_write(incoming, previous, mint).session
    found = [
        x
        for s in result.terminal_layouts_by_tab_id.values()
        for x in iter_terminal_leaf_ids(s.root)
    ]
    assert all(is_terminal_leaf_id(x) for x in found)
    assert len(found) == len(set(found))
    for snap in result.terminal_layouts_by_tab_id.values():
        assert set(snap.titles_by_leaf_id) <= set(iter_terminal_leaf_ids(snap.root))
    again = normalize_session_for_write(result, result, mint)
    assert again.session is result


def test_patch_replaces_named_fields_only_and_keeps_unknown_ones() -> None:
    """session.patch merges top-level fields; fields from newer builds survive."""
    state = set_local(
        PersistedState(), terminal_session({"t": {"root": leaf(U1)}}, futureField={"x": 1})
    )
    change = sessions.patch_session(
        state, None, {"activeTabId": "t", "newerField": 2}, None, minter()
    )
    session = change.state.workspace_session
    assert session.active_tab_id == "t"
    assert session.terminal_layouts_by_tab_id is state.workspace_session.terminal_layouts_by_tab_id
    assert session.extra == {"futureField": {"x": 1}, "newerField": 2}


def apply_delta(old: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = data["fields"]
    return {k: v for k, v in old.items() if k not in data["removed"]} | fields


def test_session_changed_event_carries_only_what_changed() -> None:
    """The event is a top-level delta a mirror applies to reach the stored session."""
    state = set_local(
        PersistedState(), terminal_session({"t": {"root": leaf(U1)}}, activeTabId="t")
    )
    change = sessions.patch_session(
        state, None, {"activeTabId": None, "activeRepoId": "r"}, None, minter()
    )
    (event,) = change.events
    assert isinstance(event, store.SessionChanged)
    data = to_builtins(event)
    assert data["fields"] == {"activeRepoId": "r"}
    assert data["removed"] == ["activeTabId"]
    before = to_builtins(state.workspace_session)
    assert apply_delta(before, data) == to_builtins(change.state.workspace_session)
    retired = sessions.retire_session_pane(change.state, None, "t", U1)
    assert isinstance(retired.events[1], store.SessionChanged)
    changed = to_builtins(retired.events[1])
    assert changed["revision"] == 1
    assert apply_delta(to_builtins(change.state.workspace_session), changed) == to_builtins(
        retired.state.workspace_session
    )


pool = [str(uuid.UUID(int=i)) for i in range(1, 7)]
uuid_trees = split_trees(st.sampled_from(pool), depth=2)
tab_layouts = st.dictionaries(
    st.sampled_from(["a", "b", "c"]),
    uuid_trees.map(lambda tree: {"root": tree}),
    min_size=1,
    max_size=3,
)


def panes(state: PersistedState) -> set[tuple[str, str]]:
    layouts = state.workspace_session.terminal_layouts_by_tab_id
    return {(t, x) for t, s in layouts.items() for x in iter_terminal_leaf_ids(s.root)}


@settings(max_examples=150, deadline=None)
@given(tab_layouts, tab_layouts, st.integers(min_value=0, max_value=50), st.sampled_from([0, None]))
@example(  # found by this test: a repeated surviving leaf grew into a new pane when re-minted
    stored={"a": {"root": leaf(U2)}, "b": {"root": leaf(U1)}},
    stale={"a": {"root": split(leaf(U2), leaf(U2))}},
    retire_index=1,
    revision=0,
)
def test_no_stale_write_ever_adds_a_pane(
    stored: dict[str, Any], stale: dict[str, Any], retire_index: int, revision: int | None
) -> None:
    """Whatever a stale snapshot holds, the panes after it are a subset of those before (§9)."""
    state = set_local(PersistedState(), terminal_session(stored), revision=0)
    existing = sorted(panes(state))
    tab, leaf_id = existing[retire_index % len(existing)]
    state = sessions.retire_session_pane(state, None, tab, leaf_id).state
    before = panes(state)
    after = set_local(state, terminal_session(stale), revision=revision)
    assert panes(after) <= before
    assert (tab, leaf_id) not in panes(after)


def test_stale_snapshot_repeating_a_surviving_leaf_keeps_one_pane() -> None:
    """A stale layout showing a live leaf twice stores that pane once, nothing minted (§9)."""
    state = set_local(
        PersistedState(),
        terminal_session(
            {"a": {"root": split(leaf(U1), leaf(U2)), "ptyIdsByLeafId": {U1: "p1", U2: "p2"}}}
        ),
        revision=0,
    )
    state = sessions.retire_session_pane(state, None, "a", U2).state
    stale = terminal_session(
        {
            "a": {
                "root": split(leaf(U1), split(leaf(U2), leaf(U1))),
                "titlesByLeafId": {U1: "renamed"},
            }
        }
    )
    change = sessions.set_session(state, None, stale, 0, minter())
    assert change.result.applied == "metadata_only"
    assert leaves(change.state, "a") == [U1]
    snap = change.state.workspace_session.terminal_layouts_by_tab_id["a"]
    assert snap.titles_by_leaf_id == {U1: "renamed"}
    assert snap.pty_ids_by_leaf_id == {U1: "p1"}
