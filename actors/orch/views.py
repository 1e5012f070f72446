"""What ``run.show`` and ``run.list`` answer, built from the ledger's rows and what orch
follows (hooks' rows, ptyd's sessions) plus gitwatch's diffstats and the vault's usage.
Pure: every input is passed in."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from actors.orch import core
from actors.orch.follow import PtySession
from actors.orch.ledger import RunRow, TaskRow
from orca.contracts import orch as contract
from orca.model.agent_status import AgentStatusRow

# gitwatch's merge preview of a variant: (every change: commits and working tree, the
# conflicting paths, the working tree's part of it).
Preview = tuple[contract.Diffstat, list[str], contract.Diffstat | None]


class Usage:
    __slots__ = ("cost_usd", "tokens")

    def __init__(self, tokens: int, cost_usd: float | None) -> None:
        self.tokens = tokens
        self.cost_usd = cost_usd


def task_state(
    run: RunRow, task: TaskRow, row: AgentStatusRow | None, session: PtySession | None
) -> contract.VariantState:
    return core.variant_state(
        task.phase,
        failed=bool(task.failed),
        archived=bool(task.archived),
        merged=run.state == "merged" and run.merged_variant == task.variant,
        row=row,
        running=None if session is None else session.running,
        prompted_ms=task.prompted_ms,
    )


def elapsed_s(task: TaskRow, state: str, now_ms: int) -> float | None:
    if task.spawned_ms is None:
        return None
    end = now_ms
    if state in ("idle", "exited", "archived", "merged") and task.idle_ms:
        end = task.idle_ms
    return max(0.0, (end - task.spawned_ms) / 1000)


def variant_info(
    run: RunRow,
    task: TaskRow,
    *,
    row: AgentStatusRow | None,
    session: PtySession | None,
    handle: str,
    preview: Preview | None,
    usage: Usage | None,
    now_ms: int,
) -> contract.VariantInfo:
    state = task_state(run, task, row, session)
    check = None
    if task.check_exit is not None and task.check_ms is not None:
        check = contract.CheckResult(
            exit_code=task.check_exit,
            tail=task.check_tail,
            ran_at_ms=task.check_ms,
            duration_ms=task.check_duration_ms or 0,
        )
    return contract.VariantInfo(
        variant=task.variant,
        agent=task.agent,
        state=state,
        phase=task.phase,
        handle=handle,
        session_id=task.session_id,
        pane_key=task.pane_key,
        worktree_id=task.worktree_id,
        worktree_path=task.worktree_path,
        branch=task.branch,
        diffstat=None if preview is None else preview[0],
        uncommitted=None if preview is None else preview[2],
        conflicts=None if preview is None else preview[1],
        check=check,
        elapsed_s=elapsed_s(task, state, now_ms),
        tokens=None if usage is None else usage.tokens,
        cost_usd=None if usage is None else usage.cost_usd,
        report=task.report,
        report_status=task.report_status,
        error=task.failed,
        prompted_at_ms=task.prompted_ms,
    )


def run_info(
    run: RunRow,
    tasks: Sequence[TaskRow],
    *,
    rows: Mapping[str, AgentStatusRow],
    sessions: Mapping[str, PtySession],
    handles: Mapping[str, str],
    previews: Mapping[str, Preview],
    usage: Mapping[str, Usage] | None,
) -> contract.RunInfo:
    now = time.time_ns() // 1_000_000
    variants = [
        variant_info(
            run,
            t,
            row=rows.get(t.pane_key),
            session=sessions.get(t.pane_key),
            handle=handles.get(t.session_id, t.session_id),
            preview=previews.get(t.variant),
            usage=None if usage is None else usage.get(t.pane_key, Usage(0, None)),
            now_ms=now,
        )
        for t in tasks
    ]
    return contract.RunInfo(
        run=run.id,
        name=run.name,
        repo_id=run.repo_id,
        repo=run.repo_label,
        prompt=run.prompt,
        base=run.base,
        check=run.check_cmd,
        state=core.run_state(run.state, [v.state for v in variants]),
        created_at_ms=run.created_ms,
        revision=run.revision,
        merged_variant=run.merged_variant,
        merge_commit=run.merge_commit,
        variants=variants,
    )


def run_summary(
    run: RunRow,
    tasks: Sequence[TaskRow],
    rows: Mapping[str, AgentStatusRow],
    sessions: Mapping[str, PtySession],
) -> contract.RunSummary:
    states: dict[str, int] = {}
    for t in tasks:
        state = task_state(run, t, rows.get(t.pane_key), sessions.get(t.pane_key))
        states[state] = states.get(state, 0) + 1
    return contract.RunSummary(
        run=run.id,
        name=run.name,
        repo=run.repo_label,
        state=core.run_state(run.state, list(states)),
        created_at_ms=run.created_ms,
        revision=run.revision,
        variants=len(tasks),
        states=states,
        merged_variant=run.merged_variant,
    )
