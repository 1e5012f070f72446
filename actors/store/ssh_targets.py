"""The SSH targets table (seed 02 §2 ``sshTargets``): pure ops and the id migration.

``sshTarget.upsert`` replaces the target with the same id or appends one (no id: a
fresh UUID); the id must make a valid execution host id (``ssh:<encoded id>``), since
that is what every row of the host carries. ``sshTarget.remove`` drops one; repos
naming it keep their ``connectionId`` (the host id of their rows does not change
because the target went away; seed 01 §4.6's precedence still reads it).

``migrate_target_ids`` runs once on load (``load.py``, marker
``_sshTargetIdsMigrated``): a state written before ``sshTargets`` existed simply has
none; a target written before ids existed gets its label as id when that is free,
else a fresh UUID, and a repo whose ``connectionId`` named it by label follows it; a
second target with an id already taken is dropped and reported (one id, one host).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from actors.store.change import Change, decode_record
from orca.contracts import store as contract
from orca.model.hosts import BadExecutionHostId, ssh_host_id
from orca.model.ssh_target import SshTarget
from orca.model.state import PersistedState
from orca.wire.errors import BadRequest, NotFound

replace = msgspec.structs.replace


def upsert_ssh_target(state: PersistedState, raw: dict[str, Any], *, new_id: str) -> Change:
    target = decode_record(SshTarget, raw if raw.get("id") else {**raw, "id": new_id}, "sshTarget")
    try:
        ssh_host_id(target.id)
    except BadExecutionHostId as exc:
        raise BadRequest(f"sshTarget id {target.id!r}: {exc}") from None
    targets = list(state.ssh_targets)
    for i, existing in enumerate(targets):
        if existing.id == target.id:
            if existing == target:
                return Change(state, target)
            targets[i] = target
            break
    else:
        targets.append(target)
    event = contract.SshTargetUpserted(ssh_target=target)
    return Change(replace(state, ssh_targets=tuple(targets)), target, (event,))


def remove_ssh_target(state: PersistedState, target_id: str) -> Change:
    if not any(t.id == target_id for t in state.ssh_targets):
        raise NotFound(f"no SSH target with id {target_id!r}")
    targets = tuple(t for t in state.ssh_targets if t.id != target_id)
    event = contract.SshTargetRemoved(id=target_id)
    return Change(replace(state, ssh_targets=targets), contract.Removed(id=target_id), (event,))


def migrate_target_ids(
    state: PersistedState, mint: Callable[[], str]
) -> tuple[PersistedState, list[str]]:
    """Give every target an id (see the module docstring); (new state, problems)."""
    problems: list[str] = []
    taken = {t.id for t in state.ssh_targets if t.id}
    renamed: dict[str, str] = {}  # label -> the id its target was given
    kept: list[SshTarget] = []
    seen: set[str] = set()
    for target in state.ssh_targets:
        if not target.id:
            new_id = target.label if target.label and target.label not in taken else mint()
            taken.add(new_id)
            if target.label:
                renamed[target.label] = new_id
            target = replace(target, id=new_id)
        if target.id in seen:
            problems.append(f"sshTargets: a second target with id {target.id!r} dropped")
            continue
        seen.add(target.id)
        kept.append(target)
    repos = tuple(
        replace(repo, connection_id=renamed[repo.connection_id])
        if repo.connection_id in renamed and repo.connection_id not in seen - set(renamed.values())
        else repo
        for repo in state.repos
    )
    return replace(state, ssh_targets=tuple(kept), repos=repos), problems
