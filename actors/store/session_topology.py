"""Terminal membership: retiring panes and fencing stale snapshots (seed 02 §9, §13).

When a pane is closed, its host retires it: the leaf leaves the session, the host's
topology revision goes up and the store flushes at once. A UI that saved a snapshot
before it heard of the retirement carries an older revision; such a stale write may
still update metadata (titles, split ratios, colours) of terminal tabs and panes that
exist in the stored session, but terminal membership is the intersection of the stored
and the incoming sets: a stale write can close things, never bring a retired leaf or
terminal tab back. A PTY that exits on its own loses only its binding (the leaf stays,
showing the ended terminal: ``pty_bindings.retire_pty``), with the same revision bump;
a stale write keeps the stored bindings of its panes, so it cannot bind it again. A revision per host is bounded, unlike a tombstone per dead pane.

A retired tab (its last pane gone) is removed from the layouts, from the unified tab
rows, from the legacy terminal tab rows and from its tab groups' order/MRU/active slots.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet

import msgspec

from actors.store.session_normalize import LEAF_KEYED_MAPS, PANE_KEYED_MAPS
from orca.model.layout import iter_terminal_leaf_ids, prune_terminal_pane_layout
from orca.model.session import WorkspaceSessionState
from orca.model.session_restore import group_without_tabs
from orca.model.tabs import (
    Tab,
    TerminalLayoutSnapshot,
)


def terminal_tab_ids(session: WorkspaceSessionState) -> set[str]:
    """Every id by which the session refers to a terminal tab."""
    ids = set(session.terminal_layouts_by_tab_id)
    for tabs in (session.unified_tabs or {}).values():
        for tab in tabs:
            if tab.content_type == "terminal":
                ids.update((tab.id, tab.entity_id))
    for legacy in session.tabs_by_worktree.values():
        ids.update(t.id for t in legacy)
    return ids


def _restrict_layout(
    snapshot: TerminalLayoutSnapshot, allowed: AbstractSet[str]
) -> TerminalLayoutSnapshot | None:
    """``snapshot`` with only the panes in ``allowed``, each once; None when none is left.

    Each once: membership is a set of panes, a layout a sequence of leaves: a stale
    snapshot that shows a surviving leaf twice would otherwise pass the fence twice, and
    normalizing re-mints the repeat into a pane that never existed.
    """
    if snapshot.root is None:
        return None
    root = prune_terminal_pane_layout(snapshot.root, allowed, once=True)
    if root is None:
        return None
    if root is snapshot.root:
        return snapshot
    kept = set(iter_terminal_leaf_ids(root))
    changes: dict[str, object] = {"root": root}
    for name in LEAF_KEYED_MAPS:
        values: dict[str, str] = getattr(snapshot, name)
        changes[name] = {k: v for k, v in values.items() if k in kept}
    for name in ("active_leaf_id", "expanded_leaf_id"):
        value: str | None = getattr(snapshot, name)
        if value is not None and value not in kept:
            changes[name] = None
    return msgspec.structs.replace(snapshot, **changes)


def _drop_tabs(session: WorkspaceSessionState, gone: set[str]) -> dict[str, object]:
    """Field changes removing terminal tabs ``gone`` from rows and groups."""
    if not gone:
        return {}
    changes: dict[str, object] = {}
    removed_slots: set[str] = set()
    if session.unified_tabs is not None:
        unified: dict[str, tuple[Tab, ...]] = {}
        for key, tabs in session.unified_tabs.items():
            kept = tuple(
                t
                for t in tabs
                if not (t.content_type == "terminal" and (t.id in gone or t.entity_id in gone))
            )
            removed_slots.update(t.id for t in tabs if t not in kept)
            unified[key] = kept
        changes["unified_tabs"] = unified
    legacy = {
        key: tuple(t for t in tabs if t.id not in gone)
        for key, tabs in session.tabs_by_worktree.items()
    }
    changes["tabs_by_worktree"] = legacy
    removed_slots |= gone
    if session.tab_groups is not None:
        changes["tab_groups"] = {
            key: tuple(group_without_tabs(g, removed_slots) for g in groups)
            for key, groups in session.tab_groups.items()
        }
    changes["remote_session_ids_by_tab_id"] = {
        k: v for k, v in session.remote_session_ids_by_tab_id.items() if k not in gone
    }
    changes["unsupported_pty_ids_by_tab_id"] = {
        k: v for k, v in session.unsupported_pty_ids_by_tab_id.items() if k not in gone
    }
    return changes


def _drop_pane_keys(
    session: WorkspaceSessionState, keys: set[str], tabs: set[str]
) -> dict[str, object]:
    changes: dict[str, object] = {}
    for name in PANE_KEYED_MAPS:
        values: Mapping[str, object] = getattr(session, name)
        kept = {
            k: v for k, v in values.items() if k not in keys and k.partition(":")[0] not in tabs
        }
        if len(kept) != len(values):
            changes[name] = kept
    return changes


def retire_pane(session: WorkspaceSessionState, tab_id: str, leaf_id: str) -> WorkspaceSessionState:
    """Remove pane ``tab_id:leaf_id``; a tab left without panes is removed entirely."""
    layouts = dict(session.terminal_layouts_by_tab_id)
    snapshot = layouts.get(tab_id)
    gone_tabs: set[str] = set()
    if snapshot is not None:
        remaining = set(iter_terminal_leaf_ids(snapshot.root)) - {leaf_id}
        restricted = _restrict_layout(snapshot, remaining) if remaining else None
        if restricted is None:
            del layouts[tab_id]
            gone_tabs.add(tab_id)
        else:
            layouts[tab_id] = restricted
    elif tab_id in terminal_tab_ids(session):
        gone_tabs.add(tab_id)  # a tab row without a saved layout: its only pane died
    changes: dict[str, object] = {"terminal_layouts_by_tab_id": layouts}
    changes.update(_drop_tabs(session, gone_tabs))
    changes.update(_drop_pane_keys(session, {f"{tab_id}:{leaf_id}"}, gone_tabs))
    return msgspec.structs.replace(session, **changes)


def _stored_bindings(
    snapshot: TerminalLayoutSnapshot, stored: TerminalLayoutSnapshot
) -> TerminalLayoutSnapshot:
    """``snapshot`` with the stored PTY bindings of its leaves: which terminal a pane
    holds is membership too, so a stale write never binds again a PTY whose bindings
    were retired when it exited (``pty_bindings.retire_pty``), nor binds a new one."""
    kept = set(iter_terminal_leaf_ids(snapshot.root))
    bound = {leaf: pty for leaf, pty in stored.pty_ids_by_leaf_id.items() if leaf in kept}
    if bound == snapshot.pty_ids_by_leaf_id:
        return snapshot
    return msgspec.structs.replace(snapshot, pty_ids_by_leaf_id=bound)


def restrict_to_current_membership(
    incoming: WorkspaceSessionState, current: WorkspaceSessionState
) -> WorkspaceSessionState:
    """A stale write: keep only terminal tabs and panes that exist in ``current`` too."""
    current_tabs = terminal_tab_ids(current)
    layouts: dict[str, TerminalLayoutSnapshot] = {}
    for tab_id, snapshot in incoming.terminal_layouts_by_tab_id.items():
        stored = current.terminal_layouts_by_tab_id.get(tab_id)
        if stored is None:
            continue
        restricted = _restrict_layout(snapshot, set(iter_terminal_leaf_ids(stored.root)))
        layouts[tab_id] = stored if restricted is None else _stored_bindings(restricted, stored)
    gone = terminal_tab_ids(incoming) - current_tabs
    known_panes = {
        f"{tab}:{leaf}"
        for tab, snap in layouts.items()
        for leaf in iter_terminal_leaf_ids(snap.root)
    }
    changes: dict[str, object] = {"terminal_layouts_by_tab_id": layouts}
    changes.update(_drop_tabs(incoming, gone))
    for name in PANE_KEYED_MAPS:
        values: Mapping[str, object] = getattr(incoming, name)
        changes[name] = {k: v for k, v in values.items() if k in known_panes}
    return msgspec.structs.replace(incoming, **changes)
