"""The ``--json`` objects ``orca watch`` prints, one per change: a written row, a
removal, a held permission request and its answer.

Their own module so that the local watch (``orca.cli.watch``) and the remote hosts'
reader (``orca.cli.remote.watch``) print the same lines without importing each other.
"""

from __future__ import annotations

from typing import Any


def set_line(row: Any, now_ms: int) -> dict[str, object]:
    """The ``--json`` object of one written row (``AgentStatusRow``)."""
    from orca.model.agent_status import display_state

    return {
        "event": "set",
        "paneKey": row.pane_key,
        "worktreeId": row.worktree_id,
        "terminalHandle": row.terminal_handle,
        "agent": row.agent,
        "state": row.state,
        "displayState": display_state(row, now_ms),
        "unread": row.unread,
        "source": row.source,
        "detail": row.detail,
        "rev": row.rev,
    }


def clear_line(cleared: Any) -> dict[str, object]:
    line: dict[str, object] = {
        "event": "clear",
        "paneKey": cleared.pane_key,
        "worktreeId": cleared.worktree_id,
        "reason": cleared.reason,
    }
    if cleared.exit_code is not None:
        line["exitCode"] = cleared.exit_code
    return line


def ask_line(request: Any) -> dict[str, object]:
    """The ``--json`` object of a held permission request (``orca approve``/``deny``)."""
    return {
        "event": "ask",
        "paneKey": request.pane_key,
        "worktreeId": request.worktree_id,
        "agent": request.agent,
        "requestId": request.request_id,
        "toolName": request.tool_name,
        "summary": request.summary,
        "expiresAtMs": request.expires_at_ms,
    }


def answered_line(settlement: Any) -> dict[str, object]:
    """The ``--json`` object of a settled permission request."""
    return {
        "event": "answered",
        "paneKey": settlement.pane_key,
        "worktreeId": settlement.worktree_id,
        "requestId": settlement.request_id,
        "outcome": settlement.outcome,
        "by": settlement.by,
    }


def automation_line(fired: Any) -> dict[str, object]:
    """An automation's firing, settled (``orch.AutoFired``): started, skipped or failed."""
    run = fired.run
    return {
        "event": "automation",
        "name": fired.name,
        "status": run.status,
        "trigger": run.trigger,
        "scheduledFor": run.scheduled_for,
        "automationRunId": run.id,
        "runId": run.output.run_id if run.output is not None else "",
        "error": run.error or "",
    }
