"""A launch whose PTY exited reports no more (issue 40 item 8, found with the real
Codex 0.171: its shared app server outlives the Codex that started it and runs a later
session's hooks with that first pane's variables, so the ended pane's row came back)."""

from __future__ import annotations

from actors.hooks.http_request import HookSubmission
from actors.hooks.service import HooksService
from actors.hooks.status_table import AgentStatusTable
from orca.contracts.hooks import StatusEventData

PANE = "tab-1:3f1c2a9e-0000-4000-8000-000000000002"
WT = "repo1::/src/wt-a"
FIRST, SECOND = "a" * 64, "b" * 64


def _hook(token: str, event: str, session: str = "s-1") -> HookSubmission:
    return HookSubmission(
        agent="codex", pane_key=PANE, tab_id="tab-1", worktree_id=WT,
        launch_token_sha256=token, payload={"hook_event_name": event, "session_id": session},
    )  # fmt: skip


def test_hooks_of_an_ended_launch_are_refused_and_a_new_launch_reports() -> None:
    emitted: list[StatusEventData] = []
    service = HooksService(AgentStatusTable(), emitted.append, lambda: None)
    service.restart_pane(PANE, FIRST, WT, "term_1")
    assert service.ingest_hook(_hook(FIRST, "SessionStart")).status == 200
    assert service.table.row(PANE) is not None
    service.pty_exited(PANE, "term_1", 0)
    assert service.table.row(PANE) is None
    # the first launch's app server, still running, reports another session's turn
    late = service.ingest_hook(_hook(FIRST, "UserPromptSubmit", session="s-2"))
    assert late.status >= 400
    assert service.table.row(PANE) is None, "an ended terminal's row came back"
    # a new launch in the pane (its own token) reports as ever
    service.restart_pane(PANE, SECOND, WT, "term_2")
    assert service.ingest_hook(_hook(SECOND, "SessionStart", session="s-3")).status == 200
    row = service.table.row(PANE)
    assert row is not None and row.state == "waiting"
