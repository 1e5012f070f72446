"""Hypothesis strategies for the model tests (ids, layouts, records, unknown fields)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from orca.model.session import WorkspaceSessionState
from orca.model.state import GlobalSettings, PersistedState
from orca.model.tabs import Tab, TabGroup, TabGroupLayoutNode, TabGroupLeaf, TabGroupSplit
from orca.model.types_repo import Repo
from orca.model.worktree import GitPushTarget, WorktreeMeta

# Text without surrogates (they cannot be encoded as UTF-8, so no id can hold one).
_chars = st.characters(blacklist_categories=["Cs"])
text = st.text(alphabet=_chars)
nonempty_text = st.text(alphabet=_chars, min_size=1)

repo_ids = st.one_of(
    st.uuids().map(str),
    st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters=":|"), min_size=1),
)
paths = nonempty_text
tokens = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters=":/"), min_size=1
)
tab_ids = st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters=":"), min_size=1)
leaf_uuids = st.uuids().map(str)
hex8 = st.text(alphabet="0123456789abcdef", min_size=8, max_size=8)

# Group ids drawn from a small pool so prunes often hit and often miss.
group_ids = st.sampled_from([f"g{i}" for i in range(8)])


def layouts(ids: st.SearchStrategy[str] = group_ids) -> st.SearchStrategy[TabGroupLayoutNode]:
    """Random tab-group split trees."""
    leaves = ids.map(lambda g: TabGroupLeaf(group_id=g))
    return st.recursive(
        leaves,
        lambda kids: st.builds(
            lambda d, a, b, r: TabGroupSplit(direction=d, first=a, second=b, ratio=r),
            st.sampled_from(["horizontal", "vertical"]),
            kids,
            kids,
            st.none() | st.floats(0.05, 0.95),
        ),
        max_leaves=8,
    )


_layout_shapes = layouts()


def _relabel(node: TabGroupLayoutNode, gids: list[str]) -> TabGroupLayoutNode:
    """Map the pool's ``g<i>`` leaves onto ``gids`` (building strategies per draw is slow)."""
    if isinstance(node, TabGroupLeaf):
        return TabGroupLeaf(group_id=gids[int(node.group_id[1:]) % len(gids)])
    return TabGroupSplit(
        direction=node.direction,
        first=_relabel(node.first, gids),
        second=_relabel(node.second, gids),
        ratio=node.ratio,
    )


json_values: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text,
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(text, kids, max_size=3),
    max_leaves=6,
)
# Unknown field names: prefixed so they can never collide with a known wire name.
unknown_fields = st.dictionaries(text.map(lambda s: "future" + s), json_values, max_size=3)

worktree_ids = st.builds(lambda r, p: f"{r}::/w/{p}", st.uuids().map(str), tokens)

metas = st.builds(
    WorktreeMeta,
    instance_id=st.none() | st.uuids().map(str),
    display_name=text,
    comment=text,
    linked_pr=st.none() | st.integers(0, 10**6),
    is_pinned=st.booleans(),
    sort_order=st.integers(0, 1000),
    last_activity_at=st.integers(0, 2**41),
    push_target=st.none()
    | st.builds(GitPushTarget, remote_name=nonempty_text, branch_name=nonempty_text),
    prior_worktree_ids=st.lists(worktree_ids, max_size=2).map(tuple),
)


@st.composite
def sessions(draw: st.DrawFn) -> WorkspaceSessionState:
    """A session with unified tabs, groups and layouts for a few worktrees."""
    wids = draw(st.lists(worktree_ids, max_size=3, unique=True))
    groups: dict[str, tuple[TabGroup, ...]] = {}
    tabs: dict[str, tuple[Tab, ...]] = {}
    trees: dict[str, TabGroupLayoutNode] = {}
    for wid in wids:
        gids = draw(st.lists(group_ids, min_size=1, max_size=3, unique=True))
        groups[wid] = tuple(TabGroup(id=g, worktree_id=wid, tab_order=(f"{g}-t",)) for g in gids)
        tabs[wid] = tuple(
            Tab(id=f"{g}-t", entity_id=f"{g}-t", group_id=g, worktree_id=wid, content_type="terminal")
            for g in gids
        )
        tree = draw(_layout_shapes)
        trees[wid] = _relabel(tree, gids)
    return WorkspaceSessionState(
        active_worktree_id=wids[0] if wids else None,
        unified_tabs=tabs,
        tab_groups=groups,
        tab_group_layouts=trees,
    )


@st.composite
def persisted_states(draw: st.DrawFn) -> PersistedState:
    """A PersistedState with repos, metas, a local and a remote session."""
    meta_map = draw(st.dictionaries(worktree_ids, metas, max_size=4))
    repos = draw(
        st.lists(
            st.builds(Repo, id=st.uuids().map(str), path=paths, display_name=text),
            max_size=2,
        )
    )
    return PersistedState(
        repos=tuple(repos),
        worktree_meta=meta_map,
        settings=GlobalSettings(workspace_dir="/home/u/orca/workspaces", nest_workspaces=draw(st.booleans())),
        workspace_session=draw(sessions()),
        workspace_sessions_by_host_id={"ssh:box": draw(sessions())},
        topology_revision_by_host_id=draw(st.dictionaries(st.sampled_from(["local", "ssh:box"]), st.integers(0, 99))),
    )
