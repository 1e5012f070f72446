"""Pure ops on ``automations`` and ``automationRuns`` (issue 38; seed 02 §2).

The store keeps them; orch decides them (it owns the schedule). Two rules live here
because they hold whoever calls:

* One record per due time. ``begin_run`` inserts a firing's record only when no record
  has its id (``<automationId>@<scheduledFor>``); otherwise it answers the one already
  there with ``created`` false, and the caller knows that due time has fired. This is
  the durable half of orch's automation fence: the reply comes after the journal's
  fsync (``actors/store/actor.py``), so an acknowledged intent survives ``kill -9``.
* Bounded history. An automation keeps its newest ``MAX_RUNS_PER_AUTOMATION`` records;
  an unsettled one (``starting``) is never dropped, whatever its age: it is an intent
  still to resolve.
"""

from __future__ import annotations

from typing import Any

import msgspec

from actors.store.change import Change, decode_record
from orca.contracts import store as contract
from orca.model.automations import (
    MAX_RUNS_PER_AUTOMATION,
    Automation,
    AutomationOutput,
    AutomationRun,
)
from orca.model.state import PersistedState
from orca.wire.errors import BadRequest, Conflict, NotFound

replace = msgspec.structs.replace

SETTLED = frozenset({"started", "skipped", "failed"})


def automation_list(state: PersistedState) -> contract.AutomationList:
    return contract.AutomationList(
        automations=list(state.automations), automation_runs=list(state.automation_runs)
    )


def put_automation(state: PersistedState, raw: dict[str, Any]) -> Change:
    """Insert an automation, or replace the one with its id."""
    automation = decode_record(Automation, raw, "automation")
    if not automation.id or not automation.name:
        raise BadRequest("invalid automation: id and name must not be empty")
    for other in state.automations:
        if other.name == automation.name and other.id != automation.id:
            raise Conflict(f"an automation is already named {automation.name!r} ({other.id})")
    current = next((a for a in state.automations if a.id == automation.id), None)
    if current == automation:
        return Change(state, current)
    if current is None:
        automations = (*state.automations, automation)
    else:
        automations = tuple(automation if a.id == automation.id else a for a in state.automations)
    event = contract.AutomationChanged(id=automation.id, automation=automation)
    return Change(replace(state, automations=automations), automation, (event,))


def remove_automation(state: PersistedState, automation_id: str) -> Change:
    """The automation and every record of its firings."""
    if not any(a.id == automation_id for a in state.automations):
        raise NotFound(f"no automation with id {automation_id!r}")
    new_state = replace(
        state,
        automations=tuple(a for a in state.automations if a.id != automation_id),
        automation_runs=tuple(r for r in state.automation_runs if r.automation_id != automation_id),
    )
    event = contract.AutomationChanged(id=automation_id, automation=None)
    return Change(new_state, contract.Removed(id=automation_id), (event,))


def _bounded(runs: tuple[AutomationRun, ...], automation_id: str) -> tuple[AutomationRun, ...]:
    """Drop the oldest settled records of ``automation_id`` beyond the bound."""
    mine = [r for r in runs if r.automation_id == automation_id and r.status != "starting"]
    excess = len(mine) - MAX_RUNS_PER_AUTOMATION
    if excess <= 0:
        return runs
    oldest = sorted(mine, key=lambda r: (r.scheduled_for, r.id))[:excess]
    gone = {r.id for r in oldest}
    return tuple(r for r in runs if r.id not in gone)


def begin_run(state: PersistedState, raw: dict[str, Any]) -> Change:
    """A firing's intent: recorded once per id; the existing record otherwise."""
    run = decode_record(AutomationRun, raw, "automation run")
    if not any(a.id == run.automation_id for a in state.automations):
        raise NotFound(f"no automation with id {run.automation_id!r}")
    found = next((r for r in state.automation_runs if r.id == run.id), None)
    if found is not None:
        return Change(state, contract.AutomationRunBegun(run=found, created=False))
    runs = _bounded((*state.automation_runs, run), run.automation_id)
    event = contract.AutomationRunRecorded(run=run)
    result = contract.AutomationRunBegun(run=run, created=True)
    return Change(replace(state, automation_runs=runs), result, (event,))


def settle_run(
    state: PersistedState,
    run_id: str,
    *,
    status: str,
    finished_at: int,
    output: AutomationOutput | None,
    error: str | None,
) -> Change:
    """A firing's result (its status, the orchestration run it started, or why not)."""
    if status not in SETTLED:
        raise BadRequest(f"a settled automation run is one of {sorted(SETTLED)}, not {status!r}")
    found = next((r for r in state.automation_runs if r.id == run_id), None)
    if found is None:
        raise NotFound(f"no automation run with id {run_id!r}")
    settled = replace(found, status=status, finished_at=finished_at, output=output, error=error)
    if settled == found:
        return Change(state, found)
    runs = tuple(settled if r.id == run_id else r for r in state.automation_runs)
    runs = _bounded(runs, found.automation_id)
    event = contract.AutomationRunRecorded(run=settled)
    return Change(replace(state, automation_runs=runs), settled, (event,))
