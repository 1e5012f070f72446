"""Normalizing a host session on write: durable pane identities (seed 01 §7.5 ①, seed 02 §8).

A UI may send terminal layouts whose leaf ids are not durable: legacy numeric leaves
from an old build, or the same id twice (a copied layout). Pane keys
``<tabId>:<leafId>`` key agent status, PTY bindings and hook fences, so every leaf must
end up a UUID that is unique in the host's session. For each terminal tab:

1. A leaf id that is a UUID and occurs once in the whole incoming session is kept.
2. Any other leaf (numeric, malformed, duplicated) takes the id of the leaf at the same
   position in the previously stored layout of that tab, when that id is a UUID not used
   anywhere in the incoming session; otherwise a fresh UUID is minted. Aligning by
   position keeps a pane's PTY binding across a write from a renderer that still uses
   numbers. (A numeric leaf may collide across tabs and hosts, so this is per tab and
   never a global string replacement.)
3. The four leaf-keyed maps (``ptyIdsByLeafId``, ``buffersByLeafId``,
   ``scrollbackRefsByLeafId``, ``titlesByLeafId``) follow their leaf; entries for leaves
   not in the layout are dropped. For a duplicated id the entry goes to its first
   occurrence, except for a PTY binding: a leaf id that occurs twice in one tab cannot
   say which of its panes the PTY belongs to, so that binding is given to neither.
   Pane-key maps of the session (``PANE_KEYED_MAPS``) follow too.
5. Live PTYs that cannot be migrated safely are marked unsupported (seed 02 §8), never
   silently re-bound: the PTY of a leaf duplicated within its tab, and a PTY bound to
   several leaves of the session when one of them was re-minted (a copied layout). Their
   ids go to ``unsupportedPtyIdsByTabId`` (kept with those the writer already carried)
   and their bindings are removed.
4. Upstream issue #217: a renderer's debounced writer may still hold a snapshot taken
   before its PTY spawned. An empty incoming PTY binding for a leaf never erases the
   durable binding stored for that same leaf.

Invariant: a tab whose layout needs no change keeps the same snapshot object (the
stored one when the incoming layout equals it), and a write that does not touch the
layouts map skips all of this: what is stored was normalized when it was written.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import msgspec

from orca.model.layout import iter_terminal_leaf_ids
from orca.model.panes import is_terminal_leaf_id
from orca.model.session import WorkspaceSessionState
from orca.model.tabs import (
    TerminalLayoutSnapshot,
    TerminalPaneLayoutNode,
    TerminalPaneLeaf,
    TerminalPaneSplit,
)

Mint = Callable[[], str]
LEAF_KEYED_MAPS = (
    "pty_ids_by_leaf_id",
    "buffers_by_leaf_id",
    "scrollback_refs_by_leaf_id",
    "titles_by_leaf_id",
)
PANE_KEYED_MAPS = (
    "sleeping_agent_sessions_by_pane_key",
    "terminal_pty_incarnations_by_pane_key",
    "acknowledged_agents_by_pane_key",
)


@dataclass(frozen=True)
class NormalizedSession:
    session: WorkspaceSessionState
    # tab id -> {old leaf id -> new leaf id}, only for tabs where some leaf changed.
    remapped_leaves: Mapping[str, Mapping[str, str]]
    # tab id -> PTY ids this write could not migrate (rule 5), only when there are any.
    unsupported_pty_ids: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)


def _relabel(node: TerminalPaneLayoutNode, new_ids: Iterator[str]) -> TerminalPaneLayoutNode:
    if isinstance(node, TerminalPaneLeaf):
        new_id = next(new_ids)
        return node if new_id == node.leaf_id else msgspec.structs.replace(node, leaf_id=new_id)
    first = _relabel(node.first, new_ids)
    second = _relabel(node.second, new_ids)
    if first is node.first and second is node.second:
        return node
    return TerminalPaneSplit(
        direction=node.direction, first=first, second=second, ratio=node.ratio, extra=node.extra
    )


def _remap_keys(values: Mapping[str, str], mapping: Mapping[str, str]) -> dict[str, str]:
    return {mapping[k]: v for k, v in values.items() if k in mapping}


def _normalize_layout(
    snapshot: TerminalLayoutSnapshot,
    previous: TerminalLayoutSnapshot | None,
    incoming_counts: Counter[str],
    taken: set[str],
    mint: Mint,
) -> tuple[TerminalLayoutSnapshot, dict[str, str]]:
    """Return the normalized snapshot and ``{old id: new id}`` for its leaves."""
    if snapshot.root is None:
        return snapshot, {}
    leaves = list(iter_terminal_leaf_ids(snapshot.root))
    if (
        previous is not None
        and snapshot == previous
        and all(incoming_counts[x] == 1 for x in leaves)
    ):
        return previous, {}  # stored layouts are normalized already; keep the stored object
    previous_leaves = [] if previous is None else list(iter_terminal_leaf_ids(previous.root))
    new_ids: list[str] = []
    mapping: dict[str, str] = {}
    for position, leaf in enumerate(leaves):
        if is_terminal_leaf_id(leaf) and incoming_counts[leaf] == 1:
            new_id = leaf
        else:
            aligned = previous_leaves[position] if position < len(previous_leaves) else None
            usable = (
                aligned is not None
                and is_terminal_leaf_id(aligned)
                and aligned not in taken
                and incoming_counts[aligned] == 0
            )
            new_id = aligned if usable and aligned is not None else mint()
        taken.add(new_id)
        new_ids.append(new_id)
        mapping.setdefault(leaf, new_id)
    root = _relabel(snapshot.root, iter(new_ids))
    changes: dict[str, object] = {}
    if root is not snapshot.root:
        changes["root"] = root
    in_tab = Counter(leaves)
    ambiguous = {leaf for leaf, n in in_tab.items() if n > 1}
    for name in LEAF_KEYED_MAPS:
        values: dict[str, str] = getattr(snapshot, name)
        source = values
        if name == "pty_ids_by_leaf_id" and ambiguous:
            source = {k: v for k, v in values.items() if k not in ambiguous}
        remapped = _remap_keys(source, mapping)
        if remapped != values:
            changes[name] = remapped
    for name in ("active_leaf_id", "expanded_leaf_id"):
        value: str | None = getattr(snapshot, name)
        fixed = None if value is None else mapping.get(value)
        if fixed != value:
            changes[name] = fixed
    result = msgspec.structs.replace(snapshot, **changes) if changes else snapshot
    return _keep_durable_pty_bindings(result, previous), mapping


def _keep_durable_pty_bindings(
    snapshot: TerminalLayoutSnapshot, previous: TerminalLayoutSnapshot | None
) -> TerminalLayoutSnapshot:
    """Issue #217: an empty incoming binding does not erase a stored one for the same leaf."""
    if previous is None or not previous.pty_ids_by_leaf_id or snapshot.root is None:
        return snapshot
    previous_leaves = set(iter_terminal_leaf_ids(previous.root))
    bindings = dict(snapshot.pty_ids_by_leaf_id)
    changed = False
    for leaf in iter_terminal_leaf_ids(snapshot.root):
        durable = previous.pty_ids_by_leaf_id.get(leaf)
        if durable and not bindings.get(leaf) and leaf in previous_leaves:
            bindings[leaf] = durable
            changed = True
    return msgspec.structs.replace(snapshot, pty_ids_by_leaf_id=bindings) if changed else snapshot


def _remap_pane_keys(
    values: Mapping[str, object], remapped: Mapping[str, Mapping[str, str]]
) -> dict[str, object] | None:
    out: dict[str, object] = {}
    changed = False
    for key, value in values.items():
        tab_id, sep, leaf = key.partition(":")
        new_leaf = remapped.get(tab_id, {}).get(leaf) if sep else None
        if new_leaf is not None and new_leaf != leaf:
            out.setdefault(f"{tab_id}:{new_leaf}", value)
            changed = True
        else:
            out.setdefault(key, value)
    return out if changed else None


def normalize_session_for_write(
    incoming: WorkspaceSessionState, previous: WorkspaceSessionState, mint: Mint
) -> NormalizedSession:
    """Apply the rules in the module docstring to ``incoming`` given the stored ``previous``."""
    layouts = incoming.terminal_layouts_by_tab_id
    if layouts is previous.terminal_layouts_by_tab_id:
        return NormalizedSession(incoming, {})  # untouched by this write: normalized when stored
    counts: Counter[str] = Counter()
    for snapshot in layouts.values():
        counts.update(iter_terminal_leaf_ids(snapshot.root))
    taken = {leaf for leaf, n in counts.items() if n == 1 and is_terminal_leaf_id(leaf)}
    new_layouts: dict[str, TerminalLayoutSnapshot] = {}
    remapped: dict[str, dict[str, str]] = {}
    changed = False
    for tab_id, snapshot in layouts.items():
        previous_snapshot = previous.terminal_layouts_by_tab_id.get(tab_id)
        normalized, mapping = _normalize_layout(snapshot, previous_snapshot, counts, taken, mint)
        new_layouts[tab_id] = normalized
        # Content changed unless the tab came back as itself or as the equal stored one.
        if normalized is not snapshot and normalized is not previous_snapshot:
            changed = True
        if any(old != new for old, new in mapping.items()):
            remapped[tab_id] = mapping
    if not changed:
        return NormalizedSession(incoming, {})
    unsupported = _ambiguous_in_tab(layouts)
    _unbind_shared_ptys(new_layouts, remapped, unsupported)
    changes: dict[str, object] = {"terminal_layouts_by_tab_id": new_layouts}
    for name in PANE_KEYED_MAPS:
        fixed = _remap_pane_keys(getattr(incoming, name), remapped)
        if fixed is not None:
            changes[name] = fixed
    marked = {tab: tuple(sorted(ptys)) for tab, ptys in unsupported.items() if ptys}
    if marked:
        merged = dict(incoming.unsupported_pty_ids_by_tab_id)
        for tab, ptys in marked.items():
            merged[tab] = tuple(sorted({*merged.get(tab, ()), *ptys}))
        changes["unsupported_pty_ids_by_tab_id"] = merged
    session = msgspec.structs.replace(incoming, **changes)
    return NormalizedSession(session, remapped, marked)


def _ambiguous_in_tab(layouts: Mapping[str, TerminalLayoutSnapshot]) -> dict[str, set[str]]:
    """Rule 5, first case: PTYs bound to a leaf id that occurs twice in its own tab."""
    out: dict[str, set[str]] = {}
    for tab_id, snapshot in layouts.items():
        counts = Counter(iter_terminal_leaf_ids(snapshot.root))
        for leaf, pty in snapshot.pty_ids_by_leaf_id.items():
            if pty and counts[leaf] > 1:
                out.setdefault(tab_id, set()).add(pty)
    return out


def _unbind_shared_ptys(
    layouts: dict[str, TerminalLayoutSnapshot],
    remapped: Mapping[str, Mapping[str, str]],
    unsupported: dict[str, set[str]],
) -> None:
    """Rule 5, second case: one PTY bound to several leaves after a re-mint; unbind all."""
    bound: dict[str, list[tuple[str, str]]] = {}
    for tab_id, snapshot in layouts.items():
        for leaf, pty in snapshot.pty_ids_by_leaf_id.items():
            if pty:
                bound.setdefault(pty, []).append((tab_id, leaf))
    for pty, places in bound.items():
        if len(places) < 2 or not any(tab in remapped for tab, _ in places):
            continue
        for tab_id, leaf in places:
            snapshot = layouts[tab_id]
            kept = {k: v for k, v in snapshot.pty_ids_by_leaf_id.items() if k != leaf}
            layouts[tab_id] = msgspec.structs.replace(snapshot, pty_ids_by_leaf_id=kept)
            unsupported.setdefault(tab_id, set()).add(pty)
