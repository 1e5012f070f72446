"""ptyd's truth about the PTYs ties restored rows to their terminal (never confirming
them), replaces or ends them (seed 03 restore; docs/protocols.md §3 "Restored rows and
ptyd's truth")."""

from __future__ import annotations

import hashlib

import pytest

from actors.hooks.status_file import decode_status_file, encode_status_file
from actors.hooks.status_table import AgentStatusTable, StatusEvent
from orca.contracts import hooks
from orca.contracts.hooks import EndedPty, LivePty
from orca.model.agent_status import display_state, is_fresh

PANE = "tab-1:3f1c2a9e-0000-4000-8000-000000000001"
OTHER = "tab-2:3f1c2a9e-0000-4000-8000-000000000002"
WT = "repo1::/src/wt-a"
T0 = 1_800_000_000_000
FIRST = hashlib.sha256(b"first launch").hexdigest()
SECOND = hashlib.sha256(b"second launch").hexdigest()


def _restarted(state: str = "working", *, token: str = FIRST) -> AgentStatusTable:
    """A table as hooks has it after a restart: one hook row of the launch ``token``
    (its hash committed by the spawn), saved and hydrated from the file's bytes."""
    before = AgentStatusTable()
    before.restart_pane(PANE, token, WT)
    event = StatusEvent(
        pane_key=PANE,
        state=state,  # type: ignore[arg-type]
        source="hook",
        worktree_id=WT,
        agent="claude",
        launch_token_sha256=token,
    )
    assert before.apply_normalized_status(event, T0).outcome == "applied"
    data = encode_status_file(before.rows(), before.authority.commitments)
    loaded = decode_status_file(data, T0 + 1_000)
    after = AgentStatusTable()
    after.hydrate(loaded.rows, loaded.commitments, loaded.fences)
    return after


def _live(token: str = FIRST, handle: str = "term_1", pane: str = PANE) -> LivePty:
    return LivePty(pane_key=pane, terminal_handle=handle, launch_token_sha256=token)


def _ended(code: int | None, token: str = FIRST, handle: str = "term_1") -> EndedPty:
    return EndedPty(pane_key=PANE, terminal_handle=handle, launch_token_sha256=token, exit_code=code)


def test_restored_row_of_a_launch_still_running_is_tied_but_stays_unconfirmed() -> None:
    """The pane still runs the launch that wrote the row: the row is tied to its live
    terminal, but a live PTY proves the process, not the turn - it stays restored, not
    fresh, its state and evidence time as last reported (R15: an agent whose Stop was
    lost while hooks was down must not read ``working``)."""
    table = _restarted("working")
    restored = table.row(PANE)
    assert restored is not None and restored.restored_unconfirmed
    fx, verdicts = table.reconcile_ptys([_live()], [], T0 + 2_000)
    row = table.row(PANE)
    assert row is not None
    assert row.restored_unconfirmed and row.terminal_handle == "term_1"
    assert (row.state, row.updated_at_ms, row.state_since_ms) == ("working", T0, T0)
    assert row.rev > restored.rev
    assert fx.events == (hooks.StatusSet(row=row),)
    assert not fx.persist, "a terminal handle is never saved: nothing to write"
    assert verdicts.still_running == {PANE: "term_1"}
    assert not is_fresh(row, T0 + 2_000) and display_state(row, T0 + 2_000) == "idle"


@pytest.mark.parametrize("source", ["hook", "terminal"])
def test_the_agents_next_report_confirms_a_tied_restored_row(source: str) -> None:
    """After ptyd's truth tied the row, the agent's own next report (a hook, or an OSC
    document of its terminal) is what confirms it: its state, fresh, the handle kept."""
    table = _restarted("working")
    table.reconcile_ptys([_live()], [], T0 + 2_000)
    event = StatusEvent(
        pane_key=PANE,
        state="done",
        source=source,  # type: ignore[arg-type]
        agent="claude",
        launch_token_sha256=FIRST if source == "hook" else None,
    )
    fx = table.apply_normalized_status(event, T0 + 3_000)
    assert fx.outcome == "applied", fx
    row = table.row(PANE)
    assert row is not None and not row.restored_unconfirmed
    assert (row.state, row.worktree_id, row.terminal_handle) == ("done", WT, "term_1")
    assert is_fresh(row, T0 + 3_000) and row.updated_at_ms == T0 + 3_000


def test_reconciling_twice_changes_nothing_the_second_time() -> None:
    """Idempotent: the same truth again publishes nothing."""
    table = _restarted("blocked")
    table.reconcile_ptys([_live()], [], T0 + 2_000)
    again, _ = table.reconcile_ptys([_live()], [], T0 + 3_000)
    assert again.outcome == "unchanged" and again.events == ()


def test_restored_row_whose_launch_ended_leaves_like_an_authenticated_exit() -> None:
    """The launch ended while hooks was down: the row goes (clear pty_exited, the exit
    code) and its fate is kept - never shown as working."""
    table = _restarted("working")
    fx, _ = table.reconcile_ptys([], [_ended(3)], T0 + 2_000)
    assert table.row(PANE) is None
    assert fx.events == (
        hooks.StatusCleared(pane_key=PANE, worktree_id=WT, reason="pty_exited", exit_code=3),
    )
    (fate,) = table.fates()
    assert (fate.pane_key, fate.exit_code, fate.agent) == (PANE, 3, "claude")


def test_a_lost_launch_leaves_with_an_unknown_exit_code() -> None:
    """An archived ``lost`` session (exit never seen) ends the row with exit unknown."""
    table = _restarted("working")
    table.reconcile_ptys([], [_ended(None)], T0 + 2_000)
    assert table.row(PANE) is None
    assert [f.exit_code for f in table.fates()] == [None]


def test_row_of_a_replaced_launch_goes_and_the_new_launch_is_committed() -> None:
    """The pane runs another launch (its restart_pane was lost while hooks was down):
    the old agent's row goes, and the new agent's hooks are accepted."""
    table = _restarted("working")
    fx, _ = table.reconcile_ptys([_live(SECOND, "term_2")], [_ended(0)], T0 + 2_000)
    assert table.row(PANE) is None
    assert fx.events == (hooks.StatusCleared(pane_key=PANE, worktree_id=WT, reason="replaced"),)
    assert table.authority.check_launch_token(PANE, SECOND) is None
    assert table.authority.check_launch_token(PANE, FIRST) == "launch_token_mismatch"


def test_row_ptyd_knows_nothing_of_stays_unconfirmed() -> None:
    """No PTY of the row's launch, running or ended: no evidence, nothing changes."""
    table = _restarted("working")
    fx, _ = table.reconcile_ptys([_live(SECOND, "term_9", OTHER)], [], T0 + 2_000)
    assert fx.events == ()
    row = table.row(PANE)
    assert row is not None and row.restored_unconfirmed


def test_row_without_a_launch_commitment_is_never_confirmed() -> None:
    """A restored row whose launch is not known (no commitment) proves nothing."""
    table = AgentStatusTable()
    event = StatusEvent(pane_key=PANE, state="working", source="terminal", worktree_id=WT)
    table.apply_normalized_status(event, T0)
    loaded = decode_status_file(encode_status_file(table.rows(), {}), T0 + 1)
    restored = AgentStatusTable()
    restored.hydrate(loaded.rows, loaded.commitments)
    restored.reconcile_ptys([_live()], [], T0 + 2)
    row = restored.row(PANE)
    assert row is not None and row.restored_unconfirmed


def test_live_row_is_matched_by_its_terminal_handle() -> None:
    """hooks did not restart (ptyd did): a row an OSC of the running terminal wrote is
    that terminal's, whatever launch hooks last heard of."""
    table = AgentStatusTable()
    table.restart_pane(PANE, FIRST, WT)
    event = StatusEvent(
        pane_key=PANE, state="working", source="terminal", worktree_id=WT, terminal_handle="term_2"
    )
    table.apply_normalized_status(event, T0)
    fx, verdicts = table.reconcile_ptys([_live(SECOND, "term_2")], [], T0 + 1)
    assert verdicts.still_running == {PANE: "term_2"} and fx.events == ()
    assert table.row(PANE) is not None


def test_a_fenced_pane_is_not_reopened_by_ptyd_truth() -> None:
    """A retired pane stays fenced even if ptyd still lists a PTY in it."""
    table = _restarted("working")
    table.retire_pane(PANE)
    table.reconcile_ptys([_live(SECOND, "term_2")], [], T0 + 2_000)
    assert table.authority.is_fenced(PANE)
    late = table.apply_normalized_status(
        StatusEvent(pane_key=PANE, state="working", source="terminal", worktree_id=WT), T0 + 3_000
    )
    assert (late.outcome, late.reason) == ("rejected", "retired_pane")


def test_structured_rows_are_never_judged() -> None:
    """A structured session has no PTY: ptyd's truth cannot touch its row."""
    table = AgentStatusTable()
    event = StatusEvent(
        pane_key=PANE, state="working", source="structured", worktree_id=WT, structured_host="h1"
    )
    table.apply_normalized_status(event, T0)
    table.restart_pane(PANE, FIRST, WT)  # even with a launch known for the pane
    fx, _ = table.reconcile_ptys([], [_ended(1)], T0 + 1)
    assert fx.events == () and table.row(PANE) is not None


def test_a_later_exit_of_an_older_terminal_removes_nothing_after_reconcile() -> None:
    """ptyd's truth names each pane's current terminal again after a hooks restart, so
    the exit of an older terminal of the pane does not remove the row it tied."""
    table = _restarted("working", token=SECOND)
    table.reconcile_ptys([_live(SECOND, "term_2")], [], T0 + 2_000)
    stale = table.pty_exited(PANE, "term_1", 0, T0 + 3_000)
    assert (stale.outcome, stale.reason) == ("unchanged", "stale_terminal")
    assert table.row(PANE) is not None


def test_dropping_a_worktree_drops_its_rows_and_fates() -> None:
    """A removed worktree leaves no row and no fate (one clear each); idempotent."""
    table = AgentStatusTable()
    for pane in (PANE, OTHER):
        table.restart_pane(pane, FIRST, WT)
        table.apply_normalized_status(
            StatusEvent(pane_key=pane, state="working", source="terminal", worktree_id=WT), T0
        )
    table.pty_exited(OTHER, "", 3, T0 + 1)
    assert [f.pane_key for f in table.fates()] == [OTHER]
    fx = table.drop_worktree(WT, "worktree_removed")
    assert fx.events == (
        hooks.StatusCleared(pane_key=PANE, worktree_id=WT, reason="worktree_removed"),
        hooks.StatusCleared(pane_key=OTHER, worktree_id=WT, reason="worktree_removed"),
    )
    assert fx.persist and table.rows() == [] and table.fates() == []
    assert table.drop_worktree(WT, "worktree_removed").outcome == "unchanged"
