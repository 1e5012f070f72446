"""One task's way from nothing to a prompted agent, through the spawn commit fence.

Each step that acts on another actor goes: write the *intent* (durable) → act → write
the *result* with the task's new phase (one transaction). A step whose intent is on
disk without a result (orch was killed in between, or the peer did not answer) is
*resolved by looking* before anything is done again (seed 02 §13, rule 02-53):

* worktree: gitwatch's listing of the repo has a worktree of the task's name (unique
  per run and variant) → adopt it; else create it (a ``conflict`` from a create whose
  earlier reply was lost is looked up the same way);
* terminal: ptyd has a session under the task's pane key (fixed before the first
  spawn) → adopt it; else spawn (the spawn carries the intent's key as its idempotency
  key, so a ptyd that already ran it answers with the same session);
* prompt: hooks shows the agent began a turn after the intent → it was typed; else
  wait up to :data:`PROMPT_EVIDENCE_S` for such a turn, then type it again (each write
  keeps its idempotency key: a ptyd that saw it does not write it twice). The body is
  written down as typed (:data:`SUBMIT_STEP`) before the submit key is sent: a resumed
  prompt whose body was typed sends only the key, so the agent never reads the prompt
  twice on one line; and a stop waits for body, record, key and result together.

So a spawn that committed before its reply is never repeated, and one that never
happened is done: no task runs twice and none is lost.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from typing import TYPE_CHECKING

import trio

from actors.orch import core
from actors.orch.core import Step
from actors.orch.faults import crash_point, stop_point
from actors.orch.ledger import Dispatch, TaskRow, dispatch_key, now_ms
from orca.contracts import gitwatch, ptyd, store
from orca.model.codec import to_builtins
from orca.model.worktree import WorktreeMeta
from orca.wire.errors import BadRequest, Conflict, NotFound, OrcaError, Unavailable

if TYPE_CHECKING:
    from actors.orch.actor import Orch

log = logging.getLogger(__name__)

# How long a resumed prompt intent waits for hooks' evidence that the agent took it
# before typing it again (an agent reports its turn within a second of the prompt).
PROMPT_EVIDENCE_S = 5.0
# A peer that is down is asked again after this (doubled per failure up to the cap).
RETRY_S = 0.2
RETRY_MAX_S = 3.0
# A step that keeps failing for this long (a peer down for good, git refusing) fails
# the task with the last error rather than leaving it `starting` for ever.
GIVE_UP_AFTER_S = float(os.environ.get("ORCA_ORCH_GIVE_UP_AFTER_S", "600"))
# Creating a worktree may run the repo's setup script (as `orca worktree new` does).
CREATE_TIMEOUT_S = 300.0
SPAWN_TIMEOUT_S = 15.0
# Between the prompt and its submit key: an agent's input handling sees two inputs.
SUBMIT_GAP_S = 0.05
# The intent written down between the prompt's body and its submit key (a marker, never
# settled): the body is in the agent's input line, so a resumed prompt sends only the key.
SUBMIT_STEP = "submit"
TERMINAL_SIZE = (120, 40)


class StepFailed(Exception):
    """A step that cannot succeed (a bad name, the agent's program not installed)."""


class Driver:
    def __init__(self, orch: Orch, run_id: str, variant: str) -> None:
        self.orch = orch
        self.run_id = run_id
        self.variant = variant

    async def task(self) -> TaskRow:
        found = await self.orch.db(lambda db: db.task(self.run_id, self.variant))
        if found is None:
            raise StepFailed("the task is gone")
        return found

    async def run(self) -> None:
        """Drive the task until it needs nothing more (watched, failed, archived)."""
        delay = RETRY_S
        failing_since: float | None = None
        while True:
            task = await self.task()
            step = core.next_step(
                task.phase,
                failed=bool(task.failed),
                archived=bool(task.archived),
                removed=bool(task.removed),
            )
            if step is Step.STOP:
                return
            try:
                if step is Step.CREATE_WORKTREE:
                    await self.create_worktree(task)
                elif step is Step.SPAWN_TERMINAL:
                    await self.spawn_terminal(task)
                elif step is Step.DELIVER_PROMPT:
                    await self.deliver_prompt(task)
                else:
                    await self.orch.watch(task)
                    return
                delay = RETRY_S
                failing_since = None
            except StepFailed as exc:
                log.warning("%s/%s: %s failed: %s", self.run_id, self.variant, step.value, exc)
                await self.orch.change(self.run_id, self.variant, failed=f"{step.value}: {exc}")
                return
            except OrcaError as exc:  # a peer down or slow: try again, resolving first
                log.info("%s/%s: %s: %s; retrying", self.run_id, self.variant, step.value, exc)
                now = time.monotonic()
                failing_since = now if failing_since is None else failing_since
                if now - failing_since > GIVE_UP_AFTER_S:
                    await self.orch.change(
                        self.run_id, self.variant, failed=f"{step.value}: {exc.message}"
                    )
                    return
                await trio.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_S)

    async def intent(self, step: str) -> Dispatch:
        return await self.orch.db(lambda db: db.write_intent(self.run_id, self.variant, step))

    async def prompt_was_taken(self, d: Dispatch, task: TaskRow) -> bool:
        """An intent to type the prompt was written before a crash: did the agent get it?
        Evidence is hooks' row (a turn begun after the intent), waited for a while."""
        orch = self.orch
        with trio.move_on_after(PROMPT_EVIDENCE_S):
            await orch.beacon.wait_until(
                lambda: core.prompt_taken(orch.status_row(task.pane_key), d.intent_ms),
                key=task.pane_key,
            )
        if not core.prompt_taken(orch.status_row(task.pane_key), d.intent_ms):
            return False
        log.info("%s: the agent took the prompt before the crash", d.key)
        await self.settle(d, "adopted", {}, phase="prompted", prompted_ms=d.intent_ms)
        return True

    async def settle(
        self, d: Dispatch, outcome: str, result: dict[str, object], **cols: object
    ) -> None:
        revision = await self.orch.db(lambda db: db.settle(d.key, outcome, result, dict(cols)))
        self.orch.emit_changed(self.run_id, revision)

    # -- worktree ------------------------------------------------------------------------
    async def create_worktree(self, task: TaskRow) -> None:
        run = await self.orch.run_row(self.run_id)
        d = await self.intent("worktree")
        if d.attempts > 1 and await self.adopt_worktree(d, run.repo_id, task.worktree_name):
            return
        args = gitwatch.CreateArgs(
            repo_id=run.repo_id,
            name=task.worktree_name,
            base=run.base or None,
            source="orch",
            request_id=d.key.replace("/", "-"),
        )
        async with self.orch.create_slots:
            try:
                created = await self.orch.gitwatch.invoke(
                    gitwatch.WORKTREE_CREATE, args, timeout=CREATE_TIMEOUT_S
                )
            except Conflict as exc:  # an earlier create made it (its reply lost)?
                if await self.adopt_worktree(d, run.repo_id, task.worktree_name):
                    return
                raise StepFailed(exc.message) from exc
            except (BadRequest, NotFound) as exc:
                raise StepFailed(exc.message) from exc
            except Unavailable:
                if await self.adopt_worktree(d, run.repo_id, task.worktree_name):
                    return
                raise
        crash_point("worktree", self.orch.directory)
        await self.settle(
            d, "done", {"worktreeId": created.worktree_id, "path": created.path},
            phase="worktree", worktree_id=created.worktree_id, worktree_path=created.path,
            branch=created.branch,
        )  # fmt: skip

    async def adopt_worktree(self, d: Dispatch, repo_id: str, name: str) -> bool:
        listing = await self.orch.gitwatch.invoke(
            gitwatch.WORKTREE_LIST, gitwatch.ListArgs(repo_id=repo_id)
        )
        for row in listing.worktrees:
            if row.path.rstrip("/").rsplit("/", 1)[-1] == name:
                log.info("%s: adopting worktree %s (created before a crash)", d.key, row.path)
                await self.ensure_meta(row.id)
                await self.settle(
                    d, "adopted", {"worktreeId": row.id, "path": row.path},
                    phase="worktree", worktree_id=row.id, worktree_path=row.path,
                    branch=row.branch or "",
                )  # fmt: skip
                return True
        return False

    async def ensure_meta(self, worktree_id: str) -> None:
        """gitwatch writes a worktree's creation evidence to the store after ``git
        worktree add``; a crash in between leaves a worktree Orca did make but does not
        list as its own. The adopter writes the evidence then (one replace, only when
        the store has none)."""
        try:
            await self.orch.store.invoke(
                store.WORKTREE_META_GET, store.WorktreeIdArgs(worktree_id=worktree_id)
            )
            return
        except NotFound:
            pass
        now = now_ms()
        meta = WorktreeMeta(
            instance_id=str(uuid.uuid4()), created_at=now, last_activity_at=now,
            orca_created_at=now, orca_creation_source="orch",
        )  # fmt: skip
        log.info("%s: writing the creation evidence a crash left out", worktree_id)
        await self.orch.store.invoke(
            store.WORKTREE_META_SET,
            store.MetaSetArgs(worktree_id=worktree_id, meta=to_builtins(meta)),
        )

    # -- terminal ------------------------------------------------------------------------
    async def spawn_terminal(self, task: TaskRow) -> None:
        d = await self.intent("terminal")
        if d.attempts > 1 and await self.adopt_terminal(d, task):
            return
        cols, rows = TERMINAL_SIZE
        args = ptyd.SpawnArgs(
            argv=list(core.AGENT_COMMANDS[task.agent]),
            cwd=task.worktree_path,
            worktree_id=task.worktree_id,
            pane_key=task.pane_key,
            cols=cols,
            rows=rows,
            user_env=self.orch.run_envs.get(task.run_id),
        )
        try:
            spawned = await self.orch.ptyd.invoke(
                ptyd.SPAWN, args, timeout=SPAWN_TIMEOUT_S, idem=d.key
            )
        except BadRequest as exc:
            raise StepFailed(exc.message) from exc
        except Unavailable:
            if await self.adopt_terminal(d, task):
                return
            raise
        crash_point("terminal", self.orch.directory)
        await self.settle(
            d, "done", {"sessionId": spawned.session_id, "pid": spawned.pid},
            phase="terminal", session_id=spawned.session_id,
            launch_sha=spawned.launch_token_sha256, pid=spawned.pid, spawned_ms=now_ms(),
        )  # fmt: skip

    async def adopt_terminal(self, d: Dispatch, task: TaskRow) -> bool:
        listing = await self.orch.ptyd.invoke(
            ptyd.LIST, ptyd.ListArgs(worktree_id=task.worktree_id)
        )
        for row in listing.sessions:
            if row.pane_key == task.pane_key and not row.archived:
                log.info("%s: adopting terminal %s (spawned before a crash)", d.key, row.session_id)
                await self.settle(
                    d, "adopted", {"sessionId": row.session_id, "pid": row.pid},
                    phase="terminal", session_id=row.session_id, pid=row.pid,
                    spawned_ms=int(row.created_at * 1000),
                )  # fmt: skip
                return True
        return False

    # -- prompt --------------------------------------------------------------------------
    async def deliver_prompt(self, task: TaskRow) -> None:
        orch = self.orch
        key = dispatch_key(self.run_id, self.variant, "prompt")
        earlier = await orch.db(lambda db: db.dispatch(key))
        if earlier is not None and await self.prompt_was_taken(earlier, task):
            return
        await orch.beacon.wait_until(
            lambda: (
                core.is_ready(orch.status_row(task.pane_key))
                or orch.terminal_running(task.pane_key) is False
            ),
            key=task.pane_key,
        )
        if orch.terminal_running(task.pane_key) is False:
            raise StepFailed("the agent's terminal ended before it was ready")
        run = await orch.run_row(self.run_id)
        body, submit = core.prompt_input(task.agent, run.prompt)
        typed_key = dispatch_key(self.run_id, self.variant, SUBMIT_STEP)
        # From the intent to the result, a stop (`orca down`) waits: stopped after the
        # body and before its record, the restarted orch would type the body again. No
        # deadline of our own either: each call is bounded by its RPC timeout, and one
        # here would end the pair without its key and still record the prompt as typed.
        async with orch.typing():
            d = await self.intent("prompt")
            typed = (
                earlier is not None and await orch.db(lambda db: db.dispatch(typed_key)) is not None
            )
            try:
                if not typed:
                    stop_point("prompt-body", self.orch.directory)
                    write = ptyd.WriteArgs(session_id=task.session_id, text=body)
                    await orch.ptyd.invoke(ptyd.WRITE, write, idem=f"{d.key}/body")
                    # the body is in the agent's input line: a retry only submits it
                    await self.intent(SUBMIT_STEP)
                    crash_point("prompt-body", self.orch.directory)
                else:
                    log.info("%s: the prompt was typed before a crash; submitting it", d.key)
                await trio.sleep(SUBMIT_GAP_S)
                submit_args = ptyd.WriteArgs(session_id=task.session_id, text=submit)
                await orch.ptyd.invoke(ptyd.WRITE, submit_args, idem=f"{d.key}/submit")
            except (NotFound, Conflict) as exc:
                raise StepFailed(f"the terminal is gone: {exc.message}") from exc
            crash_point("prompt", self.orch.directory)
            # the intent's time, not now: a quick agent's turn may be reported (and its
            # row stamped) before the writes return, and must not look older than its prompt
            await self.settle(d, "done", {}, phase="prompted", prompted_ms=d.intent_ms)
        orch.stats.delivered += 1
        orch.stats.last_delivery_s = time.monotonic()
