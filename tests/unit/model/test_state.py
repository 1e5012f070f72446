"""PersistedState defaults, host partitions and topology revisions (seed 01 §7.2, seed 02 §7, §9)."""

from __future__ import annotations

import msgspec

from orca.model.codec import decode_json, encode_json
from orca.model.session import WorkspaceSessionState
from orca.model.state import (
    SCHEMA_VERSION,
    PersistedState,
    bump_topology_revision,
    default_persisted_state,
    default_workspace_dir,
    session_for_host,
    topology_revision,
    with_session_for_host,
)

REMOTE = WorkspaceSessionState(active_worktree_id="r::/remote")
LOCAL = WorkspaceSessionState(active_worktree_id="r::/local")


def test_default_state_has_every_table_empty_and_the_schema_version() -> None:
    """A fresh install starts at SCHEMA_VERSION with empty tables and the given workspace dir (seed 01 §7.2)."""
    state = default_persisted_state("/home/u/orca/workspaces")
    assert state.schema_version == SCHEMA_VERSION == 1
    assert (state.repos, state.worktree_meta, state.workspace_sessions_by_host_id) == ((), {}, {})
    assert state.settings.workspace_dir == "/home/u/orca/workspaces" and state.settings.nest_workspaces
    assert default_workspace_dir("/home/u") == "/home/u/orca/workspaces"


def test_default_state_writes_the_seed_field_names() -> None:
    """orca-data.json uses the camelCase names of the seeds (seed 01 §7.2, seed 02 §2)."""
    keys = set(msgspec.json.decode(encode_json(default_persisted_state())))
    assert {
        "schemaVersion", "repos", "projects", "projectGroups", "folderWorkspaces", "worktreeMeta",
        "worktreeLineageById", "workspaceLineageByChildKey", "settings", "ui", "workspaceSession",
        "workspaceSessionsByHostId", "topologyRevisionByHostId",
    } <= keys


def test_local_session_lives_in_the_bare_legacy_field() -> None:
    """'local' reads and writes workspaceSession, not workspaceSessionsByHostId['local'] (seed 01 §7.2, seed 02 §7)."""
    state = with_session_for_host(default_persisted_state(), "local", LOCAL)
    assert state.workspace_session == LOCAL and "local" not in state.workspace_sessions_by_host_id
    assert session_for_host(state, "local") == LOCAL


def test_other_hosts_get_their_own_partition() -> None:
    """Non-local sessions are partitioned by host id so equal worktree ids never collide (seed 02 §7)."""
    state = with_session_for_host(default_persisted_state(), "ssh:a", REMOTE)
    assert state.workspace_sessions_by_host_id == {"ssh:a": REMOTE}
    assert session_for_host(state, "ssh:a") == REMOTE
    assert session_for_host(state, "ssh:b") == WorkspaceSessionState()
    assert state.workspace_session == WorkspaceSessionState()


def test_topology_revision_is_per_host_and_monotonic() -> None:
    """Each bump raises only that host's revision by one, starting from 0 (seed 02 §9)."""
    state = default_persisted_state()
    assert topology_revision(state, "local") == 0
    state, rev1 = bump_topology_revision(state, "local")
    state, rev2 = bump_topology_revision(state, "local")
    state, remote = bump_topology_revision(state, "ssh:a")
    assert (rev1, rev2, remote) == (1, 2, 1)
    assert state.topology_revision_by_host_id == {"local": 2, "ssh:a": 1}


def test_topology_revisions_survive_a_save_and_load() -> None:
    """The fence counter is persisted with the state (seed 02 §9)."""
    state, _ = bump_topology_revision(default_persisted_state(), "runtime:vm")
    assert decode_json(PersistedState, encode_json(state)).topology_revision_by_host_id == {"runtime:vm": 1}
