"""The orch actor shell: the database, the task drivers, the mirrors, the ops (trio).

Start-up: open (create, migrate) ``data/orch/orch.sqlite3``, register the ops, report
ready; then follow hooks (status rows, session bindings) and ptyd (sessions) with
mirrors, and start one :class:`~actors.orch.driver.Driver` per task that still has a
step to take, which first resolves any intent a crash left without a result.

Threads: every SQLite call runs on a worker thread, one at a time (``db_lock``).

Stop: a prompt being typed is finished (body, its record, submit key, result) before
the database closes, and no new one begins (:meth:`Orch.typing`): a stop between the
body and its record made the restarted orch type the body again.
"""

from __future__ import annotations

import logging
import os
import secrets
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import trio

from actors.orch import core
from actors.orch.automations import Automations
from actors.orch.checks import run_check
from actors.orch.driver import Driver
from actors.orch.faults import crash_point
from actors.orch.follow import (
    PTY_EVENTS,
    PTY_TOPICS,
    Beacon,
    PtySession,
    Sessions,
    apply_session_event,
    changed_keys,
    load_sessions,
    sessions_by_pane,
)
from actors.orch.ledger import AckPastEnd, Ledger, RunRow, TaskRow, new_task, now_ms
from actors.orch.schema import LedgerUnavailable, open_db
from actors.orch.views import Preview, Usage, run_info, run_summary
from orca.actor import ActorContext, Dormant, Mirror
from orca.actor.shared_mirrors import HOOKS_BINDINGS
from orca.contracts import gitwatch, gitwatch_core, hooks, ptyd, store, vault
from orca.contracts import orch as contract
from orca.contracts.base import NoArgs, Op
from orca.model.agent_status import AgentStatusRow
from orca.user_env import user_environment
from orca.views.handles import resolve_repo, session_handles
from orca.wire.errors import BadRequest, Conflict, NotFound, OrcaError, Unavailable

log = logging.getLogger(__name__)

ORCH_DIR = "orch"
# orcad's first start (`orca up`) may leave orch dormant: how long it asks the store,
# which starts beside it, whether an automation exists before staying up anyway.
SLEEP_CHECK_S = 10.0
R = TypeVar("R")
# Worktree creations at once (each is a git process and a setup script in gitwatch).
CREATE_SLOTS = 8
CHECK_SLOTS = 2
SHOW_TIMEOUT_S = 3.0
# How long run.remove waits for its ptyd mirror to be whole again (ptyd restarted, or
# events were lost) before answering unavailable; a restarted ptyd's table loads in
# about a second.
PTYD_CATCH_UP_S = 3.0


class Stats:
    def __init__(self) -> None:
        self.delivered = 0
        self.last_delivery_s = 0.0
        self.checks = 0


class Orch:
    def __init__(self, ctx: ActorContext, ledger: Ledger) -> None:
        self.ctx = ctx
        self.directory = ctx.paths.data_dir / ORCH_DIR
        self.ledger = ledger
        self.db_lock = trio.Lock()
        self.beacon = Beacon()
        self.create_slots = trio.Semaphore(CREATE_SLOTS)
        self.check_slots = trio.Semaphore(CHECK_SLOTS)
        self.stats = Stats()
        self.rows: dict[str, AgentStatusRow] = {}
        self.sessions: dict[str, PtySession] = {}  # by pane key
        self.hooks_loaded = False
        self.ptyd_loaded = False
        self.ptyd_mirror: Mirror[Sessions] | None = None
        self.gitwatch = ctx.connect("gitwatch")
        self.ptyd = ctx.connect("ptyd")
        self.store = ctx.connect("store")
        self.vault = ctx.connect("vault", timeout=2.0)
        self.driving: set[tuple[str, str]] = set()
        self.prompts_typing = 0
        self.stopping = False
        # Each run's agents start in the environment of the shell that asked for it
        # (``run.create``'s userEnv, issue 40). Kept in memory only, as tmux keeps a
        # session's: a variant spawned after a restart of orch gets the service's.
        self.run_envs: dict[str, dict[str, str]] = {}

    # -- stop ----------------------------------------------------------------------------
    @asynccontextmanager
    async def typing(self) -> AsyncIterator[None]:
        """Around one prompt's writes and records: a stop waits for it to end."""
        if self.stopping:
            raise Unavailable("orch is stopping")
        self.prompts_typing += 1
        try:
            yield
        finally:
            self.prompts_typing -= 1
            self.beacon.bump(())  # no pane changed: the waiters without one check again

    async def stop(self) -> None:
        """Let the prompts being typed end (the actor's stop deadline bounds the wait),
        then close the database."""
        self.stopping = True
        await self.beacon.wait_until(lambda: self.prompts_typing == 0)
        async with self.db_lock:
            self.ledger.close()

    # -- the database ---------------------------------------------------------------------
    async def db(self, work: Callable[[Ledger], R]) -> R:
        async with self.db_lock:
            try:
                return await trio.to_thread.run_sync(work, self.ledger)
            except sqlite3.Error as exc:
                raise Unavailable(f"the orchestration database failed: {exc}") from exc

    async def run_row(self, ref: str) -> RunRow:
        run = await self.db(lambda db: db.run(ref))
        if run is None:
            raise NotFound(f"no run {ref!r} (see `orca run ls`)")
        return run

    async def change(self, run_id: str, variant: str, **columns: Any) -> None:
        revision = await self.db(lambda db: db.update_task(run_id, variant, **columns))
        self.emit_changed(run_id, revision)

    def emit_changed(self, run_id: str, revision: int) -> None:
        if revision:
            self.ctx.events.emit(contract.RunChanged(run=run_id, revision=revision))

    # -- what is followed -------------------------------------------------------------------
    def status_row(self, pane_key: str) -> AgentStatusRow | None:
        return self.rows.get(pane_key)

    def terminal_running(self, pane_key: str) -> bool | None:
        """ptyd's word on the pane's terminal; None while ptyd's table is not loaded or
        has no such session (yet)."""
        session = self.sessions.get(pane_key)
        return None if session is None else session.running

    async def whole_sessions(self) -> list[PtySession]:
        """ptyd's sessions from a whole mirror (a bounded wait), else Unavailable: a copy
        being reloaded may lack a terminal that runs, and a worktree would be removed
        under it."""
        mirror = self.ptyd_mirror
        if mirror is not None:
            with trio.move_on_after(PTYD_CATCH_UP_S):
                await mirror.wait_whole()
        if mirror is None or mirror.state is None:
            raise Unavailable("ptyd's sessions are not known yet: cannot tell which are live")
        if not mirror.whole:
            raise Unavailable(
                "ptyd is catching up (reloading its sessions): cannot tell which are live"
            )
        return list(mirror.state.values())

    async def follow_hooks(self) -> None:
        mirror: Mirror[dict[str, AgentStatusRow]] = Mirror(
            client=self.ctx.connect("hooks"),
            pub_endpoint=self.ctx.paths.ipc_endpoint("hooks", "pub"),
            snapshot=hooks.SNAPSHOT,
            events=hooks.EVENTS,
            load=hooks.load_mirror,
            apply=hooks.apply_to_mirror,
            consumer="orch<-hooks",
            topics=[spec.type for spec in hooks.EVENTS],
        )

        async def take(state: dict[str, AgentStatusRow]) -> None:
            changed = changed_keys(self.rows, state)
            self.rows = state
            self.hooks_loaded = True
            self.beacon.bump(changed)

        await mirror.follow(take)

    async def follow_ptyd(self) -> None:
        mirror: Mirror[Sessions] = Mirror(
            client=self.ctx.connect("ptyd"),
            pub_endpoint=self.ctx.paths.ipc_endpoint("ptyd", "pub"),
            snapshot=ptyd.SNAPSHOT,
            events=PTY_EVENTS,
            load=load_sessions,
            apply=apply_session_event,
            consumer="orch<-ptyd",
            topics=PTY_TOPICS,
        )
        self.ptyd_mirror = mirror

        async def take(state: Sessions) -> None:
            by_pane = sessions_by_pane(state)
            changed = changed_keys(self.sessions, by_pane)
            self.sessions = by_pane
            self.ptyd_loaded = True
            self.beacon.bump(changed)

        await mirror.follow(take)

    async def follow_bindings(self) -> None:
        """Agent session ids seen in a variant's pane (its capability's second half)."""
        mirror: Mirror[dict[hooks.BindingKey, hooks.SessionBinding]] = self.ctx.mirror(
            HOOKS_BINDINGS, consumer="orch<-hooks-bindings"
        )
        seen: set[tuple[str, str]] = set()

        async def take(state: dict[hooks.BindingKey, hooks.SessionBinding]) -> None:
            fresh = {
                (b.pane_key, b.session_id)
                for b in state.values()
                if b.pane_key.startswith("orch-") and (b.pane_key, b.session_id) not in seen
            }
            for pane, session_id in sorted(fresh):

                def bind(db: Ledger, p: str = pane, s: str = session_id) -> bool:
                    return db.bind_session(p, s)

                await self.db(bind)
                seen.add((pane, session_id))

        await mirror.follow(take)

    # -- drivers ----------------------------------------------------------------------------
    def drive(self, run_id: str, variant: str) -> None:
        if (run_id, variant) in self.driving:
            return
        self.driving.add((run_id, variant))

        async def go() -> None:
            try:
                await Driver(self, run_id, variant).run()
            finally:
                self.driving.discard((run_id, variant))

        self.ctx.nursery.start_soon(go)

    async def resume(self) -> None:
        """Every task with a step left, once ptyd's and hooks' tables are loaded (the
        fence's look-ups need them)."""
        await self.beacon.wait_until(lambda: self.ptyd_loaded and self.hooks_loaded)
        runs = {r.id: r for r in await self.db(lambda db: db.runs())}
        for task in await self.db(lambda db: db.all_tasks()):
            run = runs.get(task.run_id)
            if run is not None and run.state != "removed":
                self.drive(task.run_id, task.variant)

    async def watch(self, task: TaskRow) -> None:
        """After the prompt: each time the agent goes idle after a turn, run the check."""
        pane = task.pane_key
        last_idle = [max(task.idle_ms or 0, task.prompted_ms or 0)]

        def idle_again() -> bool:
            row = self.rows.get(pane)
            return core.is_idle(row) and row is not None and row.state_since_ms > last_idle[0]

        while True:
            await self.beacon.wait_until(
                lambda: self.terminal_running(pane) is False or idle_again(), key=pane
            )
            row = self.rows.get(pane)
            if not (core.is_idle(row) and row is not None):
                if self.terminal_running(pane) is False:
                    return
                continue
            last_idle[0] = row.state_since_ms
            await self.change(task.run_id, task.variant, idle_ms=row.state_since_ms)
            current = await self.db(lambda db: db.task(task.run_id, task.variant))
            if current is None or current.archived or current.removed:
                return
            run = await self.run_row(task.run_id)
            if run.check_cmd:
                await self.check_variant(run, current)

    async def check_variant(self, run: RunRow, task: TaskRow) -> None:
        if not task.worktree_path:
            return
        async with self.check_slots:
            outcome = await run_check(run.check_cmd, task.worktree_path)
        self.stats.checks += 1
        await self.change(
            run.id, task.variant, check_exit=outcome.exit_code, check_tail=outcome.tail,
            check_ms=outcome.ran_at_ms, check_duration_ms=outcome.duration_ms,
        )  # fmt: skip

    # -- ops --------------------------------------------------------------------------------
    async def create(self, args: contract.CreateArgs) -> contract.RunInfo:
        if not args.prompt.strip():
            raise BadRequest("the prompt is empty")
        variants = core.plan_variants(args.agents)
        env = user_environment(os.environ if args.user_env is None else args.user_env)
        core.check_agent_commands({v.agent for v in variants}, env.get("PATH", os.defpath))
        listing = await self.store.invoke(store.REPO_LIST)
        repo = resolve_repo(listing.repos, args.repo)
        run_id = "r" + secrets.token_hex(3)
        name = core.slug(args.name) if args.name else run_id
        nonce = secrets.token_hex(8)
        run = RunRow(
            id=run_id, name=name, repo_id=repo.id, repo_label=repo.display_name,
            prompt=args.prompt, base=args.base or "", check_cmd=args.check or "",
            state="active", created_ms=now_ms(), revision=1, merged_variant="",
            merge_commit="", create_key=args.key,
        )  # fmt: skip
        tasks = [
            new_task(
                run_id,
                v.variant,
                v.agent,
                v.ordinal,
                core.worktree_name(name, run_id, v.variant),
                core.pane_key_for(run_id, v.variant, nonce),
            )
            for v in variants
        ]
        stored, created = await self.db(lambda db: db.create_run(run, tasks))
        self.run_envs.setdefault(stored.id, env)
        if created:
            self.emit_changed(stored.id, stored.revision)
        for task in await self.db(lambda db: db.tasks(stored.id)):
            self.drive(stored.id, task.variant)
        return await self.show(contract.RunArgs(run=stored.id), quick=True)

    async def list_runs(self, _: NoArgs) -> contract.RunList:
        runs = await self.db(lambda db: [(r, db.tasks(r.id)) for r in db.runs()])
        return contract.RunList(
            runs=[run_summary(r, ts, self.rows, self.sessions) for r, ts in runs]
        )

    async def show(self, args: contract.RunArgs, *, quick: bool = False) -> contract.RunInfo:
        run = await self.run_row(args.run)
        tasks = await self.db(lambda db: db.tasks(run.id))
        previews: dict[str, Preview] = {}
        usage: dict[str, Usage] | None = None
        handles: dict[str, str] = {}
        if not quick:
            async with trio.open_nursery() as nursery:
                for t in tasks:
                    if t.worktree_id and not t.removed:
                        nursery.start_soon(self._preview, run, t, previews)
                nursery.start_soon(self._handles, tasks, handles)
            usage = await self._usage()
        return run_info(
            run, tasks, rows=self.rows, sessions=self.sessions, handles=handles,
            previews=previews, usage=usage,
        )  # fmt: skip

    async def show_op(self, args: contract.RunArgs) -> contract.RunInfo:
        return await self.show(args)

    async def _preview(self, run: RunRow, task: TaskRow, out: dict[str, Preview]) -> None:
        args = gitwatch.MergePreviewArgs(worktree=task.worktree_id, into=run.base or None)
        try:
            got = await self.gitwatch.invoke(
                gitwatch.WORKTREE_MERGE_PREVIEW, args, timeout=SHOW_TIMEOUT_S
            )
        except OrcaError:
            return  # gitwatch down, or without the merge ops: no diffstat shown
        d, u = got.diffstat, got.uncommitted_diffstat
        pending = (
            None
            if u is None
            else contract.Diffstat(files=u.files, insertions=u.insertions, deletions=u.deletions)
        )
        stat = contract.Diffstat(
            files=d.files + (u.files if u is not None else 0),
            insertions=d.insertions + (u.insertions if u is not None else 0),
            deletions=d.deletions + (u.deletions if u is not None else 0),
        )
        out[task.variant] = (stat, list(got.conflicts), pending)

    async def _handles(self, tasks: list[TaskRow], out: dict[str, str]) -> None:
        """Terminal handles as `orca term ls` prints them (unique over every session)."""
        try:
            listing = await self.ptyd.invoke(ptyd.LIST, ptyd.ListArgs(history=True))
            paths = await self.gitwatch.invoke(gitwatch_core.WORKTREE_PATHS)
        except OrcaError:
            return
        pairs = [(s.session_id, s.worktree_id) for s in listing.sessions]
        out.update(session_handles(pairs, [(w.id, w.path) for w in paths.worktrees]))

    async def _usage(self) -> dict[str, Usage] | None:
        try:
            report = await self.vault.invoke(vault.USAGE, vault.UsageArgs(by="pane"), timeout=2.0)
        except OrcaError:
            return None  # no vault (not running, not installed): tokens and cost unknown
        return {r.pane_key: Usage(r.total_tokens, r.cost_usd) for r in report.rows if r.pane_key}

    async def check(self, args: contract.CheckArgs) -> contract.RunInfo:
        run = await self.run_row(args.run)
        if not run.check_cmd:
            raise Conflict(f"run {run.id} has no check command (`orca run new --check CMD`)")
        tasks = await self.db(lambda db: db.tasks(run.id))
        chosen = [t for t in tasks if args.variant in (None, t.variant)]
        if not chosen:
            raise NotFound(f"no variant {args.variant!r} in run {run.id}")
        async with trio.open_nursery() as nursery:
            for t in chosen:
                if t.worktree_path and not t.removed:
                    nursery.start_soon(self.check_variant, run, t)
        return await self.show(contract.RunArgs(run=run.id))

    async def merge(self, args: contract.MergeArgs) -> contract.Merged:
        run = await self.run_row(args.run)
        task = await self.db(lambda db: db.task(run.id, args.variant))
        if task is None:
            raise NotFound(f"no variant {args.variant!r} in run {run.id}")
        if core.merge_replays(
            run.id, run.state, run.merged_variant, task.variant, task.worktree_id
        ):
            archived = [t.variant for t in await self.db(lambda db: db.tasks(run.id)) if t.archived]
            return contract.Merged(
                run=run.id, variant=task.variant, commit=run.merge_commit,
                into=run.base, archived=archived,
            )  # fmt: skip
        into = run.base or None
        preview = await self.gitwatch.invoke(
            gitwatch.WORKTREE_MERGE_PREVIEW,
            gitwatch.MergePreviewArgs(worktree=task.worktree_id, into=into, mode=args.mode),
            timeout=30.0,
        )
        core.check_merge_preview(
            run.name, task.variant, task.worktree_path, into=preview.into,
            conflicts=preview.conflicts, uncommitted=len(preview.uncommitted),
            dirty=preview.dirty, commit=args.commit,
        )  # fmt: skip
        message, commit_message = core.merge_messages(run.name, task.variant, task.agent)
        d = await self.db(lambda db: db.write_intent(run.id, task.variant, "merge"))
        merged = await self.gitwatch.invoke(
            gitwatch.WORKTREE_MERGE,
            gitwatch.MergeArgs(
                worktree=task.worktree_id,
                into=into,
                mode=args.mode,
                message=message,
                commit_first=args.commit,
                commit_message=commit_message,
            ),
            timeout=60.0,
        )

        crash_point("merge", self.directory)

        def record(db: Ledger) -> tuple[list[str], int]:
            archived, _ = db.record_merge(run.id, task.variant, merged.commit)
            revision = db.settle(d.key, "done", {"commit": merged.commit, "into": merged.into}, {})
            return archived, revision

        archived, revision = await self.db(record)
        self.emit_changed(run.id, revision)
        return contract.Merged(
            run=run.id, variant=task.variant, commit=merged.commit, into=merged.into,
            archived=archived,
        )  # fmt: skip

    async def remove(self, args: contract.RemoveArgs) -> contract.Removed:
        run = await self.run_row(args.run)
        tasks = await self.db(lambda db: db.tasks(run.id))
        sessions = await self.whole_sessions()
        removed: list[str] = []
        kept: list[contract.KeptVariant] = []
        for t in tasks:
            if t.removed:
                continue
            live = [s for s in sessions if s.running and s.worktree_id == t.worktree_id]
            if t.worktree_id and live:
                kept.append(contract.KeptVariant(variant=t.variant, reason="a terminal runs there"))
                continue
            if t.worktree_id:
                request = gitwatch.RemoveArgs(worktree_id=t.worktree_id, force=args.force)
                try:
                    await self.gitwatch.invoke(gitwatch.WORKTREE_REMOVE, request, timeout=60.0)
                except NotFound:
                    pass  # already gone
                except Conflict as exc:
                    kept.append(contract.KeptVariant(variant=t.variant, reason=exc.message))
                    continue
            removed.append(t.variant)
        _, revision = await self.db(lambda db: db.mark_removed(run.id, removed))
        self.emit_changed(run.id, revision)
        return contract.Removed(run=run.id, removed=removed, kept=kept)

    # -- messages -----------------------------------------------------------------------------
    async def caller_task(self, caller: contract.Caller) -> TaskRow:
        task = await self.db(lambda db: db.task_by_pane(caller.pane_key))
        sha = core.token_sha256(caller.launch_token)
        if task is None:
            raise contract.UnknownCaller("this pane runs no variant of any run")
        if not task.launch_sha:  # adopted after a crash: the first token shown is the pane's
            await self.change(task.run_id, task.variant, launch_sha=sha)
        elif task.launch_sha != sha:
            raise contract.UnknownCaller("the launch token is not this pane's")
        return task

    async def who(
        self, run_ref: str | None, variant: str | None, caller: contract.Caller | None
    ) -> TaskRow:
        """The variant a call is about: its caller's, or the one named."""
        if caller is not None:
            task = await self.caller_task(caller)
            if run_ref not in (None, task.run_id) or variant not in (None, task.variant):
                raise contract.UnknownCaller("the caller is another run's or variant's")
            return task
        if run_ref is None or variant is None:
            raise BadRequest("name the run and the variant (or call from a variant's pane)")
        run = await self.run_row(run_ref)
        found = await self.db(lambda db: db.task(run.id, variant))
        if found is None:
            raise NotFound(f"no variant {variant!r} in run {run.id}")
        return found

    async def send(self, args: contract.SendArgs) -> contract.Receipt:
        run = await self.run_row(args.run)
        sender = args.sender or contract.OPERATOR
        if args.caller is not None:
            sender = (await self.who(run.id, None, args.caller)).variant
        tasks = await self.db(lambda db: db.tasks(run.id))
        names = [t.variant for t in tasks]
        if sender != contract.OPERATOR and sender not in names:
            raise BadRequest(f"from: no variant {sender!r} in run {run.id}")
        recipients = core.resolve_recipients(args.to, names, sender)
        message_id = secrets.token_hex(8)
        key = f"send:{run.id}:{args.key or message_id}"
        receipt, duplicate, revision = await self.db(
            lambda db: db.send(run.id, message_id, sender, args.to, recipients, args.body, key)
        )
        self.emit_changed(run.id, revision)
        return contract.Receipt(
            key=args.key or receipt["messageId"], message_id=receipt["messageId"],
            seq=receipt["seq"], recipients=receipt["recipients"], duplicate=duplicate,
        )  # fmt: skip

    async def inbox(self, args: contract.InboxArgs) -> contract.Inbox:
        task = await self.who(args.run, args.variant, args.caller)
        cursor, rows = await self.db(lambda db: db.inbox(task.run_id, task.variant, args.after))
        return contract.Inbox(
            run=task.run_id,
            variant=task.variant,
            cursor=cursor,
            messages=[
                contract.Message(
                    seq=m.seq,
                    message_id=m.id,
                    sender=m.sender,
                    to=m.recipient,
                    body=m.body,
                    created_at_ms=m.created_ms,
                )
                for m in rows
            ],
        )

    async def ack(self, args: contract.AckArgs) -> contract.Acked:
        task = await self.who(args.run, args.variant, args.caller)
        try:
            cursor = await self.db(lambda db: db.ack(task.run_id, task.variant, args.upto))
        except AckPastEnd as exc:
            raise BadRequest(str(exc)) from None
        run = await self.run_row(task.run_id)
        self.emit_changed(run.id, run.revision)
        return contract.Acked(cursor=cursor)

    async def report(self, args: contract.ReportArgs) -> contract.Receipt:
        task = await self.who(None, None, args.caller)
        key = f"report:{task.run_id}:{task.variant}:{args.key or secrets.token_hex(8)}"
        _, duplicate, revision = await self.db(
            lambda db: db.report(task.run_id, task.variant, args.status, args.summary, key)
        )
        self.emit_changed(task.run_id, revision)
        return contract.Receipt(
            key=args.key or key, message_id="", seq=0, recipients=[], duplicate=duplicate
        )

    def handlers(self) -> list[tuple[Op[Any, Any], Callable[[Any], Awaitable[Any]]]]:
        return [
            (contract.CREATE, self.create),
            (contract.LIST, self.list_runs),
            (contract.SHOW, self.show_op),
            (contract.CHECK, self.check),
            (contract.MERGE, self.merge),
            (contract.REMOVE, self.remove),
            (contract.SEND, self.send),
            (contract.INBOX, self.inbox),
            (contract.ACK, self.ack),
            (contract.REPORT, self.report),
        ]


async def _nothing_to_do(ctx: ActorContext, ledger: Ledger) -> bool:
    """No run in the ledger and no automation in the store: nothing to drive, follow or
    fire until a client asks (a new run, an automation: both are orch's ops). A store
    that does not answer within :data:`SLEEP_CHECK_S` keeps orch up."""
    if await trio.to_thread.run_sync(ledger.runs):
        return False
    with trio.move_on_after(SLEEP_CHECK_S):
        while True:
            try:
                listed = await ctx.connect("store").invoke(store.AUTOMATION_LIST, timeout=2.0)
            except OrcaError:
                await trio.sleep(0.2)
                continue
            return not listed.automations
    return False


async def setup(ctx: ActorContext) -> None:
    try:
        path, conn = await trio.to_thread.run_sync(open_db, ctx.paths.data_dir / ORCH_DIR)
    except (LedgerUnavailable, sqlite3.Error) as exc:
        # Never start on a file this build cannot read: it holds the only copy of the runs.
        raise SystemExit(f"orch: the orchestration database cannot be opened: {exc}") from exc
    ledger = Ledger(conn)
    if ctx.may_sleep and await _nothing_to_do(ctx, ledger):
        ledger.close()
        raise Dormant("no runs, no automations")
    orch = Orch(ctx, ledger)
    automations = Automations(orch)
    for op, handler in [*orch.handlers(), *automations.handlers()]:
        ctx.rpc.register(op, handler, concurrent=True)
    ctx.rpc.extra_stats = lambda: {
        "orch": {
            "driving": len(orch.driving),
            "delivered": orch.stats.delivered,
            "checks": orch.stats.checks,
        }
    }
    ctx.nursery.start_soon(orch.follow_hooks)
    ctx.nursery.start_soon(orch.follow_ptyd)
    ctx.nursery.start_soon(orch.follow_bindings)
    ctx.nursery.start_soon(orch.resume)
    ctx.nursery.start_soon(automations.run)

    ctx.on_stop(orch.stop)
    log.info("orch: database %s", path)
