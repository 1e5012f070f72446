"""What the dashboard's main page shows: every worktree, its agents, terminals, asks. Pure.

The agents are ``orca worktree ps``'s projection, the same code
(``orca.views.ps.project_ps``: hooks' rows and fates judged by ptyd's facts, the
shared summary and decay of ``orca.model.agent_status``), named by the same handles
(``orca.views.agent_handles.ps_handles``). Around it: every worktree gitwatch lists (one
without agents too), the terminals ptyd runs in each, and the permission requests hooks
holds. Nothing is decided here that another surface decides differently.

The result is JSON-ready (camelCase, the model's field names), sent whole to every open
page whenever it changes (a board is a few KB for dozens of agents).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from orca.contracts import gitwatch, hooks, ptyd, store
from orca.model.agent_status import needs_user
from orca.views.agent_handles import ps_handles
from orca.views.handles import worktree_handles
from orca.views.ps import project_ps


def _terminal(session: ptyd.SessionRow, handle: str) -> dict[str, object]:
    return {
        "sessionId": session.session_id,
        "handle": handle,
        "paneKey": session.pane_key,
        "running": session.running,
        "exitCode": session.exit_code,
        "command": " ".join(session.argv)[:200],
        "cols": session.cols,
        "rows": session.rows,
    }


def _worktree_row(row: gitwatch.WorktreeRow | None, worktree_id: str) -> dict[str, object]:
    if row is None:
        return {"name": worktree_id.rsplit("/", 1)[-1], "branch": "", "path": "", "dirty": None}
    status = row.git_status
    return {
        "name": row.display_name or row.path.rstrip("/").rsplit("/", 1)[-1],
        "branch": row.branch.removeprefix("refs/heads/"),
        "path": row.path,
        "isMain": row.is_main_worktree,
        "repoId": row.repo_id,
        "dirty": None if status is None else status.total,
    }


def project_board(
    snapshot: hooks.Snapshot,
    sessions: Sequence[ptyd.SessionRow] | None,
    worktrees: Sequence[gitwatch.WorktreeRow],
    pending: Sequence[hooks.PermissionRequest],
    now_ms: int,
) -> dict[str, Any]:
    """The board: worktrees (gitwatch's order, then any only hooks or ptyd know of)."""
    listed = list(sessions or [])
    agents_by_wt = {
        str(w["worktreeId"]): w
        for w in project_ps(snapshot, None if sessions is None else listed, now_ms)
    }
    known = [(w.id, w.path) for w in worktrees]
    handles = ps_handles(list(agents_by_wt.values()), listed, known)
    # Every worktree's handle, those without agents too (``orca term ls``'s naming).
    worktree_names = worktree_handles(
        [*known, *((wid, "") for wid in agents_by_wt if wid not in {k for k, _ in known})]
    )
    rows = {w.id: w for w in worktrees}
    order = [w.id for w in worktrees]
    for worktree_id in [*agents_by_wt, *(s.worktree_id for s in listed if s.running)]:
        if worktree_id not in rows and worktree_id not in order:
            order.append(worktree_id)
    live = [s for s in listed if not s.archived]
    board: list[dict[str, object]] = []
    for worktree_id in order:
        projected = agents_by_wt.get(worktree_id)
        agents = []
        for agent in projected["agents"] if projected else []:  # type: ignore[attr-defined]
            key = (worktree_id, str(agent["paneKey"]))
            agents.append({**agent, "handle": handles.terminals.get(key, "")})
        terminals = [
            # Every terminal by its own handle (`orca term ls`'s), a plain shell too.
            _terminal(s, handles.sessions.get(s.session_id) or s.session_id[-8:])
            for s in sorted(live, key=lambda s: (not s.running, s.created_at))
            if s.worktree_id == worktree_id
        ]
        board.append(
            {
                "worktreeId": worktree_id,
                "handle": worktree_names.get(worktree_id)
                or handles.worktrees.get(worktree_id, worktree_id),
                **_worktree_row(rows.get(worktree_id), worktree_id),
                "summary": projected["summary"] if projected else {"state": "idle", "counts": {}},
                "agents": agents,
                "terminals": terminals,
            }
        )
    asks = [_permission(p, board) for p in pending]
    every: list[dict[str, object]] = [a for w in board for a in w["agents"]]  # type: ignore[attr-defined]
    needing = {str(a["paneKey"]) for a in every if needs_user(a)}
    needing |= {str(a["paneKey"]) for a in asks}
    return {
        "worktrees": board,
        "permissions": asks,
        "needsYou": len(needing),
        "generatedAtMs": now_ms,
    }


def _permission(
    request: hooks.PermissionRequest, board: list[dict[str, object]]
) -> dict[str, object]:
    worktree = next((w for w in board if w["worktreeId"] == request.worktree_id), None)
    handle = ""
    if worktree is not None:
        for agent in worktree["agents"]:  # type: ignore[attr-defined]
            if agent["paneKey"] == request.pane_key:
                handle = agent["handle"]
    return {
        "requestId": request.request_id,
        "paneKey": request.pane_key,
        "worktreeId": request.worktree_id,
        "worktree": worktree["handle"] if worktree else request.worktree_id,
        "handle": handle,
        "agent": request.agent,
        "toolName": request.tool_name,
        "summary": request.summary,
        "createdAtMs": request.created_at_ms,
        "expiresAtMs": request.expires_at_ms,
    }


def project_automations(listed: store.AutomationList | None) -> list[dict[str, object]]:
    """The board's automations (issue 38): each one's schedule and its last firing, from
    the store's record (orch keeps it; the web reads it, as it reads the other actors')."""
    if listed is None:
        return []
    out: list[dict[str, object]] = []
    for a in sorted(listed.automations, key=lambda a: a.name):
        mine = [r for r in listed.automation_runs if r.automation_id == a.id]
        last = max(mine, key=lambda r: (r.started_at, r.scheduled_for), default=None)
        s = a.schedule
        out.append(
            {
                "id": a.id,
                "name": a.name,
                "repo": a.target.repo_label or a.target.repo_id,
                "schedule": f"cron {s.cron} ({s.tz})"
                if s.kind == "cron"
                else f"every {s.every_seconds}s",
                "enabled": a.enabled,
                "last": None
                if last is None
                else {
                    "status": last.status,
                    "trigger": last.trigger,
                    "scheduledFor": last.scheduled_for,
                    "runId": last.output.run_id if last.output is not None else "",
                    "error": last.error or "",
                },
            }
        )
    return out
