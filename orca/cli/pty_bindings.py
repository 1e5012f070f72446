"""Readers' view of saved PTY bindings: each joined with ptyd's verdict (issue 13).

A saved binding (``ptyIdsByLeafId``, legacy ``ptyId``) is a hint, never proof that a
PTY runs (seed 01 §7.1, seed 02 §6). ``store`` records ptyd's verdict on every bound id
that was not running after ptyd's last start (``ptyReconciliation``, see
``actors/store/pty_bindings.py``); these helpers show a binding with that verdict -
``exited N`` or ``gone`` - and a binding to an id that is not running now but was not
checked (written after the check) as ``not running``. Bindings to running PTYs are
not listed: they are what they claim.
"""

from __future__ import annotations

from orca.model.panes import parse_pty_session_id
from orca.model.session import WorkspaceSessionState

# The session is served from memory; a store that does not answer costs only this view.
STORE_TIMEOUT_S = 2.0


def binding_state(session: WorkspaceSessionState, pty_id: str, running: set[str]) -> str | None:
    """How a binding to ``pty_id`` is shown; None when its PTY runs."""
    if pty_id in running:
        return None
    verdicts = session.pty_reconciliation.ended if session.pty_reconciliation else {}
    verdict = verdicts.get(pty_id)
    if verdict is None:
        return "not running"
    if verdict.state == "exited":
        return f"exited {verdict.exit_code}" if verdict.exit_code != -1 else "exited (code unknown)"
    return "gone"


def stale_bindings(session: WorkspaceSessionState, running: set[str]) -> list[tuple[str, str, str]]:
    """(pane, PTY id, state) for every saved binding whose PTY does not run."""
    rows: list[tuple[str, str, str]] = []
    for tab_id, layout in sorted(session.terminal_layouts_by_tab_id.items()):
        for leaf, pty in sorted(layout.pty_ids_by_leaf_id.items()):
            state = binding_state(session, pty, running)
            if state is not None:
                rows.append((f"{tab_id}:{leaf}", pty, state))
    for _workspace, tabs in sorted(session.tabs_by_worktree.items()):
        for tab in tabs:
            if tab.pty_id:
                state = binding_state(session, tab.pty_id, running)
                if state is not None:
                    rows.append((f"tab {tab.id}", tab.pty_id, state))
    # activeWorktreeIdsOnShutdown: worktrees restored as "had a live terminal" where
    # none runs (as ptyd found after its start, and still now).
    verdict = session.pty_reconciliation
    if verdict is not None:
        live = {p.worktree_id for p in map(parse_pty_session_id, running) if p is not None}
        for worktree_id in verdict.shutdown_worktrees_without_pty:
            if worktree_id not in live:
                rows.append(
                    (f"worktree {worktree_id}", "-", "had a terminal at shutdown; none runs")
                )
    return rows


def binding_rows(running: set[str]) -> list[tuple[str, str, str]]:
    """``stale_bindings`` of the local host's session; [] when the store is down."""
    from orca.client.sync import invoke
    from orca.contracts import store
    from orca.wire.errors import OrcaError

    try:
        view = invoke(store.SESSION_GET, store.SessionGetArgs(), timeout=STORE_TIMEOUT_S)
    except OrcaError:
        return []
    return stale_bindings(view.session, running)


def stale_binding_summary(running: set[str]) -> str | None:
    """One line for readers that list agents (``orca worktree ps``, which passes the
    running PTY ids it already listed): how many saved pane bindings name a PTY that
    does not run; None when none do or the store is down."""
    rows = binding_rows(running)
    panes = [state for _pane, pty, state in rows if pty != "-"]
    worktrees = len(rows) - len(panes)
    parts = []
    if panes:
        labels = {"not" if s == "not running" else s.split(" ")[0] for s in panes}
        states = ", ".join(sorted("unchecked" if s == "not" else s for s in labels))
        plural = "s" if len(panes) != 1 else ""
        parts.append(f"{len(panes)} saved pane binding{plural} to terminals not running ({states})")
    if worktrees:
        plural = "s" if worktrees != 1 else ""
        parts.append(f"{worktrees} worktree{plural} had a terminal at shutdown and now none")
    return "; ".join(parts) + ": `orca term ls --all`" if parts else None
