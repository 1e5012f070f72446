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
such a pane, never attach the old id. ``session.bindings`` serves the bindings with
their verdicts, so a reader needs no copy of the session to judge them.

Between two starts, one fact comes as it happens: a PTY that exits on its own (its
shell or agent ended; seed 02 §9: "when a PTY exits, its host removes the terminal
binding from the session") is sent as ``session.retire_pty`` with its ids, and the
store drops every binding to them (``retire_pty``). Only the binding goes, never the
leaf: an ended pane stays in its tab, showing the screen its terminal left, and Enter
runs its command again there (the UI finds the ended terminal by pane key in ptyd's
list, not by this binding). Like a pane retirement it bumps the host's topology
revision and is saved before the reply (seed 02 §13: a crash right after the exit
leaves no ghost binding), and a stale write cannot bind the leaf again
(``session_topology.restrict_to_current_membership`` keeps the stored bindings). A
PTY nothing was bound to changes nothing: no write, no revision, no event.

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
from orca.model.state import (
    PersistedState,
    bump_topology_revision,
    session_for_host,
    topology_revision,
    with_session_for_host,
)


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


def without_pty_bindings(
    session: WorkspaceSessionState, pty_ids: set[str]
) -> tuple[WorkspaceSessionState, int]:
    """``session`` with no pane or legacy tab bound to ``pty_ids``, and how many
    bindings went; the same object when none did (pure)."""
    unbound = 0
    layouts = dict(session.terminal_layouts_by_tab_id)
    for tab_id, layout in session.terminal_layouts_by_tab_id.items():
        kept = {leaf: pty for leaf, pty in layout.pty_ids_by_leaf_id.items() if pty not in pty_ids}
        if len(kept) != len(layout.pty_ids_by_leaf_id):
            unbound += len(layout.pty_ids_by_leaf_id) - len(kept)
            layouts[tab_id] = msgspec.structs.replace(layout, pty_ids_by_leaf_id=kept)
    legacy = dict(session.tabs_by_worktree)
    for key, tabs in session.tabs_by_worktree.items():
        if any(tab.pty_id in pty_ids for tab in tabs):
            unbound += sum(1 for tab in tabs if tab.pty_id in pty_ids)
            legacy[key] = tuple(
                msgspec.structs.replace(tab, pty_id=None) if tab.pty_id in pty_ids else tab
                for tab in tabs
            )
    if not unbound:
        return session, 0
    changed = msgspec.structs.replace(
        session, terminal_layouts_by_tab_id=layouts, tabs_by_worktree=legacy
    )
    return changed, unbound


def retire_pty(state: PersistedState, host_id: str | None, pty_ids: list[str]) -> Change:
    """``session.retire_pty``: the PTY exited on its own; its bindings leave the host's
    session (the leaves stay), the revision goes up and the store saves before replying.
    Nothing bound to it: the state unchanged, the current revision, no event."""
    host = resolve_host_id(host_id)
    current = session_for_host(state, host)
    session, unbound = without_pty_bindings(current, set(pty_ids))
    if not unbound:
        result = contract.PtyRetiredResult(revision=topology_revision(state, host), unbound=0)
        return Change(state, result)
    new_state, revision = bump_topology_revision(with_session_for_host(state, host, session), host)
    result = contract.PtyRetiredResult(revision=revision, unbound=unbound)
    events = (session_changed_event(new_state, host, current),)
    return Change(new_state, result, events, durability="flush")


def _verdict_text(verdict: PtyBindingState | None) -> str | None:
    if verdict is None:
        return None
    if verdict.state == "exited":
        return f"exited {verdict.exit_code}" if verdict.exit_code != -1 else "exited (code unknown)"
    return "gone"


def session_bindings(state: PersistedState, host_id: str | None) -> contract.SessionBindings:
    """``session.bindings``: the host's saved bindings, each with ptyd's verdict."""
    session = session_for_host(state, resolve_host_id(host_id))
    reconciliation = session.pty_reconciliation
    verdicts = reconciliation.ended if reconciliation is not None else {}
    bindings: list[contract.SavedBinding] = []
    for tab_id, layout in sorted(session.terminal_layouts_by_tab_id.items()):
        for leaf, pty in sorted(layout.pty_ids_by_leaf_id.items()):
            verdict = _verdict_text(verdicts.get(pty))
            bindings.append(
                contract.SavedBinding(pane=f"{tab_id}:{leaf}", pty_id=pty, verdict=verdict)
            )
    for _workspace, tabs in sorted(session.tabs_by_worktree.items()):
        for tab in tabs:
            if tab.pty_id:
                verdict = _verdict_text(verdicts.get(tab.pty_id))
                bindings.append(
                    contract.SavedBinding(pane=f"tab {tab.id}", pty_id=tab.pty_id, verdict=verdict)
                )
    shutdown = reconciliation.shutdown_worktrees_without_pty if reconciliation is not None else ()
    return contract.SessionBindings(
        bindings=bindings, shutdown_worktrees_without_pty=list(shutdown)
    )
