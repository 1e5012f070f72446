"""Readers' view of saved PTY bindings that lie (issue 13).

A saved binding (``ptyIdsByLeafId``, legacy ``ptyId``) is a hint, never proof that a
PTY runs (seed 01 §7.1, seed 02 §6). ``store`` records ptyd's verdict on every bound id
that was not running after ptyd's last start and serves the bindings with them
(``session.bindings``, ``actors/store/pty_bindings.py``); a reader joins them with the
ids ptyd lists running now: ``exited N`` or ``gone``, and ``not running`` for an id
that stopped, or was bound, after ptyd's check. Bindings to running PTYs are not
listed: they are what they claim.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orca.client.sync import Pending
    from orca.contracts.store_core import SessionBindings

# The store answers from memory; a store that does not answer costs only this view.
STORE_TIMEOUT_S = 2.0


def begin_bindings() -> Pending[SessionBindings]:
    """Ask the store for the local host's bindings (read with :func:`binding_rows`)."""
    from orca.client.sync import begin
    from orca.contracts import store_core  # not the full store contract (its docstring)

    return begin(
        store_core.SESSION_BINDINGS, store_core.SessionBindingsArgs(), timeout=STORE_TIMEOUT_S
    )


def binding_rows(
    running: set[str], asked: Pending[SessionBindings] | None = None
) -> list[tuple[str, str, str]]:
    """:func:`stale_rows` of the local host; [] when the store is down. ``asked``: a
    :func:`begin_bindings` already sent."""
    from orca.wire.errors import OrcaError

    try:
        saved = (asked or begin_bindings()).result()
    except OrcaError:
        return []
    return stale_rows(saved, running)


def stale_rows(saved: SessionBindings, running: set[str]) -> list[tuple[str, str, str]]:
    """(pane, PTY id, state) of every binding in ``saved`` whose PTY is not in
    ``running`` (what ptyd lists running now)."""
    from orca.model.panes import parse_pty_session_id

    rows = [
        (b.pane, b.pty_id, b.verdict or "not running")
        for b in saved.bindings
        if b.pty_id not in running
    ]
    # activeWorktreeIdsOnShutdown: worktrees restored as "had a live terminal" where
    # none runs (as ptyd found after its start, and still now).
    live = {p.worktree_id for p in map(parse_pty_session_id, running) if p is not None}
    rows.extend(
        (f"worktree {w}", "-", "had a terminal at shutdown; none runs")
        for w in saved.shutdown_worktrees_without_pty
        if w not in live
    )
    return rows


def stale_binding_summary(
    running: set[str], asked: Pending[SessionBindings] | None = None
) -> str | None:
    """One line for readers that list agents (``orca worktree ps``, which passes the
    running PTY ids it already listed): how many saved pane bindings name a PTY that
    does not run; None when none do or the store is down."""
    rows = binding_rows(running, asked)
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
