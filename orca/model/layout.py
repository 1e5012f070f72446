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

import msgspec

from orca.model.tabs import (
    TabGroupLayoutNode,
    TabGroupLeaf,
    TerminalPaneLayoutNode,
    TerminalPaneLeaf,
)

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


def _prune_groups(node: TabGroupLayoutNode, group_ids: Container[str]) -> TabGroupLayoutNode | None:
    if isinstance(node, TabGroupLeaf):
        return node if node.group_id in group_ids else None
    first = _prune_groups(node.first, group_ids)
    second = _prune_groups(node.second, group_ids)
    if first is None or second is None:
        return second if first is None else first  # promote the surviving side (or None)
    if first is node.first and second is node.second:
        return node  # Invariant: an unchanged subtree keeps its identity
    return msgspec.structs.replace(node, first=first, second=second)


def _prune_panes(
    node: TerminalPaneLayoutNode, leaf_ids: Container[str]
) -> TerminalPaneLayoutNode | None:
    if isinstance(node, TerminalPaneLeaf):
        return node if node.leaf_id in leaf_ids else None
    first = _prune_panes(node.first, leaf_ids)
    second = _prune_panes(node.second, leaf_ids)
    if first is None or second is None:
        return second if first is None else first
    if first is node.first and second is node.second:
        return node
    return msgspec.structs.replace(node, first=first, second=second)


def prune_tab_group_layout(
    node: TabGroupLayoutNode | None, group_ids: Container[str]
) -> TabGroupLayoutNode | None:
    """Drop leaves whose group is not in ``group_ids``; same object back when nothing changed."""
    return None if node is None else _prune_groups(node, group_ids)


def prune_terminal_pane_layout(
    node: TerminalPaneLayoutNode | None, leaf_ids: Container[str]
) -> TerminalPaneLayoutNode | None:
    """Drop panes whose leaf id is not in ``leaf_ids``; same object back when nothing changed."""
    return None if node is None else _prune_panes(node, leaf_ids)
