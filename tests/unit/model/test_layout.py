"""Split-tree pruning (seed 01 §6.2, §7.3, §8.6)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from orca.model.layout import (
    iter_layout_group_ids,
    iter_terminal_leaf_ids,
    prune_tab_group_layout,
    prune_terminal_pane_layout,
)
from orca.model.tabs import (
    TabGroupLayoutNode,
    TabGroupLeaf,
    TabGroupSplit,
    TerminalPaneLeaf,
    TerminalPaneSplit,
)

from .strategies import group_ids, layouts


def _split(a: TabGroupLayoutNode, b: TabGroupLayoutNode) -> TabGroupSplit:
    return TabGroupSplit(direction="vertical", first=a, second=b, ratio=0.3)


@given(layouts(), st.frozensets(group_ids))
def test_pruning_never_leaves_a_leaf_pointing_to_a_missing_group(
    tree: TabGroupLayoutNode, alive: frozenset[str]
) -> None:
    """After pruning, every leaf names a live group, and every live group that was placed still is (seed 01 §7.3)."""
    pruned = prune_tab_group_layout(tree, alive)
    remaining = list(iter_layout_group_ids(pruned))
    assert set(remaining) <= alive
    assert remaining == [g for g in iter_layout_group_ids(tree) if g in alive]
    assert (pruned is None) == (not remaining)


@given(layouts())
def test_pruning_with_every_group_alive_returns_the_same_object(tree: TabGroupLayoutNode) -> None:
    """Nothing pruned means the very same node comes back (identity, seed 01 §8.6)."""
    assert prune_tab_group_layout(tree, set(iter_layout_group_ids(tree))) is tree


@given(layouts(), st.frozensets(group_ids))
def test_untouched_subtrees_keep_their_identity(tree: TabGroupLayoutNode, alive: frozenset[str]) -> None:
    """A subtree whose leaves all survive is reused by identity inside the pruned tree (seed 01 §8.6)."""
    pruned = prune_tab_group_layout(tree, alive)
    stack: list[TabGroupLayoutNode] = [tree]
    reused = []
    while stack:
        node = stack.pop()
        if all(g in alive for g in iter_layout_group_ids(node)):
            reused.append(node)
            continue
        if isinstance(node, TabGroupSplit):
            stack += [node.first, node.second]
    found: list[TabGroupLayoutNode] = [] if pruned is None else [pruned]
    seen: set[int] = set()
    while found:
        node = found.pop()
        seen.add(id(node))
        if isinstance(node, TabGroupSplit):
            found += [node.first, node.second]
    assert all(id(n) in seen for n in reused)


def test_split_with_one_dead_side_promotes_the_survivor() -> None:
    """When one side of a split is gone, the other side takes the split's place (seed 01 §7.3)."""
    keep = _split(TabGroupLeaf(group_id="a"), TabGroupLeaf(group_id="b"))
    tree = _split(keep, TabGroupLeaf(group_id="gone"))
    assert prune_tab_group_layout(tree, {"a", "b"}) is keep


def test_nothing_left_gives_none() -> None:
    """A tree whose groups are all gone prunes to None (seed 01 §7.3)."""
    assert prune_tab_group_layout(TabGroupLeaf(group_id="x"), set()) is None
    assert prune_tab_group_layout(None, {"x"}) is None


def test_changed_split_keeps_direction_ratio_and_unknown_fields() -> None:
    """A rebuilt split keeps its direction, ratio and fields from newer builds."""
    inner = _split(TabGroupLeaf(group_id="a"), TabGroupLeaf(group_id="gone"))
    tree = TabGroupSplit(
        direction="horizontal", first=inner, second=TabGroupLeaf(group_id="b"), ratio=0.7,
        extra={"futureMin": 3},
    )
    pruned = prune_tab_group_layout(tree, {"a", "b"})
    assert pruned == TabGroupSplit(
        direction="horizontal", first=TabGroupLeaf(group_id="a"), second=TabGroupLeaf(group_id="b"),
        ratio=0.7, extra={"futureMin": 3},
    )


def test_terminal_pane_tree_prunes_the_same_way() -> None:
    """The terminal pane tree follows the same promote/None/identity rules (seed 01 §6.3)."""
    a, b = TerminalPaneLeaf(leaf_id="a"), TerminalPaneLeaf(leaf_id="b")
    tree = TerminalPaneSplit(direction="vertical", first=a, second=b)
    assert prune_terminal_pane_layout(tree, {"a", "b"}) is tree
    assert prune_terminal_pane_layout(tree, {"b"}) is b
    assert prune_terminal_pane_layout(tree, set()) is None
    assert list(iter_terminal_leaf_ids(tree)) == ["a", "b"]
