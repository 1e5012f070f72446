"""Automations in orch: the definitions' ops, the scheduler, the automation fence (trio).

orch owns the schedule (docs/architecture.md "Automations"): it is the process that
starts runs, and a firing is a run. The definitions and the record of every firing are
kept by the store (``automations``, ``automationRuns`` in orca-data.json); orch is the
only process that writes them, so the copy it holds in memory is the store's, updated
by the replies of its own writes.

The automation fence, like the spawn fence (``actors/orch/ledger.py``):

1. *intent*: ``automationRun.begin`` records ``<automationId>@<scheduledFor>`` with
   status ``starting``; the store replies once that is fsync'd. A record already there
   means the due time fired (or is being resolved): nothing new is started for it.
2. *act*: ``run.create`` under the key ``auto:<automationRunId>``, in this process; the
   key is UNIQUE in ``orch.sqlite3``, so a second act finds the first run.
3. *result*: ``automationRun.settle`` with ``started`` and the run's id, or ``skipped``
   (the previous run still works, no ``overlap``), or ``failed`` and why.

A ``starting`` record found at start (orch or orcad killed between 1 and 3) is
resolved by looking: the run made under its key, if any, is its result; otherwise the
act is made now. So a due time fires once: never twice (the record's id, the run's
key), never zero times (an intent is always carried to its result, and a due time
whose intent was never acknowledged is still due at the next start: catch-up).

No polling: the scheduler sleeps until the earliest next due time, or until a
definition changes (``self.wake``), or at most :data:`MAX_SLEEP_S` (the wall clock may
jump: a suspended laptop, NTP; trio's clock does not count a suspend).
"""

from __future__ import annotations

import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from actors.orch import core, schedule
from actors.orch.faults import crash_point
from actors.orch.ledger import Ledger, RunRow, TaskRow
from actors.orch.views import run_summary
from orca.contracts import orch as contract
from orca.contracts import store
from orca.contracts.base import NoArgs, Op
from orca.model.automations import (
    Automation,
    AutomationAgent,
    AutomationOutput,
    AutomationRun,
    AutomationSchedule,
    AutomationTarget,
    automation_run_id,
)
from orca.model.codec import to_builtins
from orca.views.handles import resolve_repo
from orca.wire.errors import BadRequest, Conflict, NotFound, OrcaError

if TYPE_CHECKING:
    from actors.orch.actor import Orch

log = logging.getLogger(__name__)

# The longest sleep between two looks at the wall clock (see the module docstring).
MAX_SLEEP_S = 300.0
# After a failed step (the store down or restarting), the next try.
RETRY_S = 1.0
KEY_PREFIX = "auto:"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Automations:
    def __init__(self, orch: Orch) -> None:
        self.orch = orch
        self.store = orch.store
        self.automations: dict[str, Automation] = {}
        self.runs: dict[str, AutomationRun] = {}
        self.loaded = trio.Event()
        self.wake = trio.Event()
        self.firing = trio.Lock()  # one firing at a time: the overlap rule reads the last
        # A step failed (a reply lost): the store may hold an intent this copy lacks.
        self.stale = False

    # -- the store's copy ------------------------------------------------------------------
    async def load(self) -> None:
        while True:
            try:
                listed = await self.store.invoke(store.AUTOMATION_LIST, timeout=5.0)
                break
            except OrcaError as exc:
                log.info("automations: the store does not answer yet (%s)", exc)
                await trio.sleep(RETRY_S)
        self.automations = {a.id: a for a in listed.automations}
        self.runs = {r.id: r for r in listed.automation_runs}
        self.loaded.set()

    def remember(self, run: AutomationRun) -> None:
        self.runs[run.id] = run

    def runs_of(self, automation_id: str) -> list[AutomationRun]:
        mine = [r for r in self.runs.values() if r.automation_id == automation_id]
        return sorted(mine, key=lambda r: (r.started_at, r.scheduled_for), reverse=True)

    def find(self, ref: str) -> Automation:
        if ref in self.automations:
            return self.automations[ref]
        named = [a for a in self.automations.values() if a.name == ref]
        if not named:
            raise NotFound(f"no automation {ref!r} (see `orca auto ls`)")
        return named[0]

    async def put(self, automation: Automation) -> Automation:
        stored = await self.store.invoke(
            store.AUTOMATION_PUT, store.AutomationPutArgs(automation=to_builtins(automation))
        )
        self.automations[stored.id] = stored
        self.orch.ctx.events.emit(contract.AutoChanged(id=stored.id))
        self.wake.set()
        return stored

    def due(
        self, automation: Automation, runs: list[AutomationRun]
    ) -> tuple[schedule.Slot | None, int | None]:
        """``schedule.due_slot``; a schedule that does not compute (a hand-edited file)
        is never due, and said so in the log, never an exception out of the scheduler."""
        try:
            schedule.check_schedule(automation.schedule)
        except BadRequest as exc:
            log.warning("automation %s is never due: %s", automation.name, exc.message)
            return None, None
        last = schedule.last_fired(runs, automation.id)
        return schedule.due_slot(automation, last, now_ms())

    def info(self, automation: Automation, *, with_runs: bool = False) -> contract.AutomationInfo:
        runs = self.runs_of(automation.id)
        _, following = self.due(automation, runs)
        return contract.AutomationInfo(
            automation=automation,
            next_due_ms=following,
            last_run=runs[0] if runs else None,
            runs=runs if with_runs else [],
        )

    # -- ops -------------------------------------------------------------------------------
    async def add(self, args: contract.AutoAddArgs) -> contract.AutomationInfo:
        await self.loaded.wait()
        if not args.prompt.strip():
            raise BadRequest("the prompt is empty")
        if (args.cron is None) == (args.every_seconds is None):
            raise BadRequest("give one schedule: a cron expression or an interval")
        if args.cron is not None:
            sched = AutomationSchedule(kind="cron", cron=args.cron.strip(), tz=args.tz)
        else:
            sched = AutomationSchedule(kind="every", every_seconds=args.every_seconds or 0)
        schedule.check_schedule(sched)
        core.plan_variants(args.agents)  # the agents' rules, as run.create applies them
        if any(a.name == args.name for a in self.automations.values()):
            raise Conflict(f"an automation is already named {args.name!r} (`orca auto ls`)")
        listing = await self.store.invoke(store.REPO_LIST)
        repo = resolve_repo(listing.repos, args.repo)
        now = now_ms()
        automation = Automation(
            id="a" + secrets.token_hex(4), name=args.name,
            target=AutomationTarget(repo_id=repo.id, repo_label=repo.display_name,
                                    base=args.base or ""),
            prompt=args.prompt,
            agents=tuple(AutomationAgent(agent=a.agent, count=a.count) for a in args.agents),
            schedule=sched, check=args.check or "", overlap=args.overlap,
            created_at=now, updated_at=now, active_since=now,
        )  # fmt: skip
        return self.info(await self.put(automation))

    async def list_all(self, _: NoArgs) -> contract.AutoList:
        await self.loaded.wait()
        ordered = sorted(self.automations.values(), key=lambda a: (a.name, a.id))
        return contract.AutoList(automations=[self.info(a) for a in ordered])

    async def show(self, args: contract.AutoArgs) -> contract.AutomationInfo:
        await self.loaded.wait()
        info = self.info(self.find(args.automation), with_runs=True)
        started = [r.output.run_id for r in info.runs if r.output is not None]

        def summaries(db: Ledger) -> list[contract.RunSummary]:
            found = [(run, db.tasks(run.id)) for ref in started if (run := db.run(ref))]
            return [run_summary(r, ts, self.orch.rows, self.orch.sessions) for r, ts in found]

        return msgspec.structs.replace(info, run_summaries=await self.orch.db(summaries))

    async def remove(self, args: contract.AutoArgs) -> contract.AutoRemoved:
        await self.loaded.wait()
        automation = self.find(args.automation)
        async with self.firing:
            await self.store.invoke(store.AUTOMATION_REMOVE, store.IdArgs(id=automation.id))
            self.automations.pop(automation.id, None)
            for run in self.runs_of(automation.id):
                self.runs.pop(run.id, None)
        self.orch.ctx.events.emit(contract.AutoChanged(id=automation.id))
        self.wake.set()
        return contract.AutoRemoved(id=automation.id)

    async def pause(self, args: contract.AutoArgs) -> contract.AutomationInfo:
        await self.loaded.wait()
        current = self.find(args.automation)
        if not current.enabled:
            return self.info(current)
        changed = msgspec.structs.replace(current, enabled=False, updated_at=now_ms())
        return self.info(await self.put(changed))

    async def resume(self, args: contract.AutoArgs) -> contract.AutomationInfo:
        await self.loaded.wait()
        current = self.find(args.automation)
        if current.enabled:
            return self.info(current)
        now = now_ms()
        changed = msgspec.structs.replace(current, enabled=True, updated_at=now, active_since=now)
        return self.info(await self.put(changed))

    async def run_now(self, args: contract.AutoArgs) -> AutomationRun:
        await self.loaded.wait()
        automation = self.find(args.automation)
        now = now_ms()
        slot = schedule.Slot(now, "manual", 0)
        async with self.firing:
            return await self.fire(automation, slot, run_id=f"{automation.id}@manual-{now}")

    def handlers(self) -> list[tuple[Op[Any, Any], Callable[[Any], Awaitable[Any]]]]:
        return [
            (contract.AUTO_ADD, self.add),
            (contract.AUTO_LIST, self.list_all),
            (contract.AUTO_SHOW, self.show),
            (contract.AUTO_REMOVE, self.remove),
            (contract.AUTO_PAUSE, self.pause),
            (contract.AUTO_RESUME, self.resume),
            (contract.AUTO_RUN_NOW, self.run_now),
        ]

    # -- the fence -------------------------------------------------------------------------
    async def fire(
        self, automation: Automation, slot: schedule.Slot, *, run_id: str | None = None
    ) -> AutomationRun:
        """Intent, act, result for one due time (or one run-now)."""
        intent = AutomationRun(
            id=run_id or automation_run_id(automation.id, slot.scheduled_for),
            automation_id=automation.id, scheduled_for=slot.scheduled_for,
            trigger=slot.trigger, status="starting", started_at=now_ms(), missed=slot.missed,
        )  # fmt: skip
        begun = await self.store.invoke(
            store.AUTOMATION_RUN_BEGIN, store.AutomationRunBeginArgs(run=to_builtins(intent))
        )
        self.remember(begun.run)
        if not begun.created and begun.run.status != "starting":
            return begun.run  # this due time fired already
        if begun.created:
            log.info("automation %s: firing %s (%s)", automation.name, intent.id, slot.trigger)
        crash_point("auto-intent", self.orch.directory)
        return await self.act(automation, begun.run)

    async def act(self, automation: Automation, record: AutomationRun) -> AutomationRun:
        key = KEY_PREFIX + record.id
        made = await self.orch.db(lambda db: db.run_by_key(key))
        if made is not None:  # acted before a crash: that run is the result
            return await self.settle(automation, record, "started", made.id, made.name)
        if not automation.overlap:
            busy = await self.working_run(automation.id, record.id)
            if busy is not None:
                why = f"the previous run {busy} is still working (add --overlap to allow)"
                return await self.settle(automation, record, "skipped", error=why)
        try:
            await self.check_target(automation)
            info = await self.orch.create(
                contract.CreateArgs(
                    repo=automation.target.repo_id,
                    prompt=automation.prompt,
                    agents=[
                        contract.AgentCount(agent=a.agent, count=a.count) for a in automation.agents
                    ],
                    base=automation.target.base or None,
                    check=automation.check or None,
                    name=automation.name,
                    key=key,
                )
            )
        except (BadRequest, NotFound) as exc:  # cannot start: recorded, never retried
            return await self.settle(automation, record, "failed", error=exc.message)
        crash_point("auto-act", self.orch.directory)
        return await self.settle(automation, record, "started", info.run, info.name)

    async def check_target(self, automation: Automation) -> None:
        listing = await self.store.invoke(store.REPO_LIST)
        try:
            repo = resolve_repo(listing.repos, automation.target.repo_id)
        except NotFound:
            label = automation.target.repo_label or automation.target.repo_id
            raise NotFound(f"the repo {label} is no longer added (`orca repo ls`)") from None
        if not await trio.to_thread.run_sync(os.path.isdir, repo.path):
            raise NotFound(f"the repo's folder {repo.path} is gone")

    async def working_run(self, automation_id: str, this: str) -> str | None:
        """The run of an earlier firing of this automation that still works, if any."""
        started = [
            r.output.run_id
            for r in self.runs_of(automation_id)
            if r.id != this and r.status == "started" and r.output is not None
        ]
        for run_id in started:

            def look(db: Ledger, ref: str = run_id) -> tuple[RunRow | None, list[TaskRow]]:
                found = db.run(ref)
                return found, db.tasks(ref) if found is not None else []

            run, tasks = await self.orch.db(look)
            if run is None or run.state != "active":
                continue
            summary = run_summary(run, tasks, self.orch.rows, self.orch.sessions)
            if schedule.still_working(summary.states):
                return run.id
        return None

    async def settle(
        self,
        automation: Automation,
        record: AutomationRun,
        status: str,
        run_id: str = "",
        run_name: str = "",
        *,
        error: str | None = None,
    ) -> AutomationRun:
        output = AutomationOutput(run_id=run_id, run_name=run_name) if run_id else None
        settled = await self.store.invoke(
            store.AUTOMATION_RUN_SETTLE,
            store.AutomationRunSettleArgs(
                id=record.id, status=status, finished_at=now_ms(), output=output, error=error
            ),
        )
        self.remember(settled)
        if status != "started":
            log.warning("automation %s: %s %s: %s", automation.name, record.id, status, error)
        self.orch.ctx.events.emit(contract.AutoFired(name=automation.name, run=settled))
        return settled

    # -- the scheduler ---------------------------------------------------------------------
    async def run(self) -> None:
        """Load, then fire what is due, sleep until the next due time; forever."""
        await self.load()
        # The overlap rule reads the runs' states: wait for hooks' and ptyd's tables.
        await self.orch.beacon.wait_until(lambda: self.orch.ptyd_loaded and self.orch.hooks_loaded)
        while True:
            wake = self.wake = trio.Event()
            try:
                if self.stale:
                    await self.load()
                    self.stale = False
                delay = await self.step()
            except OrcaError as exc:
                log.warning("automations: a step failed (%s); trying again", exc)
                self.stale = True
                delay = RETRY_S
            with trio.move_on_after(min(max(delay, 0.0), MAX_SLEEP_S)):
                await wake.wait()

    async def step(self) -> float:
        """Resolve every unsettled intent, fire every due time; seconds to the next."""
        async with self.firing:
            for record in [r for r in self.runs.values() if r.status == "starting"]:
                automation = self.automations.get(record.automation_id)
                if automation is not None:
                    await self.act(automation, record)
            next_due: int | None = None
            for automation in list(self.automations.values()):
                slot, following = self.due(automation, self.runs_of(automation.id))
                if slot is not None:
                    await self.fire(automation, slot)
                if following is not None:
                    next_due = following if next_due is None else min(next_due, following)
        if next_due is None:
            return MAX_SLEEP_S
        return (next_due - now_ms()) / 1000
