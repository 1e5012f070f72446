"""Saved PTY bindings reconciled with ptyd's truth (issue 13; actors/store/pty_bindings.py)."""

from __future__ import annotations

import msgspec

from actors.store.pty_bindings import (
    bound_pty_ids,
    reconcile,
    reconcile_ptys,
    session_bindings,
)
from orca.cli import pty_bindings as cli_bindings
from orca.contracts import store
from orca.model.codec import from_builtins, to_builtins
from orca.model.session import PtyBindingState, WorkspaceSessionState
from orca.model.state import PersistedState, session_for_host, with_session_for_host
from orca.model.tabs import TerminalLayoutSnapshot, TerminalPaneLeaf, TerminalTab

WT = "r::/w"
LIVE, EXITED, GHOST, OLD = (f"{WT}@@0000000{n}" for n in range(4))


def session() -> WorkspaceSessionState:
    layout = TerminalLayoutSnapshot(
        root=TerminalPaneLeaf(leaf_id="a"),
        pty_ids_by_leaf_id={"a": LIVE, "b": EXITED, "c": GHOST},
    )
    legacy = TerminalTab(id="t0", worktree_id=WT, pty_id=OLD)
    return WorkspaceSessionState(
        terminal_layouts_by_tab_id={"t1": layout},
        tabs_by_worktree={WT: (legacy,)},
        active_worktree_ids_on_shutdown=(WT, "r::/other"),
    )


def test_every_binding_not_running_gets_a_verdict_and_running_ones_none() -> None:
    assert bound_pty_ids(session()) == {LIVE, EXITED, GHOST, OLD}
    verdict = reconcile(session(), {LIVE}, {EXITED: 3, OLD: -1}, now_ms=5)
    assert dict(verdict.ended) == {
        EXITED: PtyBindingState(state="exited", exit_code=3),
        OLD: PtyBindingState(state="exited", exit_code=-1),
        GHOST: PtyBindingState(state="gone"),
    }
    assert verdict.shutdown_worktrees_without_pty == ("r::/other",)  # WT has a live PTY
    nothing_runs = reconcile(session(), set(), {}, now_ms=5)
    assert {v.state for v in nothing_runs.ended.values()} == {"gone"}
    assert nothing_runs.shutdown_worktrees_without_pty == (WT, "r::/other")


def test_the_store_records_verdicts_leaves_bindings_and_skips_an_unchanged_write() -> None:
    state = with_session_for_host(PersistedState(), "local", session())
    change = reconcile_ptys(state, None, [LIVE], {EXITED: 0}, now_ms=1)
    result = change.result
    assert isinstance(result, store.PtysReconciled)
    assert (result.exited, result.gone) == (1, 2)
    after = session_for_host(change.state, "local")
    assert after.terminal_layouts_by_tab_id == session().terminal_layouts_by_tab_id
    assert after.pty_reconciliation is not None and GHOST in after.pty_reconciliation.ended
    assert len(change.events) == 1  # session.changed
    again = reconcile_ptys(change.state, None, [LIVE], {EXITED: 0}, now_ms=2)
    assert again.events == () and again.state is change.state  # same verdicts: no write


def test_the_store_serves_each_binding_with_ptyds_verdict_and_a_reader_joins_them() -> None:
    state = with_session_for_host(PersistedState(), "local", session())
    checked = reconcile_ptys(state, None, [LIVE], {EXITED: 3, OLD: -1}, now_ms=1).state
    served = session_bindings(checked, "")
    assert [(b.pane, b.pty_id, b.verdict) for b in served.bindings] == [
        ("t1:a", LIVE, None),  # ran at ptyd's check
        ("t1:b", EXITED, "exited 3"),
        ("t1:c", GHOST, "gone"),
        ("tab t0", OLD, "exited (code unknown)"),
    ]
    assert served.shutdown_worktrees_without_pty == ["r::/other"]
    assert session_bindings(PersistedState(), None).bindings == []

    # The reader's join (orca term ls --all, the worktree ps footer), against what
    # ptyd lists running now: LIVE has ended since ptyd's check, so "not running".
    assert cli_bindings.stale_rows(served, set()) == [
        ("t1:a", LIVE, "not running"),
        ("t1:b", EXITED, "exited 3"),
        ("t1:c", GHOST, "gone"),
        ("tab t0", OLD, "exited (code unknown)"),
        ("worktree r::/other", "-", "had a terminal at shutdown; none runs"),
    ]
    assert [row[0] for row in cli_bindings.stale_rows(served, {LIVE})] == [
        "t1:b", "t1:c", "tab t0", "worktree r::/other"
    ]  # fmt: skip


def test_the_verdict_round_trips_through_the_persisted_json() -> None:
    verdict = reconcile(session(), {LIVE}, {EXITED: 3}, now_ms=9)
    with_verdict = msgspec.structs.replace(session(), pty_reconciliation=verdict)
    wire = to_builtins(with_verdict)
    assert wire["ptyReconciliation"]["ended"][GHOST] == {"state": "gone"}
    assert from_builtins(WorkspaceSessionState, wire) == with_verdict


def test_a_writers_copy_of_the_verdicts_never_replaces_the_stores() -> None:
    """session.set/patch keep the store's ptyReconciliation whatever the writer sends:
    only ptyd's truth (session.reconcile_ptys) writes it."""
    from actors.store.sessions import patch_session, set_session

    state = with_session_for_host(PersistedState(), "local", session())
    state = reconcile_ptys(state, None, [LIVE], {EXITED: 3}, now_ms=1).state
    kept = session_for_host(state, "local").pty_reconciliation
    raw = to_builtins(session()) | {"ptyReconciliation": {"ended": {}}}
    mint = iter(range(100)).__next__
    after_set = set_session(state, None, raw, None, lambda: str(mint())).state
    assert session_for_host(after_set, "local").pty_reconciliation == kept
    patched = patch_session(state, None, {"ptyReconciliation": None}, None, lambda: "x").state
    assert session_for_host(patched, "local").pty_reconciliation == kept


def test_an_exited_pty_loses_its_bindings_but_its_pane_stays() -> None:
    """Seed 02 §9: session.retire_pty drops every binding to the exited PTY (the ids it
    had before a rename too), keeps the leaves, bumps the revision, saves before replying."""
    from actors.store.pty_bindings import retire_pty

    state = with_session_for_host(PersistedState(), "local", session())
    change = retire_pty(state, None, [EXITED, OLD])
    assert isinstance(change.result, store.PtyRetiredResult)
    assert (change.result.revision, change.result.unbound) == (1, 2)
    assert change.durability == "flush"
    after = session_for_host(change.state, "local")
    layout = after.terminal_layouts_by_tab_id["t1"]
    assert layout.root == session().terminal_layouts_by_tab_id["t1"].root  # the pane stays
    assert dict(layout.pty_ids_by_leaf_id) == {"a": LIVE, "c": GHOST}
    assert [t.pty_id for t in after.tabs_by_worktree[WT]] == [None]
    assert bound_pty_ids(after) == {LIVE, GHOST}
    (event,) = change.events
    assert isinstance(event, store.SessionChanged) and event.revision == 1


def test_a_pty_nothing_binds_changes_nothing() -> None:
    """An exit no binding names (or another host's) is no write: no revision, no event."""
    from actors.store.pty_bindings import retire_pty

    state = with_session_for_host(PersistedState(), "local", session())
    for host, ptys in ((None, [f"{WT}@@0000000f"]), ("ssh:elsewhere", [LIVE]), (None, [])):
        change = retire_pty(state, host, ptys)
        assert change.state is state and change.events == ()
        assert to_builtins(change.result) == {"revision": 0, "unbound": 0, "durable": True}


def test_a_stale_write_cannot_bind_the_exited_pty_again() -> None:
    """A UI snapshot taken before the exit keeps its metadata, not the retired binding."""
    from actors.store.pty_bindings import retire_pty
    from actors.store.sessions import set_session

    leaf, other = "3f2504e0-4f89-41d3-9a0c-0305e82c3301", "7c9e6679-7425-40de-944b-e07fc1f90ae7"
    before = {
        "terminalLayoutsByTabId": {
            "t1": {
                "root": {
                    "type": "split",
                    "direction": "vertical",
                    "first": {"type": "leaf", "leafId": leaf},
                    "second": {"type": "leaf", "leafId": other},
                },
                "ptyIdsByLeafId": {leaf: EXITED, other: LIVE},
            }
        }
    }
    state = set_session(PersistedState(), None, before, 0, lambda: "x").state
    state = retire_pty(state, None, [EXITED]).state
    stale = {
        "terminalLayoutsByTabId": {
            "t1": before["terminalLayoutsByTabId"]["t1"] | {"titlesByLeafId": {leaf: "renamed"}}
        }
    }
    change = set_session(state, None, stale, 0, lambda: "x")
    assert change.result.applied == "metadata_only"
    layout = session_for_host(change.state, "local").terminal_layouts_by_tab_id["t1"]
    assert dict(layout.pty_ids_by_leaf_id) == {other: LIVE}
    assert dict(layout.titles_by_leaf_id) == {leaf: "renamed"}
