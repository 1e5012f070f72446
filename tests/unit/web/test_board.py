"""The board is `orca worktree ps`'s projection plus every worktree and ask (issue 27)."""

from __future__ import annotations

import msgspec

from actors.web.board import project_board
from orca.contracts import gitwatch, hooks, ptyd
from orca.model.agent_status import AgentStatusRow
from orca.model.codec import from_builtins
from orca.views.ps import project_ps

NOW = 10_000_000
A, B = "repo::/src/fix-login", "repo::/src/main"


def _row(pane: str, state: str, **extra: object) -> AgentStatusRow:
    return AgentStatusRow(
        pane_key=pane,
        worktree_id=A,
        state=state,
        source="hook",  # type: ignore[arg-type]
        updated_at_ms=NOW - 5000,
        state_since_ms=NOW - 5000,
        agent="claude",
        **extra,  # type: ignore[arg-type]
    )


def _session(pane: str, sid: str, running: bool = True) -> ptyd.SessionRow:
    return ptyd.SessionRow(
        session_id=sid,
        host_id="local",
        worktree_id=A,
        pane_key=pane,
        tab_id=pane.split(":")[0],
        terminal_handle=f"h-{sid}",
        argv=["claude"],
        cwd="/src/fix-login",
        pid=1,
        cols=80,
        rows=24,
        created_at=1.0,
        exit_code=None if running else 0,
        running=running,
        end_offset=0,
        subscribers=0,
    )


def _worktree(wid: str, path: str, main: bool) -> gitwatch.WorktreeRow:
    raw = {
        "id": wid,
        "repoId": "repo",
        "path": path,
        "head": "abc",
        "branch": "refs/heads/x",
        "isBare": False,
        "isMainWorktree": main,
        "ownership": "orca-managed",
        "gitStatus": None,
    }
    return from_builtins(gitwatch.WorktreeRow, raw)


def test_agents_are_ps_s_projection_and_every_worktree_is_listed() -> None:
    rows = [_row("t1:a", "blocked", unread=True), _row("t1:b", "done", unread=True)]
    snapshot = hooks.Snapshot(epoch="e", seq=1, rev=1, rows=rows, fates=[])
    sessions = [_session("t1:a", f"{A}@@aaaaaaaa"), _session("t1:b", f"{A}@@bbbbbbbb")]
    worktrees = [_worktree(B, "/src/main", True), _worktree(A, "/src/fix-login", False)]
    ask = hooks.PermissionRequest(
        request_id="r1",
        pane_key="t1:a",
        worktree_id=A,
        agent="claude",
        tool_name="Bash",
        summary="make deploy",
        session_id="s",
        created_at_ms=NOW,
        expires_at_ms=NOW + 1,
    )
    board = project_board(snapshot, sessions, worktrees, [ask], NOW)
    assert [w["worktreeId"] for w in board["worktrees"]] == [B, A]
    main, fix = board["worktrees"]
    assert (main["handle"], main["agents"], main["terminals"]) == ("main", [], [])
    ps = project_ps(snapshot, sessions, NOW)
    stripped = [{k: v for k, v in a.items() if k != "handle"} for a in fix["agents"]]
    assert stripped == ps[0]["agents"]  # the same projection, agent for agent
    assert [a["handle"] for a in fix["agents"]] == ["fix-login:aaaa", "fix-login:bbbb"]
    assert [t["handle"] for t in fix["terminals"]] == ["fix-login:aaaa", "fix-login:bbbb"]
    assert board["permissions"][0]["handle"] == "fix-login:aaaa"
    assert board["needsYou"] == 2  # the blocked one (with its ask) and the unread done one
    msgspec.json.encode(board)  # JSON-ready


def test_without_ptyd_rows_are_shown_as_hooks_holds_them() -> None:
    snapshot = hooks.Snapshot(epoch="e", seq=1, rev=1, rows=[_row("t1:a", "working")], fates=[])
    board = project_board(snapshot, None, [], [], NOW)
    (worktree,) = board["worktrees"]
    assert worktree["worktreeId"] == A and worktree["agents"][0]["displayState"] == "working"


def test_a_plain_terminal_is_named_by_its_handle_as_term_ls_names_it() -> None:
    """Issue 32: a terminal no agent reports from (a shell) was shown by the last 8
    characters of its id; it has its handle like any other, and an ended terminal in
    a pane since relaunched keeps its own."""
    snapshot = hooks.Snapshot(epoch="e", seq=1, rev=1, rows=[], fates=[])
    shell = _session("t1:c", f"{A}@@cccccccc")
    ended = _session("t1:d", f"{A}@@dddddddd", running=False)
    relaunched = _session("t1:d", f"{A}@@eeeeeeee")
    worktrees = [_worktree(A, "/src/fix-login", False)]
    board = project_board(snapshot, [shell, ended, relaunched], worktrees, [], NOW)
    (fix,) = board["worktrees"]
    assert {t["sessionId"]: t["handle"] for t in fix["terminals"]} == {
        shell.session_id: "fix-login:cccc",
        ended.session_id: "fix-login:dddd",
        relaunched.session_id: "fix-login:eeee",
    }


def test_automations_are_listed_with_their_last_firing() -> None:
    """Issue 38: the store's automations on the board, each with its newest firing."""
    from actors.web.board import project_automations
    from orca.contracts import store
    from orca.model.automations import (
        Automation,
        AutomationAgent,
        AutomationOutput,
        AutomationRun,
        AutomationSchedule,
        AutomationTarget,
    )

    automation = Automation(
        id="a1", name="nightly", target=AutomationTarget(repo_id="r", repo_label="app"),
        prompt="p", agents=(AutomationAgent(agent="claude"),),
        schedule=AutomationSchedule(kind="cron", cron="0 3 * * *", tz="UTC"), enabled=False,
    )  # fmt: skip
    older = AutomationRun(
        id="a1@1", automation_id="a1", scheduled_for=1, trigger="schedule", status="started",
        started_at=1, output=AutomationOutput(run_id="rold"),
    )  # fmt: skip
    newer = AutomationRun(
        id="a1@2", automation_id="a1", scheduled_for=2, trigger="catch-up", status="failed",
        started_at=2, error="no claude on PATH",
    )  # fmt: skip
    listed = store.AutomationList(automations=[automation], automation_runs=[newer, older])
    (row,) = project_automations(listed)
    assert row["name"] == "nightly" and row["repo"] == "app" and not row["enabled"]
    assert row["schedule"] == "cron 0 3 * * * (UTC)"
    assert row["last"] == {
        "status": "failed", "trigger": "catch-up", "scheduledFor": 2, "runId": "",
        "error": "no claude on PATH",
    }  # fmt: skip
    assert project_automations(None) == []
