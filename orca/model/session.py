"""WorkspaceSessionState: what a UI needs to rebuild its tabs after a restart (seed 01 §7.3, seed 02 §6).

Presentation and recovery hints only; it never proves a PTY is alive (that is
re-checked with ``ptyd``). Almost every field is optional because a session
written by an older build must load in a newer one; fields this build does not
know survive in ``extra``.

Keys of the ``...ByWorktree`` maps may be legacy bare worktree ids or canonical
WorkspaceKeys (``worktree:<id>`` / ``folder:<id>``; seed 01 §4.5). The read path
prefers the unified model (``unifiedTabs`` + ``tabGroups``) and falls back to the
legacy ``tabsByWorktree`` / ``openFilesByWorktree`` when a build that predates it
wrote the session, which is why those two are ``None`` (absent) rather than
empty by default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec

from orca.model.codec import Record
from orca.model.tabs import (
    PersistedOpenFile,
    Tab,
    TabGroup,
    TabGroupLayoutNode,
    TerminalLayoutSnapshot,
    TerminalTab,
)

__all__ = [
    "HOST_QUALIFIED_KEY_SEPARATOR",
    "WORKTREE_ID_KEYED_SESSION_FIELDS",
    "WorkspaceSessionState",
    "default_workspace_session",
]


def _empty() -> Any:
    return msgspec.field(default_factory=dict)


class PtyBindingState(Record, frozen=True, kw_only=True):
    """ptyd's verdict on a saved PTY binding whose PTY is not running (final: a PTY id
    never runs again). ``exited``: its history is still kept (``exitCode``; -1 unknown);
    ``gone``: ptyd knows nothing of it (no process, no history)."""

    state: str  # "exited" | "gone"
    exit_code: int | None = None


class PtyReconciliation(Record, frozen=True, kw_only=True):
    """The last reconciliation of this host's saved bindings with ptyd (issue 13,
    ``session.reconcile_ptys``; seed 01 §7.1, seed 02 §6: a binding never proves a PTY
    is alive). Written only by the store, from ptyd's answer, after every ptyd start."""

    checked_at_ms: int = 0
    # PTY id -> verdict, for every bound PTY id (``ptyIdsByLeafId``, legacy ``ptyId``)
    # that was not running; a bound id without an entry was running at the check.
    ended: Mapping[str, PtyBindingState] = _empty()
    # ``activeWorktreeIdsOnShutdown`` entries with no running PTY at the check (their
    # terminals must be started again, not re-attached).
    shutdown_worktrees_without_pty: tuple[str, ...] = ()


class WorkspaceSessionState(Record, frozen=True, kw_only=True):
    """One execution host's tab/layout session."""

    active_repo_id: str | None = None
    active_workspace_key: str | None = None
    active_workspace_execution_host_id: str | None = None
    active_worktree_id: str | None = None
    active_tab_id: str | None = None
    # Legacy terminal tabs per workspace key.
    tabs_by_worktree: Mapping[str, tuple[TerminalTab, ...]] = _empty()
    terminal_layouts_by_tab_id: Mapping[str, TerminalLayoutSnapshot] = _empty()
    # Worktrees with a live PTY at shutdown: eagerly re-spawned on start.
    active_worktree_ids_on_shutdown: tuple[str, ...] = ()
    open_files_by_worktree: Mapping[str, tuple[PersistedOpenFile, ...]] = _empty()
    active_file_id_by_worktree: Mapping[str, str | None] = _empty()
    # Browser records are opaque here: only their keys matter to Orca's rules.
    browser_tabs_by_worktree: Mapping[str, tuple[dict[str, Any], ...]] = _empty()
    browser_pages_by_workspace: Mapping[str, tuple[dict[str, Any], ...]] = _empty()
    active_browser_tab_id_by_worktree: Mapping[str, str | None] = _empty()
    active_tab_type_by_worktree: Mapping[str, str] = _empty()  # WorkspaceVisibleTabType values
    active_tab_id_by_worktree: Mapping[str, str | None] = _empty()
    # Unified tab model; None = written by a build without it (use the legacy fields).
    unified_tabs: Mapping[str, tuple[Tab, ...]] | None = None
    tab_groups: Mapping[str, tuple[TabGroup, ...]] | None = None
    tab_group_layouts: Mapping[str, TabGroupLayoutNode] = _empty()
    active_group_id_by_worktree: Mapping[str, str] = _empty()
    active_connection_ids_at_shutdown: tuple[str, ...] = ()
    remote_session_ids_by_tab_id: Mapping[str, str] = _empty()
    # Keys are bare worktree ids or host-qualified ``<executionHostId>|<worktreeId>``.
    last_visited_at_by_worktree_id: Mapping[str, int] = _empty()
    default_terminal_tabs_applied_by_worktree_id: Mapping[str, bool] = _empty()
    sleeping_agent_sessions_by_pane_key: Mapping[str, dict[str, Any]] = _empty()
    terminal_pty_incarnations_by_pane_key: Mapping[str, str] = _empty()
    # Agents the user has seen finish, per pane key (values opaque: the UI's own record).
    acknowledged_agents_by_pane_key: Mapping[str, Any] = _empty()
    # Live PTYs a pane identity migration could not give a pane (seed 02 §8): tab id →
    # PTY ids. The store never re-binds them silently; a UI must not attach them to any
    # pane of that tab, and may offer the user to close or adopt them.
    unsupported_pty_ids_by_tab_id: Mapping[str, tuple[str, ...]] = _empty()
    # ptyd's verdict on the saved PTY bindings above (issue 13): None until ptyd checked.
    pty_reconciliation: PtyReconciliation | None = None


def default_workspace_session() -> WorkspaceSessionState:
    """An empty session (what a fresh install and an unknown host start from)."""
    return WorkspaceSessionState()


# Every WorkspaceSessionState map keyed by a worktree id (bare or ``worktree:`` key).
# Hydration drops their rows for unknown worktrees and identity migration re-keys
# them; a new worktree-keyed map MUST be added here (tests/unit/model guards the
# naming convention ``*_by_worktree`` / ``*_by_worktree_id``).
WORKTREE_ID_KEYED_SESSION_FIELDS: Final[tuple[str, ...]] = (
    "tabs_by_worktree",
    "open_files_by_worktree",
    "active_file_id_by_worktree",
    "browser_tabs_by_worktree",
    "active_browser_tab_id_by_worktree",
    "active_tab_type_by_worktree",
    "active_tab_id_by_worktree",
    "unified_tabs",
    "tab_groups",
    "tab_group_layouts",
    "active_group_id_by_worktree",
    "last_visited_at_by_worktree_id",
    "default_terminal_tabs_applied_by_worktree_id",
)
# Keys of this map may be host-qualified: ``<executionHostId>|<worktreeId>``.
HOST_QUALIFIED_KEY_SEPARATOR: Final = "|"
