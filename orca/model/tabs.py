"""Tabs, tab groups and the two split trees (seed 01 §6).

Three layers per workspace: a split tree of :class:`TabGroupLeaf` /
:class:`TabGroupSplit` nodes whose leaves name tab groups; :class:`TabGroup`
(a tab strip: ``tabOrder``, ``activeTabId`` and a per-group MRU stack
``recentTabIds``, oldest first, so closing the active tab returns to the one
used before it rather than to a visual neighbour); and flat :class:`Tab` rows.

A terminal tab has its own split tree of panes (:class:`TerminalPaneLeaf` /
:class:`TerminalPaneSplit`) whose leaves are UUID ``leafId``\\ s; the pane key
``<tabId>:<leafId>`` (``orca.model.panes``) is a pane's global identity.

``Tab.id`` is the UI slot; ``Tab.entityId`` names the content (terminal tab id,
file path, browser workspace id), so closing a tab and destroying content are
separate acts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

import msgspec

from orca.model.codec import Record

__all__ = [
    "TAB_CONTENT_TYPES",
    "WORKSPACE_VISIBLE_TAB_TYPES",
    "PersistedOpenFile",
    "SplitDirection",
    "Tab",
    "TabContentType",
    "TabGroup",
    "TabGroupLayoutNode",
    "TabGroupLeaf",
    "TabGroupSplit",
    "TerminalLayoutSnapshot",
    "TerminalPaneLayoutNode",
    "TerminalPaneLeaf",
    "TerminalPaneSplit",
    "TerminalTab",
    "WorkspaceVisibleTabType",
]

# Enumerations read from files are typed ``str`` on records; the Literal aliases
# name the values this build knows. A value added by a newer build must not make
# orca-data.json unreadable (seed 01 §7.3: older and newer builds share the file).
TabContentType = Literal[
    "terminal", "editor", "diff", "conflict-review", "check-details", "browser", "simulator"
]
# Only these are restored after a restart; diff-like views are rebuilt from git on demand.
WorkspaceVisibleTabType = Literal["terminal", "editor", "browser", "simulator"]
TAB_CONTENT_TYPES: Final[tuple[TabContentType, ...]] = (
    "terminal",
    "editor",
    "diff",
    "conflict-review",
    "check-details",
    "browser",
    "simulator",
)
WORKSPACE_VISIBLE_TAB_TYPES: Final[frozenset[str]] = frozenset(
    {"terminal", "editor", "browser", "simulator"}
)
SplitDirection = Literal["horizontal", "vertical"]


class Tab(Record, frozen=True, kw_only=True):
    """One slot in a tab strip."""

    id: str  # a UUID for terminals, the file path for editors
    entity_id: str
    group_id: str
    worktree_id: str
    execution_host_id: str | None = None
    content_type: str  # TabContentType
    label: str = ""
    custom_label: str | None = None
    color: str | None = None
    sort_order: int = 0
    created_at: int = 0
    is_preview: bool | None = None
    is_pinned: bool | None = None


class TabGroup(Record, frozen=True, kw_only=True):
    """A tab strip; the tab-group split tree places it."""

    id: str
    worktree_id: str
    active_tab_id: str | None = None
    tab_order: tuple[str, ...] = ()
    # MRU stack, oldest first; absent in sessions from older builds (seeded from activeTabId).
    recent_tab_ids: tuple[str, ...] | None = None


class TabGroupLeaf(Record, frozen=True, kw_only=True, tag_field="type", tag="leaf"):
    group_id: str


class TabGroupSplit(Record, frozen=True, kw_only=True, tag_field="type", tag="split"):
    direction: SplitDirection
    first: TabGroupLayoutNode
    second: TabGroupLayoutNode
    ratio: float | None = None  # share of ``first`` in (0, 1); None means 0.5


TabGroupLayoutNode = TabGroupLeaf | TabGroupSplit


class TerminalPaneLeaf(Record, frozen=True, kw_only=True, tag_field="type", tag="leaf"):
    leaf_id: str


class TerminalPaneSplit(Record, frozen=True, kw_only=True, tag_field="type", tag="split"):
    direction: SplitDirection
    first: TerminalPaneLayoutNode
    second: TerminalPaneLayoutNode
    ratio: float | None = None


TerminalPaneLayoutNode = TerminalPaneLeaf | TerminalPaneSplit


class TerminalLayoutSnapshot(Record, frozen=True, kw_only=True):
    """The pane tree of one terminal tab plus the records that travel with each leaf."""

    root: TerminalPaneLayoutNode | None = None
    active_leaf_id: str | None = None
    expanded_leaf_id: str | None = None
    # Live PTY ids for in-session remounts (tab moved between groups); never used
    # across an app restart because PTYs are transient (seed 01 §7.1).
    pty_ids_by_leaf_id: Mapping[str, str] = msgspec.field(default_factory=dict)
    buffers_by_leaf_id: Mapping[str, str] = msgspec.field(default_factory=dict)
    scrollback_refs_by_leaf_id: Mapping[str, str] = msgspec.field(default_factory=dict)
    titles_by_leaf_id: Mapping[str, str] = msgspec.field(default_factory=dict)


class TerminalTab(Record, frozen=True, kw_only=True):
    """Legacy terminal tab row (``tabsByWorktree``), still written for older readers."""

    id: str
    worktree_id: str
    pty_id: str | None = None
    title: str = ""
    default_title: str | None = None
    custom_title: str | None = None
    color: str | None = None
    is_pinned: bool | None = None
    sort_order: int = 0
    created_at: int = 0
    shell_override: str | None = None
    # Absolute cwd: must be remapped when the worktree folder is renamed (seed 01 §4.3).
    startup_cwd: str | None = None
    launch_agent: str | None = None


class PersistedOpenFile(Record, frozen=True, kw_only=True):
    """An edit-mode editor file open at shutdown."""

    file_path: str
    relative_path: str = ""
    worktree_id: str
    language: str = ""
    is_preview: bool | None = None
