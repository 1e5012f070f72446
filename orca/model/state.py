"""PersistedState: the shape of ``orca-data.json`` (seed 01 §7.2, seed 02 §2, §7, §9).

The ``store`` actor is its only writer; it loads and saves it with
``orca.model.codec`` (unknown fields at every record level survive).

Two deliberate compatibility choices, both "new structure beside the old one":

* ``workspaceSession`` stays the bare field for the ``'local'`` host instead of
  moving into ``workspaceSessionsByHostId['local']``, so a downgraded build still
  finds its own workspaces; other hosts live in ``workspaceSessionsByHostId``
  (the same repo/path id can exist on two servers). Route through
  :func:`session_for_host` / :func:`with_session_for_host`, never by hand.
* ``topologyRevisionByHostId`` is a per-host monotonic counter for terminal
  membership (seed 02 §9): retiring a pane bumps it and flushes at once; a
  stale UI snapshot written later may update metadata of panes that still
  exist but never resurrect a retired leaf. A counter per host is bounded,
  unlike a tombstone per deleted pane.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

import msgspec

from orca.model.automations import Automation, AutomationRun
from orca.model.codec import Record
from orca.model.hosts import LOCAL_HOST_ID
from orca.model.session import WorkspaceSessionState
from orca.model.ssh_target import SshTarget
from orca.model.types_repo import FolderWorkspace, Project, ProjectGroup, Repo
from orca.model.worktree import WorkspaceLineage, WorktreeLineage, WorktreeMeta

__all__ = [
    "SCHEMA_VERSION",
    "GlobalSettings",
    "PersistedState",
    "PersistedUIState",
    "bump_topology_revision",
    "default_persisted_state",
    "default_workspace_dir",
    "session_for_host",
    "topology_revision",
    "with_session_for_host",
]

# Bumped only for a change an older build cannot read; additive fields need no bump.
SCHEMA_VERSION: Final = 1


def _empty() -> Any:
    return msgspec.field(default_factory=dict)


class GlobalSettings(Record, frozen=True, kw_only=True):
    """User settings the model rules read; every other setting survives in ``extra``."""

    # Root for Orca-created worktrees ("" = not configured yet; see default_workspace_dir).
    workspace_dir: str = ""
    # True: <root>/<repoName>/<name>; False: <root>/<name> (seed 01 §5.4).
    nest_workspaces: bool = True


class PersistedUIState(Record, frozen=True, kw_only=True):
    """Window/sidebar UI state; opaque to the model apart from these few fields."""

    sidebar_width: int | None = None
    group_by: str | None = None
    sort_by: str | None = None


class PersistedState(Record, frozen=True, kw_only=True, omit_defaults=False):
    """Everything in ``orca-data.json`` (top-level fields are always written, defaults too)."""

    schema_version: int = SCHEMA_VERSION
    repos: tuple[Repo, ...] = ()
    projects: tuple[Project, ...] = ()
    project_groups: tuple[ProjectGroup, ...] = ()
    folder_workspaces: tuple[FolderWorkspace, ...] = ()
    # Sticky notes keyed by worktree id (the path-keyed table, seed 01 §4.2).
    worktree_meta: Mapping[str, WorktreeMeta] = _empty()
    worktree_lineage_by_id: Mapping[str, WorktreeLineage] = _empty()
    workspace_lineage_by_child_key: Mapping[str, WorkspaceLineage] = _empty()
    settings: GlobalSettings = msgspec.field(default_factory=GlobalSettings)
    ui: PersistedUIState = msgspec.field(default_factory=PersistedUIState)
    # The 'local' host's session, kept as the bare legacy field (see module docstring).
    workspace_session: WorkspaceSessionState = msgspec.field(default_factory=WorkspaceSessionState)
    workspace_sessions_by_host_id: Mapping[str, WorkspaceSessionState] = _empty()
    topology_revision_by_host_id: Mapping[str, int] = _empty()
    # Where ssh reaches each SSH host (seed 02 §2); additive: an older file has none.
    ssh_targets: tuple[SshTarget, ...] = ()
    # Scheduled orchestration runs and their firings (issue 38; orca/model/automations.py).
    # Additive: a file without them loads with both empty (no schemaVersion bump).
    automations: tuple[Automation, ...] = ()
    automation_runs: tuple[AutomationRun, ...] = ()


def default_workspace_dir(home_dir: str) -> str:
    """The default workspace root under ``home_dir``: ``<home>/orca/workspaces``."""
    return os.path.join(home_dir, "orca", "workspaces")


def default_persisted_state(workspace_dir: str = "") -> PersistedState:
    """A fresh install's state (the store fills ``workspace_dir`` from the user's home)."""
    return PersistedState(settings=GlobalSettings(workspace_dir=workspace_dir))


def session_for_host(state: PersistedState, host_id: str) -> WorkspaceSessionState:
    """The session of ``host_id``: 'local' reads the bare legacy field; others default to empty."""
    if host_id == LOCAL_HOST_ID:
        return state.workspace_session
    return state.workspace_sessions_by_host_id.get(host_id) or WorkspaceSessionState()


def with_session_for_host(
    state: PersistedState, host_id: str, session: WorkspaceSessionState
) -> PersistedState:
    """A copy of ``state`` with ``host_id``'s session replaced (routing as above)."""
    if host_id == LOCAL_HOST_ID:
        return msgspec.structs.replace(state, workspace_session=session)
    sessions = dict(state.workspace_sessions_by_host_id)
    sessions[host_id] = session
    return msgspec.structs.replace(state, workspace_sessions_by_host_id=sessions)


def topology_revision(state: PersistedState, host_id: str) -> int:
    """The host's current terminal-membership revision (0 before the first retirement)."""
    return state.topology_revision_by_host_id.get(host_id, 0)


def bump_topology_revision(state: PersistedState, host_id: str) -> tuple[PersistedState, int]:
    """Increment the host's revision; returns the new state and the new revision."""
    revision = topology_revision(state, host_id) + 1
    revisions = dict(state.topology_revision_by_host_id)
    revisions[host_id] = revision
    return msgspec.structs.replace(state, topology_revision_by_host_id=revisions), revision
