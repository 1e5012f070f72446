"""Reconciling saved PTY bindings with ptyd's truth (issue 13; seed 01 §7.1, seed 02 §6).

Essay: who reconciles, and why it is this split.

A workspace session saves which pane was bound to which PTY (``ptyIdsByLeafId``, the
legacy ``TerminalTab.ptyId``) and which worktrees had a live PTY at shutdown
(``activeWorktreeIdsOnShutdown``). Those are *hints*: a session never proves a PTY is
alive (seed 02 §6), and after a restart a binding may name a PTY that exited or that no
process and no history remember (a reboot, a budget eviction). Two owners meet here:

* ``store`` owns the session (the only writer of ``orca-data.json``);
* ``ptyd`` owns PTY truth (which ids run, which ended, with which code).

Neither may write the other's data, and neither may keep a copy of the other's data
and later fold it back (no mirror merged into its source). So the work is split at
the one place where both are needed, inside one call:

1. ``ptyd``, after every start (re-adoption from the keeper and the history archive
   done), sends its truth - the ids it runs, and the ended ids it keeps history of
   with their exit codes - to ``store`` as ``session.reconcile_ptys`` (retrying while
   the store is down). ptyd sends facts about PTYs only; it never reads or writes a
   binding.
2. ``store`` (this module, pure) compares its own bindings with that truth and records
   a *verdict* per bound id that is not running - ``exited`` (code) or ``gone`` - in
   the session's ``ptyReconciliation``, replaced whole each time. The bindings are not
   touched: they are the UI's intent (a remount uses them), and a verdict on a PTY id
   is final (an id never runs again), so recording it is a fact about the binding, not
   a mirror of ptyd's table that could go stale. A bound id not in the verdicts was
   running when ptyd checked.
3. No other write changes the verdicts: ``session.set``/``patch`` keep the store's
   ``ptyReconciliation`` whatever the writer sends (``sessions._write``) - a UI's copy
   of it is a mirror, and a mirror is never merged back into its source.

Readers (``orca term ls --all``, ``orca worktree ps``) see a binding joined with its
verdict - ``exited N`` / ``gone`` - instead of trusting it; a UI must spawn a new PTY for
such a pane, never attach the old id. The join is done here
(``session.stale_bindings``, given the ids the reader saw running), so a reader needs
no copy of the session to judge them.

Why ptyd pushes instead of store pulling: ptyd already calls the store at start (the
retirement catch-up) and the store depends on no other actor; a store that asked ptyd
would make the dependency circular. A store restart needs nothing: the verdicts are
saved, and ptyd's truth did not change.
"""

from __future__ import annotations

import msgspec

from actors.store.change import Change
from actors.store.sessions import resolve_host_id, session_changed_event
from orca.contracts import store as contract
from orca.model.panes import parse_pty_session_id
from orca.model.session import PtyBindingState, PtyReconciliation, WorkspaceSessionState
from orca.model.state import PersistedState, session_for_host, with_session_for_host


def bound_pty_ids(session: WorkspaceSessionState) -> set[str]:
    """Every PTY id the session binds a pane or a legacy tab to."""
    ids = {
        pty
        for layout in session.terminal_layouts_by_tab_id.values()
        for pty in layout.pty_ids_by_leaf_id.values()
    }
    ids |= {tab.pty_id for tabs in session.tabs_by_worktree.values() for tab in tabs if tab.pty_id}
    return ids


def reconcile(
    session: WorkspaceSessionState, running: set[str], ended: dict[str, int], now_ms: int
) -> PtyReconciliation:
    """The verdicts on ``session``'s bindings given ptyd's truth (pure)."""
    verdicts: dict[str, PtyBindingState] = {}
    for pty in sorted(bound_pty_ids(session) - running):
        code = ended.get(pty)
        verdicts[pty] = (
            PtyBindingState(state="exited", exit_code=code)
            if code is not None
            else PtyBindingState(state="gone")
        )
    live_worktrees = {p.worktree_id for p in map(parse_pty_session_id, running) if p is not None}
    return PtyReconciliation(
        checked_at_ms=now_ms,
        ended=verdicts,
        shutdown_worktrees_without_pty=tuple(
            w for w in session.active_worktree_ids_on_shutdown if w not in live_worktrees
        ),
    )


def reconcile_ptys(
    state: PersistedState,
    host_id: str | None,
    running: list[str],
    ended: dict[str, int],
    now_ms: int,
) -> Change:
    """``session.reconcile_ptys``: record the verdicts in the host's session."""
    host = resolve_host_id(host_id)
    current = session_for_host(state, host)
    verdict = reconcile(current, set(running), ended, now_ms)
    result = contract.PtysReconciled(
        exited=sum(1 for v in verdict.ended.values() if v.state == "exited"),
        gone=sum(1 for v in verdict.ended.values() if v.state == "gone"),
        shutdown_worktrees_without_pty=list(verdict.shutdown_worktrees_without_pty),
    )
    previous = current.pty_reconciliation
    if previous is not None and msgspec.structs.replace(previous, checked_at_ms=now_ms) == verdict:
        return Change(state, result)  # nothing new: no write, no event
    session = msgspec.structs.replace(current, pty_reconciliation=verdict)
    new_state = with_session_for_host(state, host, session)
    return Change(new_state, result, (session_changed_event(new_state, host, current),))


def binding_state(session: WorkspaceSessionState, pty_id: str, running: set[str]) -> str | None:
    """How a reader is shown a binding to ``pty_id``; None when its PTY runs."""
    if pty_id in running:
        return None
    verdicts = session.pty_reconciliation.ended if session.pty_reconciliation else {}
    verdict = verdicts.get(pty_id)
    if verdict is None:
        return "not running"
    if verdict.state == "exited":
        return f"exited {verdict.exit_code}" if verdict.exit_code != -1 else "exited (code unknown)"
    return "gone"


def stale_bindings(
    session: WorkspaceSessionState, running: set[str]
) -> list[contract.StaleBinding]:
    """Every saved binding of ``session`` whose PTY does not run, with how it is shown."""
    rows: list[contract.StaleBinding] = []

    def add(pane: str, pty: str, state: str | None) -> None:
        if state is not None:
            rows.append(contract.StaleBinding(pane=pane, pty_id=pty, state=state))

    for tab_id, layout in sorted(session.terminal_layouts_by_tab_id.items()):
        for leaf, pty in sorted(layout.pty_ids_by_leaf_id.items()):
            add(f"{tab_id}:{leaf}", pty, binding_state(session, pty, running))
    for _workspace, tabs in sorted(session.tabs_by_worktree.items()):
        for tab in tabs:
            if tab.pty_id:
                add(f"tab {tab.id}", tab.pty_id, binding_state(session, tab.pty_id, running))
    # activeWorktreeIdsOnShutdown: worktrees restored as "had a live terminal" where
    # none runs (as ptyd found after its start, and still now).
    verdict = session.pty_reconciliation
    if verdict is not None:
        live = {p.worktree_id for p in map(parse_pty_session_id, running) if p is not None}
        for worktree_id in verdict.shutdown_worktrees_without_pty:
            if worktree_id not in live:
                add(f"worktree {worktree_id}", "-", "had a terminal at shutdown; none runs")
    return rows


def stale_bindings_view(
    state: PersistedState, host_id: str | None, running: list[str]
) -> contract.StaleBindings:
    """``session.stale_bindings``: the host's bindings a reader must not trust."""
    session = session_for_host(state, resolve_host_id(host_id))
    return contract.StaleBindings(bindings=stale_bindings(session, set(running)))
