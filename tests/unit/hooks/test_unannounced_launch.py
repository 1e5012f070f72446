"""A hook that comes before ptyd announced its launch (issue 39: the resumed Claude's
first hook after `orca up` was refused, and its light never came)."""

from __future__ import annotations

import time

import pytest

from actors.hooks import service as service_module
from actors.hooks.http_request import HookSubmission
from actors.hooks.service import HooksService
from actors.hooks.status_table import AgentStatusTable
from orca.contracts.hooks import StatusEventData, StatusSet

PANE = "tab-1:3f1c2a9e-0000-4000-8000-000000000001"
WT = "repo1::/src/wt-a"
OLD, NEW, FORGED = "a" * 64, "b" * 64, "c" * 64


def _service() -> tuple[HooksService, list[StatusEventData]]:
    emitted: list[StatusEventData] = []
    service = HooksService(AgentStatusTable(), emitted.append, lambda: None)
    service.restart_pane(PANE, OLD, WT, "term_old")  # the pane's previous launch
    return service, emitted


def _session_start(token: str) -> HookSubmission:
    return HookSubmission(
        agent="claude",
        pane_key=PANE,
        tab_id="tab-1",
        worktree_id=WT,
        launch_token_sha256=token,
        payload={"hook_event_name": "SessionStart", "session_id": "s-1"},
    )


def test_a_hook_before_its_launchs_announcement_is_applied_when_it_comes() -> None:
    service, emitted = _service()
    reply = service.ingest_hook(_session_start(NEW))
    assert reply.status == 202 and service.table.row(PANE) is None
    service.restart_pane(PANE, NEW, WT, "term_new")  # ptyd's queue delivers it late
    row = service.table.row(PANE)
    assert row is not None and row.state == "waiting" and row.agent == "claude"
    assert row.terminal_handle == "term_new"
    assert any(isinstance(e, StatusSet) for e in emitted)


def test_a_hook_no_launch_announces_never_applies_and_expires(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    service, _ = _service()
    assert service.ingest_hook(_session_start(FORGED)).status == 202
    service.restart_pane(PANE, NEW, WT, "term_new")  # another launch: not the forged one
    assert service.table.row(PANE) is None
    assert len(service._unannounced) == 1
    later = time.monotonic() + service_module.PENDING_LAUNCH_S + 1
    monkeypatch.setattr(service_module.time, "monotonic", lambda: later)
    service.launches_announced()
    assert len(service._unannounced) == 0


def test_the_waiting_hooks_are_bounded() -> None:
    service, _ = _service()
    for _ in range(service_module.PENDING_LAUNCH_MAX + 10):
        service.ingest_hook(_session_start(FORGED))
    assert len(service._unannounced) == service_module.PENDING_LAUNCH_MAX
