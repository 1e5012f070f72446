"""sshTargets in the store's state: the ops and the SSH target id migration (seed 02 §2, §5)."""

from __future__ import annotations

import json
from itertools import count

import pytest

from actors.store import ssh_targets
from actors.store.load import SSH_TARGET_IDS_MARKER, decode_state, fresh_state
from orca.model.state import PersistedState
from orca.wire.errors import BadRequest, NotFound


def _mint() -> str:
    return f"minted-{next(_ids)}"


_ids = count()


def test_a_state_written_before_ssh_targets_loads_with_none_and_the_marker() -> None:
    raw = json.dumps({"schemaVersion": 1, "repos": []}).encode()
    loaded = decode_state(raw, home_dir="/home/u", mint=_mint)
    assert loaded.state.ssh_targets == ()
    assert SSH_TARGET_IDS_MARKER in loaded.migrations
    assert loaded.state.extra[SSH_TARGET_IDS_MARKER] is True
    assert fresh_state(home_dir="/h").extra[SSH_TARGET_IDS_MARKER] is True


def test_targets_without_ids_get_one_and_repos_naming_them_by_label_follow() -> None:
    repo = {"id": "r1", "path": "/src/a", "displayName": "a", "connectionId": "box"}
    other = {"id": "r2", "path": "/src/b", "displayName": "b", "connectionId": "taken"}
    raw = json.dumps({
        "schemaVersion": 1,
        "repos": [repo, other],
        "sshTargets": [
            {"label": "box", "destination": "me@box", "futureField": 1},
            {"id": "taken", "label": "t", "destination": "t"},
            {"label": "taken", "destination": "x"},  # its label is another target's id
            {"id": "taken", "destination": "dup"},
        ],
    }).encode()  # fmt: skip
    loaded = decode_state(raw, home_dir="/home/u", mint=_mint)
    targets = loaded.state.ssh_targets
    assert [t.id for t in targets][:2] == ["box", "taken"]
    assert targets[2].id.startswith("minted-"), "a taken label is never reused as an id"
    assert len(targets) == 3 and any("dropped" in p for p in loaded.problems)
    assert targets[0].extra == {"futureField": 1}, "unknown fields survive"
    repos = {r.id: r.connection_id for r in loaded.state.repos}
    assert repos == {"r1": "box", "r2": "taken"}, "an id that exists keeps its repos"
    # Runs once: a file that carries the marker is not migrated again.
    marked = raw.replace(b'"sshTargets"', b'"_sshTargetIdsMigrated": true, "sshTargets"')
    again = decode_state(marked, home_dir="/home/u", mint=_mint)
    assert [t.id for t in again.state.ssh_targets] == ["", "taken", "", "taken"]
    assert SSH_TARGET_IDS_MARKER not in again.migrations


def test_upsert_replaces_by_id_and_refuses_an_id_that_makes_no_host_id() -> None:
    state = PersistedState()
    change = ssh_targets.upsert_ssh_target(state, {"destination": "me@box"}, new_id="u1")
    assert change.result.id == "u1" and change.events
    change = ssh_targets.upsert_ssh_target(
        change.state, {"id": "u1", "destination": "me@box2"}, new_id="u2"
    )
    assert [t.destination for t in change.state.ssh_targets] == ["me@box2"]
    same = ssh_targets.upsert_ssh_target(change.state, {"id": "u1", "destination": "me@box2"}, new_id="x")
    assert same.events == () and same.state is change.state
    with pytest.raises(BadRequest):
        ssh_targets.upsert_ssh_target(state, {"id": "", "port": "x"}, new_id="u3")
    removed = ssh_targets.remove_ssh_target(change.state, "u1")
    assert removed.state.ssh_targets == ()
    with pytest.raises(NotFound):
        ssh_targets.remove_ssh_target(removed.state, "u1")
