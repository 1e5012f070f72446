"""Readers' view of saved PTY bindings that lie (issue 13).

A saved binding (``ptyIdsByLeafId``, legacy ``ptyId``) is a hint, never proof that a
PTY runs (seed 01 §7.1, seed 02 §6). ``store`` records ptyd's verdict on every bound id
that was not running after ptyd's last start and judges each binding against the ids
the reader saw running (``session.stale_bindings``, ``actors/store/pty_bindings.py``):
``exited N`` or ``gone``, and ``not running`` for an id written after ptyd's check.
Bindings to running PTYs are not listed: they are what they claim.
"""

from __future__ import annotations

# The store answers from memory; a store that does not answer costs only this view.
STORE_TIMEOUT_S = 2.0


def binding_rows(running: set[str]) -> list[tuple[str, str, str]]:
    """(pane, PTY id, state) of every local binding whose PTY does not run; [] when
    the store is down."""
    from orca.client.sync import invoke
    from orca.contracts import store
    from orca.wire.errors import OrcaError

    try:
        view = invoke(
            store.SESSION_STALE_BINDINGS,
            store.StaleBindingsArgs(running=sorted(running)),
            timeout=STORE_TIMEOUT_S,
        )
    except OrcaError:
        return []
    return [(b.pane, b.pty_id, b.state) for b in view.bindings]


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
