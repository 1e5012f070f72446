"""Decoding ``orca-data.json`` into a PersistedState (seed 02 §3, §5, §7, §8).

Order of work on load:

1. JSON → builtins, bounded (``bounded_json``: size and nesting depth; a hostile file is
   a ``ValueError`` like any corrupt one, kept aside by ``durable_load``), then the
   journal's ops are applied (``journal_format``); the top level must be an object. Host session partitions are taken
   out and validated one by one: a partition that does not decode (or sits under an
   invalid host id) is dropped and reported, never the whole file. Everything else goes
   through ``orca.model.codec``: missing fields take their defaults, unknown keys at
   every record level (top level included) survive the next save. A top level that does
   not decode makes the file corrupt (``ValueError``), and ``durable_load`` falls back
   to a backup.
2. Migrations (the local partition, external-worktree visibility, SSH target ids:
   ``ssh_targets.py``): each changes only a provable old default and runs once, guarded by its
   own ``_xxxMigrated`` marker among the top-level keys, so a user's later choice is
   never overwritten by a second run. Markers are store-owned top-level keys (they live
   in ``PersistedState.extra``).
3. Defaults that depend on the machine (the workspace root under the user's home).
4. Pane identity normalization of every partition (legacy numeric leaves → UUIDs; a live
   PTY whose pane cannot be identified is marked unsupported, ``session_normalize``).
5. What a restart brings back (``orca.model.session_restore``): a legacy-only session is
   folded into unified tabs once (marker ``_legacyUnifiedTabsMigrated``), and diff-like
   tabs are dropped on every load.

Schema gate (seed 02 §3): ``schemaVersion`` above this build's ``SCHEMA_VERSION`` means
a newer Orca wrote the file. Nothing of steps 2-5 runs: the file is decoded as it is (or,
when even that fails, a default state stands in) and ``LoadedState.newer_schema`` is
set, so the store serves it read-only and never writes it; the reason is reported as a
load problem. An older or equal version loads normally.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import msgspec

from actors.store.bounded_json import decode_bounded
from actors.store.session_normalize import Mint, normalize_session_for_write
from actors.store.ssh_targets import migrate_target_ids
from orca.model.codec import ModelDecodeError, from_builtins
from orca.model.hosts import LOCAL_HOST_ID, is_execution_host_id
from orca.model.session import WorkspaceSessionState
from orca.model.session_restore import has_legacy_tabs_to_fold, restore_session_on_load
from orca.model.state import SCHEMA_VERSION, PersistedState, default_workspace_dir

replace = msgspec.structs.replace

LOCAL_PARTITION_MARKER: Final = "_localSessionPartitionMigrated"
EXTERNAL_VISIBILITY_MARKER: Final = "_externalWorktreeVisibilityMigrated"
LEGACY_TABS_MARKER: Final = "_legacyUnifiedTabsMigrated"
SSH_TARGET_IDS_MARKER: Final = "_sshTargetIdsMigrated"
MIGRATION_MARKERS: Final = (
    LOCAL_PARTITION_MARKER,
    EXTERNAL_VISIBILITY_MARKER,
    LEGACY_TABS_MARKER,
    SSH_TARGET_IDS_MARKER,
)


@dataclass(frozen=True)
class LoadedState:
    state: PersistedState
    problems: tuple[str, ...]  # dropped partitions etc., for the log and sys.stats
    migrations: tuple[str, ...]  # markers of migrations that ran on this load
    # schemaVersion of a file written by a newer build: serve read-only, never write.
    newer_schema: int | None = None


def newer_schema_message(version: int) -> str:
    return (
        f"schemaVersion {version} was written by a newer Orca (this build reads up to"
        f" {SCHEMA_VERSION}): the file is served read-only and never rewritten;"
        " upgrade Orca to change it"
    )


def _file_schema_version(data: dict[str, Any]) -> int | None:
    version = data.get("schemaVersion")
    if isinstance(version, int) and not isinstance(version, bool):
        return version
    return None


def _decode_newer(data: dict[str, Any], version: int, home_dir: str) -> LoadedState:
    """A newer build's file, decoded without any migration; a default state if it does not."""
    problems = [newer_schema_message(version)]
    try:
        local, hosts, _ = _split_partitions(data, problems)
        state = from_builtins(PersistedState, data)
        state = replace(state, workspace_session=local, workspace_sessions_by_host_id=hosts)
    except ModelDecodeError as exc:
        problems.append(f"the newer file does not decode with this build ({str(exc)[:200]})")
        state = fresh_state(home_dir=home_dir)
    return LoadedState(state, tuple(problems), (), newer_schema=version)


def _decode_partition(raw: Any, where: str, problems: list[str]) -> WorkspaceSessionState | None:
    try:
        return from_builtins(WorkspaceSessionState, raw)
    except ModelDecodeError as exc:
        problems.append(f"{where}: dropped, does not decode ({str(exc)[:200]})")
        return None


def _split_partitions(
    data: dict[str, Any], problems: list[str]
) -> tuple[WorkspaceSessionState, dict[str, WorkspaceSessionState], WorkspaceSessionState | None]:
    """(local, other hosts, a misplaced 'local' entry of the by-host map)."""
    local = WorkspaceSessionState()
    raw_local = data.pop("workspaceSession", None)
    if raw_local is not None:
        local = _decode_partition(raw_local, "workspaceSession", problems) or local
    raw_hosts = data.pop("workspaceSessionsByHostId", None)
    hosts: dict[str, WorkspaceSessionState] = {}
    misplaced_local: WorkspaceSessionState | None = None
    if raw_hosts is not None and not isinstance(raw_hosts, dict):
        problems.append("workspaceSessionsByHostId: dropped, not an object")
        raw_hosts = None
    for host_id, raw in (raw_hosts or {}).items():
        where = f"workspaceSessionsByHostId[{host_id!r}]"
        if not is_execution_host_id(host_id):
            problems.append(f"{where}: dropped, not an execution host id")
            continue
        session = _decode_partition(raw, where, problems)
        if session is None:
            continue
        if host_id == LOCAL_HOST_ID:
            misplaced_local = session
        else:
            hosts[host_id] = session
    return local, hosts, misplaced_local


def _marked(state: PersistedState, marker: str) -> bool:
    return bool(state.extra.get(marker))


def _mark(state: PersistedState, marker: str) -> PersistedState:
    return replace(state, extra={**state.extra, marker: True})


def _migrate_external_visibility(state: PersistedState) -> PersistedState:
    """Old builds stored a boolean; a repo that never chose the new field gets its mapping."""
    repos = tuple(
        replace(
            repo,
            external_worktree_visibility="show"
            if repo.external_worktree_visibility_legacy
            else "hide",
        )
        if repo.external_worktree_visibility is None
        and repo.external_worktree_visibility_legacy is not None
        else repo
        for repo in state.repos
    )
    return replace(state, repos=repos)


def decode_state(raw: bytes, *, home_dir: str, mint: Mint) -> LoadedState:
    """Parse file bytes; raises ValueError when the file is not a usable state."""
    return decode_state_data(decode_bounded(raw, what="state file"), home_dir=home_dir, mint=mint)


def decode_state_data(data: Any, *, home_dir: str, mint: Mint) -> LoadedState:
    """``decode_state`` from builtins (a file's JSON with the journal applied); ``data``
    is consumed. Raises ValueError when it is not a usable state."""
    try:
        return _decode_state_data(data, home_dir=home_dir, mint=mint)
    except RecursionError as exc:  # a walker recursing through hostile nesting
        raise ValueError("state nests too deeply to decode") from exc


def _decode_state_data(data: Any, *, home_dir: str, mint: Mint) -> LoadedState:
    if not isinstance(data, dict):
        raise ValueError(f"top level is {type(data).__name__}, not an object")
    version = _file_schema_version(data)
    if version is not None and version > SCHEMA_VERSION:
        return _decode_newer(data, version, home_dir)
    problems: list[str] = []
    local, hosts, misplaced_local = _split_partitions(data, problems)
    state = from_builtins(PersistedState, data)  # ModelDecodeError is a ValueError
    migrations: list[str] = []
    if not _marked(state, LOCAL_PARTITION_MARKER):
        # A 'local' entry in the by-host map is a provable leftover only while the
        # canonical bare field is still empty; otherwise the bare field wins.
        if misplaced_local is not None and local == WorkspaceSessionState():
            local = misplaced_local
        state = _mark(state, LOCAL_PARTITION_MARKER)
        migrations.append(LOCAL_PARTITION_MARKER)
    elif misplaced_local is not None:
        problems.append(
            "workspaceSessionsByHostId['local']: dropped, local lives in workspaceSession"
        )
    if not _marked(state, EXTERNAL_VISIBILITY_MARKER):
        state = _mark(_migrate_external_visibility(state), EXTERNAL_VISIBILITY_MARKER)
        migrations.append(EXTERNAL_VISIBILITY_MARKER)
    if not _marked(state, SSH_TARGET_IDS_MARKER):
        # A file from before sshTargets has none (the field's default); targets from
        # before ids get one, and the repos naming them by label follow (ssh_targets.py).
        state, found = migrate_target_ids(state, mint)
        problems.extend(found)
        state = _mark(state, SSH_TARGET_IDS_MARKER)
        migrations.append(SSH_TARGET_IDS_MARKER)
    if not state.settings.workspace_dir:
        state = replace(
            state, settings=replace(state.settings, workspace_dir=default_workspace_dir(home_dir))
        )
    convert = not _marked(state, LEGACY_TABS_MARKER)
    if convert:
        state = _mark(state, LEGACY_TABS_MARKER)
        if any(map(has_legacy_tabs_to_fold, [local, *hosts.values()])):
            migrations.append(LEGACY_TABS_MARKER)

    def restore(session: WorkspaceSessionState) -> WorkspaceSessionState:
        session = normalize_session_for_write(session, WorkspaceSessionState(), mint).session
        return restore_session_on_load(session, mint, convert_legacy=convert)

    local = restore(local)
    hosts = {h: restore(s) for h, s in hosts.items()}
    state = replace(state, workspace_session=local, workspace_sessions_by_host_id=hosts)
    return LoadedState(state, tuple(problems), tuple(migrations))


def fresh_state(*, home_dir: str) -> PersistedState:
    """A first start: defaults, with every migration marked done (nothing old to migrate)."""
    state = PersistedState()
    state = replace(
        state, settings=replace(state.settings, workspace_dir=default_workspace_dir(home_dir))
    )
    for marker in MIGRATION_MARKERS:
        state = _mark(state, marker)
    return state
