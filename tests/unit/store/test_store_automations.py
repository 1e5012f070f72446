"""``automations`` and ``automationRuns`` in orca-data.json (issue 38; seed 02 §2, §5):
the pure store ops, the seed's field names on disk, and a file from before them."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from actors.store import automations as ops
from actors.store.load import decode_state
from orca.contracts import store as contract
from orca.model.automations import (
    MAX_RUNS_PER_AUTOMATION,
    AutomationOutput,
    AutomationRun,
    automation_run_id,
)
from orca.model.codec import encode_json
from orca.model.state import SCHEMA_VERSION, PersistedState
from orca.wire.errors import BadRequest, Conflict, NotFound

# Every field set away from its default: the file omits defaults (orca.model.codec).
AUTOMATION: dict[str, Any] = {
    "id": "a1",
    "name": "nightly",
    "target": {"repoId": "r1", "repoLabel": "app", "base": "main"},
    "prompt": "bump the dependencies",
    "agents": [{"agent": "claude", "count": 2}],
    "schedule": {"kind": "cron", "cron": "0 3 * * 1-5", "tz": "Europe/Paris"},
    "check": "make test",
    "enabled": False,
    "overlap": True,
    "createdAt": 1_700_000_000_000,
    "updatedAt": 1_700_000_000_000,
    "activeSince": 1_700_000_000_000,
}


def run_doc(scheduled_for: int, status: str = "starting", **more: Any) -> dict[str, Any]:
    return {
        "id": automation_run_id("a1", scheduled_for),
        "automationId": "a1",
        "scheduledFor": scheduled_for,
        "trigger": "schedule",
        "status": status,
        "startedAt": scheduled_for,
        **more,
    }


def with_automation() -> PersistedState:
    return ops.put_automation(PersistedState(), AUTOMATION).state


def load(doc: dict[str, Any]) -> PersistedState:
    raw = json.dumps(doc).encode()
    return decode_state(raw, home_dir="/home/u", mint=lambda: str(uuid.uuid4())).state


def test_a_due_time_is_recorded_once() -> None:
    """A second intent for the same due time answers the first record, changes nothing."""
    state = with_automation()
    first = ops.begin_run(state, run_doc(1000))
    assert first.result.created and len(first.events) == 1
    again = ops.begin_run(first.state, run_doc(1000, trigger="catch-up"))
    assert again.result == contract.AutomationRunBegun(run=first.result.run, created=False)
    assert again.state is first.state and again.events == ()


def test_a_run_of_no_automation_is_not_found() -> None:
    with pytest.raises(NotFound):
        ops.begin_run(PersistedState(), run_doc(1000))


def test_settle_records_the_result_and_refuses_an_unsettled_status() -> None:
    state = ops.begin_run(with_automation(), run_doc(1000)).state
    rid = automation_run_id("a1", 1000)
    settled = ops.settle_run(
        state, rid, status="started", finished_at=1001,
        output=AutomationOutput(run_id="rabc", run_name="nightly"), error=None,
    )  # fmt: skip
    assert settled.result.status == "started" and settled.result.output.run_id == "rabc"
    with pytest.raises(BadRequest):
        ops.settle_run(state, rid, status="starting", finished_at=1, output=None, error=None)
    with pytest.raises(NotFound):
        ops.settle_run(state, "a1@9", status="failed", finished_at=1, output=None, error="x")


def test_history_is_bounded_but_an_unsettled_intent_is_kept() -> None:
    """Beyond the bound the oldest settled records go; a `starting` one never does."""
    state = ops.begin_run(with_automation(), run_doc(0)).state  # an intent never settled
    for t in range(1, MAX_RUNS_PER_AUTOMATION + 6):
        state = ops.begin_run(state, run_doc(t, status="started")).state
    runs = state.automation_runs
    assert len([r for r in runs if r.status == "started"]) == MAX_RUNS_PER_AUTOMATION
    assert [r.scheduled_for for r in runs if r.status == "starting"] == [0]
    assert min(r.scheduled_for for r in runs if r.status == "started") == 6


def test_names_are_unique_and_remove_takes_the_runs_along() -> None:
    state = ops.begin_run(with_automation(), run_doc(1000)).state
    with pytest.raises(Conflict):
        ops.put_automation(state, {**AUTOMATION, "id": "a2"})
    renamed = ops.put_automation(state, {**AUTOMATION, "prompt": "other"})
    assert [a.prompt for a in renamed.state.automations] == ["other"]
    gone = ops.remove_automation(renamed.state, "a1")
    assert gone.state.automations == () and gone.state.automation_runs == ()
    assert gone.events == (contract.AutomationChanged(id="a1", automation=None),)
    with pytest.raises(NotFound):
        ops.remove_automation(gone.state, "a1")
    with pytest.raises(BadRequest):
        ops.put_automation(PersistedState(), {"id": "x"})


def test_the_state_file_round_trips_with_the_seeds_field_names() -> None:
    """`automations` and `automationRuns` are written under the seed's names, each record
    in camelCase, and read back equal (unknown fields of a newer build included)."""
    settled = run_doc(
        1000, status="started", finishedAt=1200, output={"runId": "rabc", "runName": "nightly"}
    )
    failed = run_doc(2000, status="failed", finishedAt=2001, error="no `claude` on PATH")
    doc = {
        "schemaVersion": SCHEMA_VERSION,
        "automations": [{**AUTOMATION, "fromANewerBuild": 1}],
        "automationRuns": [settled, failed],
    }
    state = load(doc)
    assert state.automations[0].schedule.cron == "0 3 * * 1-5"
    assert state.automations[0].extra == {"fromANewerBuild": 1}
    assert state.automation_runs[1] == AutomationRun(
        id="a1@2000", automation_id="a1", scheduled_for=2000, trigger="schedule",
        status="failed", started_at=2000, finished_at=2001, error="no `claude` on PATH",
    )  # fmt: skip
    out = json.loads(encode_json(state))
    assert out["automations"] == [{**AUTOMATION, "fromANewerBuild": 1}]
    assert out["automationRuns"] == [settled, failed]
    assert load(out) == state


def test_a_file_from_before_automations_loads_with_both_empty_and_loses_nothing() -> None:
    """A state file of the previous build (schemaVersion 1, no `automations` or
    `automationRuns`) loads; both lists are empty and written on the next save; every
    other field of the file comes out as it went in."""
    old = {
        "schemaVersion": 1,
        "repos": [{"id": "r1", "path": "/src/app", "displayName": "app", "addedAt": 5}],
        "worktreeMeta": {"r1::/w": {"comment": "keep me", "sortOrder": 3}},
        "settings": {"workspaceDir": "/home/u/ws", "nestWorkspaces": False, "theme": "dark"},
        "ui": {"sidebarWidth": 300},
        "sshTargets": [{"id": "s"}],
        "_externalWorktreeVisibilityMigrated": True,
        "_localSessionPartitionMigrated": True,
        "_legacyUnifiedTabsMigrated": True,
    }
    state = load(old)
    assert state.automations == () and state.automation_runs == ()
    assert state.schema_version == 1 == SCHEMA_VERSION
    out = json.loads(encode_json(state))
    assert out["automations"] == [] and out["automationRuns"] == []
    for key, value in old.items():
        assert out[key] == value, key
