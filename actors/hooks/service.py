"""The hooks actor's behaviour without its sockets: status table + effects routing.

Every producer path (HTTP, RPC from ``ptyd``, structured hosts) calls one of these
methods; each runs the pure table and then carries out its effects in one place:
emit each event Struct (:mod:`orca.contracts.hooks`) through ``emit`` and reschedule
the debounced save when the persisted subset may have changed. The actor shell
(:mod:`actors.hooks.actor`) wires ``emit`` to the PUB socket's ``emit``; tests and
benchmarks can wire it to a list.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace

from actors.hooks.http_request import HookReply, HookSubmission
from actors.hooks.ingest import event_from_hook
from actors.hooks.pty_truth import PtyVerdicts
from actors.hooks.status_table import AgentStatusTable, StatusEvent, TableEffects
from orca.contracts.hooks import EndedPty, LivePty, StatusEventData, StatusSet
from orca.model.agent_status import AgentStatusRow

EmitFn = Callable[[StatusEventData], object]

# Rejections the hook caller caused by naming a pane it has no authority over.
_HTTP_STATUS_BY_REASON = {
    "bad_pane_key": 400,
    "legacy_numeric_pane_key": 400,
    "bad_launch_token_hash": 400,
    "unknown_worktree": 400,
    "launch_token_missing": 403,
    "launch_token_mismatch": 403,
}


# A hook whose launch ptyd has not announced yet: right after `orca up`, or with hooks
# slow, the launch's ``restart_pane`` can wait in ptyd's ordered queue while the agent
# is already running its first hook (its token then mismatches the pane's previous
# launch). Such a hook waits this long for the announcement, then is dropped; at most
# this many wait (a forged token's hooks simply expire).
PENDING_LAUNCH_S = 15.0
PENDING_LAUNCH_MAX = 64


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class HooksService:
    def __init__(
        self,
        table: AgentStatusTable,
        emit: EmitFn,
        schedule_save: Callable[[], None],
        clock_ms: Callable[[], int] = wall_clock_ms,
    ) -> None:
        self.table = table
        self._emit = emit
        self._schedule_save = schedule_save
        self._clock_ms = clock_ms
        # Called with (pane key, row rev, agent) when an answer turned a blocked row
        # working: the actor settles it from evidence (actors/hooks/answer_watch.py).
        self.on_answered: Callable[[str, int, str], None] | None = None
        # Hooks of launches not announced yet, in arrival order: (arrived, event).
        self._unannounced: deque[tuple[float, StatusEvent]] = deque()

    def carry_out(self, effects: TableEffects) -> TableEffects:
        for event in effects.events:
            self._emit(event)
        if effects.persist:
            self._schedule_save()
        return effects

    def apply(self, event: StatusEvent) -> TableEffects:
        return self.carry_out(self.table.apply_normalized_status(event, self._clock_ms()))

    def ingest_hook(self, submission: HookSubmission) -> HookReply:
        event = event_from_hook(submission)
        if event is None:
            return HookReply(200, {"outcome": "ignored"})
        effects = self.apply(event)
        if effects.reason == "launch_token_mismatch" and event.launch_token_sha256:
            self._wait_for_launch(event)
            return HookReply(202, {"outcome": "pending", "reason": "launch_not_announced"})
        if effects.outcome == "rejected":
            status = _HTTP_STATUS_BY_REASON.get(effects.reason, 409)
            return HookReply(status, {"outcome": "rejected", "reason": effects.reason})
        return HookReply(200, {"outcome": effects.outcome})

    def _wait_for_launch(self, event: StatusEvent) -> None:
        now = time.monotonic()
        self._expire(now)
        if len(self._unannounced) >= PENDING_LAUNCH_MAX:
            self._unannounced.popleft()
        self._unannounced.append((now, event))

    def _expire(self, now: float) -> None:
        while self._unannounced and now - self._unannounced[0][0] > PENDING_LAUNCH_S:
            self._unannounced.popleft()

    def launches_announced(self) -> None:
        """ptyd announced launches (``restart_pane``, its truth): the hooks that waited
        for theirs are applied now, in arrival order, each as old as it is."""
        now = time.monotonic()
        self._expire(now)
        waiting, self._unannounced = self._unannounced, deque()
        for arrived, event in waiting:
            aged = replace(
                event, evidence_age_ms=event.evidence_age_ms + int((now - arrived) * 1000)
            )
            effects = self.apply(aged)
            if effects.reason == "launch_token_mismatch":
                self._unannounced.append((arrived, event))  # not this launch: still waits

    def retire_pane(self, pane_key: str, retire_id: str | None) -> TableEffects:
        return self.carry_out(self.table.retire_pane(pane_key, retire_id, self._clock_ms()))

    def retire_from_store(self, host_id: str, tab_id: str, leaf_id: str) -> TableEffects:
        return self.carry_out(
            self.table.retire_from_store(host_id, tab_id, leaf_id, self._clock_ms())
        )

    def restart_pane(
        self,
        pane_key: str,
        launch_token_sha256: str | None,
        worktree_id: str,
        terminal_handle: str | None = None,
    ) -> bool:
        lifted = self.table.restart_pane(pane_key, launch_token_sha256, worktree_id)
        if lifted:
            self._schedule_save()  # the fence list on disk shrank
        self.carry_out(self.table.replace_agent(pane_key, terminal_handle, launch_token_sha256))
        self.launches_announced()
        return lifted

    def pty_exited(
        self, pane_key: str, terminal_handle: str, exit_code: int | None
    ) -> TableEffects:
        return self.carry_out(
            self.table.pty_exited(pane_key, terminal_handle, exit_code, self._clock_ms())
        )

    def reconcile_ptys(
        self, running: list[LivePty], ended: list[EndedPty]
    ) -> tuple[TableEffects, PtyVerdicts]:
        effects, verdicts = self.table.reconcile_ptys(running, ended, self._clock_ms())
        self.carry_out(effects)
        self.launches_announced()
        return effects, verdicts

    def pane_input(self, pane_key: str, evidence_age_ms: int = 0) -> TableEffects:
        effects = self.carry_out(self.table.pane_input(pane_key, self._clock_ms(), evidence_age_ms))
        if self.on_answered is not None:
            for event in effects.events:
                if isinstance(event, StatusSet):
                    self.on_answered(event.row.pane_key, event.row.rev, event.row.agent)
        return effects

    def pane_idle(self, pane_key: str, rev: int, detail: str) -> TableEffects:
        return self.carry_out(self.table.pane_idle(pane_key, rev, detail, self._clock_ms()))

    def pane_asking(self, pane_key: str, rev: int, detail: str) -> TableEffects:
        return self.carry_out(self.table.pane_asking(pane_key, rev, detail, self._clock_ms()))

    def ack(self, pane_key: str | None) -> TableEffects:
        return self.carry_out(self.table.ack(pane_key))

    def drop_worktree(self, worktree_id: str, reason: str) -> TableEffects:
        return self.carry_out(self.table.drop_worktree(worktree_id, reason, self._clock_ms()))

    def rekey_worktree(self, old: str, new: str) -> TableEffects:
        return self.carry_out(self.table.rekey_worktree(old, new))

    def clear_pane(self, pane_key: str, reason: str) -> TableEffects:
        return self.carry_out(self.table.clear_pane(pane_key, reason, self._clock_ms()))

    def alias_pane(self, alias: str, canonical: str) -> TableEffects:
        return self.carry_out(self.table.alias_pane(alias, canonical))

    def snapshot_rows(self) -> list[AgentStatusRow]:
        return self.table.rows()
