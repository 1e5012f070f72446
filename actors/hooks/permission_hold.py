"""Holding an agent's PermissionRequest hook until the first answer (thin, trio).

One held request is one open HTTP request of the hook endpoint
(:mod:`actors.hooks.http`): :meth:`PermissionHolds.hold` is called with the framed
submission once its secret and pane identity passed, and returns the reply the agent
reads. It

1. files the payload as a status write like any hook (the row goes ``blocked``); a write
   the pane's authority refuses is answered with its 4xx and nothing is held;
2. opens a request in the :class:`~actors.hooks.permission_desk.PermissionDesk` and
   publishes ``permission.requested``;
3. waits for whichever comes first: a verdict (``permission.answer``), the pane's
   prompt answered in the agent's own terminal (its row leaves ``blocked``:
   :meth:`observe` sees every status event hooks publishes), the hook's connection
   closing (the agent gave up on it), or the hold's end (no verdict: the agent's own
   prompt decides);
4. settles the request once (the desk's invariant), publishes ``permission.settled``,
   and answers the agent (``permission_http.hook_output``).

A verdict also files the prompt as answered (the row returns to ``working`` at once,
as keys typed into the pane would), so every reader sees the agent go on before its
next hook arrives.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio

from actors.hooks.http_request import HookReply, HookSubmission
from actors.hooks.permission_desk import DeskFull, PermissionDesk
from actors.hooks.permission_http import HOOK_EVENT, NO_DECISION, hook_output
from actors.hooks.service import HooksService, wall_clock_ms
from orca.contracts import hooks
from orca.contracts.hooks import PermissionOutcome, PermissionSettled, StatusEventData
from orca.wire.errors import NotFound

log = logging.getLogger(__name__)

EmitFn = Callable[[hooks.PermissionEventData], object]
# Status replies that mean "not your pane": nothing is held for such a caller.
_REFUSED_STATUSES = frozenset({400, 403})


class PermissionHolds:
    """The held requests of one hooks incarnation (in memory: a restart drops them)."""

    def __init__(
        self,
        desk: PermissionDesk,
        service: HooksService,
        emit: EmitFn,
        clock_ms: Callable[[], int] = wall_clock_ms,
    ) -> None:
        self.desk = desk
        self._service = service
        self._emit = emit
        self._clock_ms = clock_ms
        self._settled_now: dict[str, trio.Event] = {}
        # pane -> (the row's rev, the tool asked for): the held request the pane's row
        # leaving ``blocked`` at that rev released, answered in the agent's terminal.
        self._released: dict[str, tuple[int, str]] = {}

    # -- ops ----------------------------------------------------------------------------
    def snapshot(self, epoch: str, seq: int) -> hooks.PermissionSnapshot:
        return hooks.PermissionSnapshot(
            epoch=epoch, seq=seq, pending=self.desk.pending(), settled=self.desk.settled()
        )

    def answer(self, args: hooks.AnswerPermissionArgs) -> hooks.PermissionAnswered:
        answered = self.desk.answer(
            args.request_id, args.behavior, args.by or "unnamed", args.message, self._clock_ms()
        )
        if answered is None:
            raise NotFound(f"no permission request {args.request_id!r} (settled long ago?)")
        self._carry_out(answered.events)
        if answered.outcome == "decided":
            # The prompt is answered: the row goes on at once (the agent's next hook
            # confirms it), as keys typed into the pane would have it.
            self._service.pane_input(answered.settlement.pane_key)
            log.info(
                "permission %s for %s: %s by %s",
                args.request_id,
                answered.settlement.pane_key,
                answered.settlement.outcome,
                answered.settlement.by,
            )
        return hooks.PermissionAnswered(outcome=answered.outcome, settlement=answered.settlement)

    # -- the status events hooks publishes ------------------------------------------------
    def observe(self, event: StatusEventData) -> None:
        """Every status event, as published: a row that left ``blocked`` had its prompt
        answered elsewhere (the agent's terminal); a cleared row's pane is gone."""
        if isinstance(event, hooks.StatusSet):
            if event.row.state != "blocked":
                tool = self._settle_pane(event.row.pane_key, "answered_elsewhere", "terminal")
                if tool is not None:
                    self._released[event.row.pane_key] = (event.row.rev, tool)
        elif isinstance(event, hooks.StatusCleared):
            self._released.pop(event.pane_key, None)
            self._settle_pane(event.pane_key, "withdrawn", event.reason)

    def released_in_terminal(self, pane_key: str, rev: int) -> str | None:
        """The tool of the held request that the pane's row leaving ``blocked`` at
        ``rev`` released (answered in the agent's terminal), else None. Asked once."""
        released = self._released.pop(pane_key, None)
        return released[1] if released is not None and released[0] == rev else None

    def _settle_pane(self, pane_key: str, outcome: PermissionOutcome, by: str) -> str | None:
        """Settle the pane's pending requests; the tool the first asked for, if any."""
        pending = [r for r in self.desk.pending() if r.pane_key == pane_key]
        if not pending:
            return None
        self._carry_out(self.desk.settle_pane(pane_key, outcome, by, self._clock_ms()))
        return pending[0].tool_name

    def _carry_out(self, events: tuple[PermissionSettled, ...] | list[PermissionSettled]) -> None:
        for event in events:
            self._emit(event)
            waiter = self._settled_now.pop(event.settlement.request_id, None)
            if waiter is not None:
                waiter.set()

    # -- the held request ------------------------------------------------------------------
    async def hold(
        self,
        submission: HookSubmission,
        hold_s: float,
        client_gone: Callable[[], Awaitable[None]],
    ) -> HookReply:
        filed = self._service.ingest_hook(submission)
        if filed.status in _REFUSED_STATUSES:
            return HookReply(filed.status, filed.body)
        if submission.payload.get("hook_event_name") != HOOK_EVENT:
            return HookReply(200, NO_DECISION)  # a status event posted here: filed, not held
        try:
            request, opened = self.desk.open(
                pane_key=submission.pane_key,
                worktree_id=submission.worktree_id,
                agent=submission.agent,
                payload=submission.payload,
                now_ms=self._clock_ms(),
                hold_ms=int(hold_s * 1000),
            )
        except DeskFull as exc:
            log.warning("not holding a permission request of %s: %s", submission.pane_key, exc)
            return HookReply(200, NO_DECISION)
        settled = trio.Event()
        self._settled_now[request.request_id] = settled
        self._emit(opened)
        gone = False
        try:
            with trio.move_on_after(hold_s):
                async with trio.open_nursery() as nursery:

                    async def watch_client() -> None:
                        nonlocal gone
                        await client_gone()
                        gone = True
                        nursery.cancel_scope.cancel()

                    nursery.start_soon(watch_client)
                    await settled.wait()
                    nursery.cancel_scope.cancel()
        finally:
            self._settled_now.pop(request.request_id, None)
            if self.desk.settlement(request.request_id) is None:
                # No verdict: the hold ended, the agent went away, or we are stopping.
                outcome: PermissionOutcome = "withdrawn" if gone else "timeout"
                ended = self.desk.settle(request.request_id, outcome, outcome, "", self._clock_ms())
                if ended is not None:
                    self._carry_out([ended])
        return HookReply(200, hook_output(self.desk.settlement(request.request_id)))
