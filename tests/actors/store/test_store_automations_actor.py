"""The store actor keeps an automation's firing intent once acknowledged (issue 38): the
durable half of orch's automation fence survives kill -9; a second intent for the same
due time answers the first; a peer's malformed record is refused, the store lives on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
from support.actors import kill_9_and_wait, running_store

from orca.contracts import store as contract
from orca.paths import resolve_paths
from orca.wire.errors import BadRequest

AUTOMATION: dict[str, Any] = {
    "id": "a1",
    "name": "nightly",
    "target": {"repoId": "r1"},
    "prompt": "bump",
    "agents": [{"agent": "claude"}],
    "schedule": {"kind": "every", "everySeconds": 60},
}
INTENT: dict[str, Any] = {
    "id": "a1@60000",
    "automationId": "a1",
    "scheduledFor": 60000,
    "trigger": "schedule",
    "status": "starting",
}


async def test_an_acknowledged_intent_survives_kill_9(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with running_store(tmp_path) as store:
            await store.invoke(
                contract.AUTOMATION_PUT, contract.AutomationPutArgs(automation=AUTOMATION)
            )
            begun = await store.invoke(
                contract.AUTOMATION_RUN_BEGIN, contract.AutomationRunBeginArgs(run=INTENT)
            )
            assert begun.created
            with pytest.raises(BadRequest):
                await store.call(contract.AUTOMATION_RUN_BEGIN.name, {"run": {"id": 3}})
            await kill_9_and_wait(store.pid)
        async with running_store(tmp_path) as store:
            listed = await store.invoke(contract.AUTOMATION_LIST)
            assert [r.id for r in listed.automation_runs] == ["a1@60000"]
            again = await store.invoke(
                contract.AUTOMATION_RUN_BEGIN,
                contract.AutomationRunBeginArgs(run={**INTENT, "trigger": "catch-up"}),
            )
            assert not again.created and again.run.trigger == "schedule"
            await store.stop()
        on_disk = json.loads(resolve_paths({"ORCA_HOME": str(tmp_path)}).state_file.read_bytes())
        assert [r["id"] for r in on_disk["automationRuns"]] == ["a1@60000"]
