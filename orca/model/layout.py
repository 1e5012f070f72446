"""Split-tree queries and pruning (seed 01 §6.2, §7.3, §8.6).

Pruning removes leaves that point at something that no longer exists (a tab
group, or a terminal pane leaf). When one side of a split disappears, the other
side is promoted in its place; when nothing is left the result is ``None``.

Invariant: if nothing under a node was removed, the *same object* is returned
(``result is node``), not an equal copy, so mirrors can skip work by identity
(the upstream UI saves a re-render this way; our clients skip a diff).
"""

from __future__ import annotations

from collections.abc import Container, Iterator
from typing import cast

import msgspec

from orca.model.tabs import (
    TabGroupLayoutNode,
    TabGroupLeaf,
    TerminalPaneLayoutNode,
    TerminalPaneLeaf,
)

_Node = TabGroupLayoutNode | TerminalPaneLayoutNode

__all__ = [
    "iter_layout_group_ids",
    "iter_terminal_leaf_ids",
    "prune_tab_group_layout",
    "prune_terminal_pane_layout",
]


def iter_layout_group_ids(node: TabGroupLayoutNode | None) -> Iterator[str]:
    """Group ids of every leaf, left to right."""
    stack: list[TabGroupLayoutNode] = [] if node is None else [node]
    while stack:
        n = stack.pop()
        if isinstance(n, TabGroupLeaf):
            yield n.group_id
        else:
            stack.append(n.second)
            stack.append(n.first)


def iter_terminal_leaf_ids(node: TerminalPaneLayoutNode | None) -> Iterator[str]:
    """Leaf ids of every pane, left to right."""
    stack: list[TerminalPaneLayoutNode] = [] if node is None else [node]
    while stack:
        n = stack.pop()
        if isinstance(n, TerminalPaneLeaf):
            yield n.leaf_id
        else:
            stack.append(n.second)
            stack.append(n.first)


def _prune(node: _Node, allowed: Container[str], seen: set[str] | None) -> _Node | None:
    """Both trees alike: a leaf is kept when its id is ``allowed`` (and, with ``seen``,
    not kept already further left); a split that loses a side becomes the other."""
    if isinstance(node, (TabGroupLeaf, TerminalPaneLeaf)):
        key = node.group_id if isinstance(node, TabGroupLeaf) else node.leaf_id
        if key not in allowed or (seen is not None and key in seen):
            return None
        if seen is not None:
            seen.add(key)
        return node
    first = _prune(node.first, allowed, seen)
    second = _prune(node.second, allowed, seen)
    if first is None or second is None:
        return second if first is None else first  # promote the surviving side (or None)
    if first is node.first and second is node.second:
        return node  # Invariant: an unchanged subtree keeps its identity
    return msgspec.structs.replace(node, first=first, second=second)


def prune_tab_group_layout(
    node: TabGroupLayoutNode | None, group_ids: Container[str], *, once: bool = False
) -> TabGroupLayoutNode | None:
    """Drop leaves whose group is not in ``group_ids`` (with ``once``, also every leaf
    but the leftmost of a group named twice); same object back when nothing changed."""
    kept = None if node is None else _prune(node, group_ids, set() if once else None)
    return cast("TabGroupLayoutNode | None", kept)


def prune_terminal_pane_layout(
    node: TerminalPaneLayoutNode | None, leaf_ids: Container[str], *, once: bool = False
) -> TerminalPaneLayoutNode | None:
    """Drop panes whose leaf id is not in ``leaf_ids`` (with ``once``, also every leaf
    but the leftmost of an id shown twice); same object back when nothing changed."""
    kept = None if node is None else _prune(node, leaf_ids, set() if once else None)
    return cast("TerminalPaneLayoutNode | None", kept)
