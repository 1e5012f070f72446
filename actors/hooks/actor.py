"""The ``hooks`` actor shell: RPC ops, the HTTP endpoint, the saver (thin, trio).

Start-up order: hydrate ``last-status.json`` (rows come back ``restoredUnconfirmed``,
retired-pane fences come back in force), start the HTTP server on a random loopback port with a fresh secret, write
``endpoint.env`` atomically, install the hook script (so ``orca hooks install`` and
running agents find an up-to-date one), follow the store's pane retirements,
worktree renames and removals (:mod:`actors.hooks.store_follower`), re-resolve the
restored rows' worktree ids with the store (bounded; a down store leaves them, asked
again in the background; rows of a worktree the store calls unknown are dropped - seed
03 strict hydrate), register ops. Restored rows stay ``restoredUnconfirmed`` until
their agent reports again; ptyd's truth (``agentStatus.reconcile_ptys``, pushed by
ptyd once it sees this incarnation's heartbeat) ties them to their live terminal or
ends them, and never confirms them (:mod:`actors.hooks.pty_truth`). An accepted hook
that is a user's prompt may name its worktree: gitwatch is asked in the background
(:mod:`actors.hooks.first_prompt`). Stop: one synchronous flush.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from actors.hooks.agent_events import ANSWER_IN_TERMINAL
from actors.hooks.answer_watch import watch_answer
from actors.hooks.endpoint_file import (
    ENDPOINT_FILE_NAME,
    HOOK_PROTOCOL_VERSION,
    EndpointPublisher,
    new_secret,
)
from actors.hooks.first_prompt import FirstPromptGate, ask_to_name_worktree
from actors.hooks.http import HookHttpServer
from actors.hooks.http_request import HookReply, HookSubmission
from actors.hooks.ingest import decode_osc_payload, event_from_osc, event_from_structured
from actors.hooks.pane_authority import is_sha256_hex, parse_pane_key
from actors.hooks.permission_desk import PermissionDesk
from actors.hooks.permission_hold import PermissionHolds
from actors.hooks.persistence import DebouncedSaver, StatusFileLoad, load_status_file
from actors.hooks.refusals import RefusalLog
from actors.hooks.service import HooksService, wall_clock_ms
from actors.hooks.session_binder import SessionBinder
from actors.hooks.status_file import encode_status_file
from actors.hooks.status_table import (
    MAX_ROWS,
    MAX_ROWS_PER_WORKTREE,
    AgentStatusTable,
    TableEffects,
)
from actors.hooks.store_follower import StoreFollower
from orca.actor import ActorContext
from orca.contracts import hooks
from orca.contracts.base import NoArgs, Op
from orca.fsio import ensure_private_dir
from orca.hook_script import install_hook_script
from orca.host import current_host_id
from orca.wire.errors import BadRequest

log = logging.getLogger(__name__)

STATUS_FILE_NAME = "last-status.json"
# ``agentStatus.clear`` reasons are labels carried by the clear event; bound them.
MAX_CLEAR_REASON_CHARS = 64


def _answer(effects: TableEffects) -> hooks.IngestResult:
    return hooks.IngestResult(outcome=effects.outcome, reason=effects.reason)


# A pane_input call on its way and queued here longer than this is not believed: its
# monotonic stamp is then taken for another clock's (a time namespace), and the age ptyd
# measured when it sent is used.
MAX_INPUT_TRANSIT_MS = 30_000


def input_age_ms(args: hooks.PaneInputArgs, now_monotonic: float | None = None) -> int:
    """How long ago the pane's last key was typed, as of now. From ptyd's stamp on the
    machine's monotonic clock when it sent one: the call's time on its way and queued
    in this actor counts (under load that was longer than an agent takes to ask after
    the key that made it ask, and the key then "answered" the ask: CI,
    test_approve_cli). Else the age ptyd measured when it sent."""
    sent = args.evidence_age_ms
    if args.typed_at_monotonic_ms <= 0:
        return sent
    now = time.monotonic() if now_monotonic is None else now_monotonic
    age = int(now * 1000) - args.typed_at_monotonic_ms
    return age if sent <= age <= sent + MAX_INPUT_TRANSIT_MS else sent


def _require_pane_key(pane_key: str) -> None:
    if parse_pane_key(pane_key) is None:
        raise BadRequest(f"malformed pane key {pane_key!r} (expected tabId:leaf)")


class HooksActor:
    def __init__(self, ctx: ActorContext) -> None:
        self.ctx = ctx
        hooks_dir = ctx.paths.hooks_dir
        ensure_private_dir(hooks_dir)
        self.status_path = hooks_dir / STATUS_FILE_NAME
        self.table = AgentStatusTable(current_host_id())
        self.saver = DebouncedSaver(self.status_path, self.render_status)
        self.refusals = RefusalLog()
        # Taken and answered 200, but nothing changed (ignored, unchanged): a light that
        # did not move with a hook the agent sent.
        self.unapplied = RefusalLog(said="changed nothing")
        self.service = HooksService(self.table, self._publish_status, self.saver.schedule)
        # issue 40 item 4: an answered prompt is settled from ptyd's view of the pane.
        self.ptyd = ctx.connect("ptyd", timeout=2.0)
        self.service.on_answered = self._watch_answer
        self.follower = StoreFollower(ctx, self.service, self.saver.flush_now)
        # 01-23: a user's first prompt names a placeholder-named worktree (gitwatch's).
        self.gitwatch = ctx.connect("gitwatch")
        self.first_prompts = FirstPromptGate()
        self.secret = new_secret()
        # issue 25: hooks bind agent sessions to panes (the vault's exact join).
        self.sessions = SessionBinder(
            hooks_dir, ctx.events.emit, self.table.authority, wall_clock_ms
        )
        # -- issue 27: held PermissionRequest hooks (the verdict store) --
        self.permissions = PermissionHolds(
            PermissionDesk(current_host_id()), self.service, ctx.events.emit
        )
        self.http = HookHttpServer(
            self.secret,
            self.ingest_hook,
            hold=self.permissions.hold,
            settled=self.follower.retirements_known,
        )
        self.script_path = install_hook_script(hooks_dir)
        # -- issue 16 items 5/7/12 (hooks-hardening): disk and endpoint health --
        self.status_load: StatusFileLoad | None = None
        self.endpoint_file: EndpointPublisher | None = None
        # -- end issue 16 items 5/7/12 --

    def _watch_answer(self, pane_key: str, rev: int, agent: str) -> None:
        asks: Callable[[str, int], object] | None = None
        tool = self.permissions.released_in_terminal(pane_key, rev)
        if tool is not None:
            # The answer released a held request (typed in the agent's terminal): an
            # agent that draws its dialog only after its hook returns lost that key and
            # now asks there; nothing is held, so the row says where to answer.
            detail = f"{ANSWER_IN_TERMINAL}: {tool}" if tool else ANSWER_IN_TERMINAL
            asks = partial(self.service.pane_asking, detail=detail)
        self.ctx.nursery.start_soon(
            watch_answer,
            self.ptyd,
            pane_key,
            rev,
            agent,
            self.table.still_answered,
            self.service.pane_idle,
            asks,
        )

    def _publish_status(self, event: hooks.StatusEventData) -> None:
        """Publish a status event; a held permission request of its pane may end with it
        (the prompt answered in the agent's terminal, the pane gone)."""
        self.ctx.events.emit(event)
        self.permissions.observe(event)

    def render_status(self) -> bytes:
        authority = self.table.authority
        return encode_status_file(
            self.table.rows(),
            authority.commitments,
            authority.fences(),
            self.follower.cursor.revision,
        )

    def hydrate(self) -> None:
        # issue 16 item 12: a damaged file is kept aside and reported, never just dropped.
        self.status_load = load_status_file(self.status_path, wall_clock_ms(), self.table.host_id)
        loaded = self.status_load.status
        self.table.hydrate(loaded.rows, loaded.commitments, loaded.fences)
        self.follower.cursor.revision = loaded.store_revision
        self.saver.prime(self.render_status())
        log.info(
            "hydrated %d agent rows (%d dropped), %d retired-pane fences",
            len(loaded.rows),
            loaded.dropped,
            self.table.authority.fence_count(),
        )

    def ingest_hook(self, submission: HookSubmission) -> HookReply:
        """A hook request: its status first, then the session binding it states, then
        (a user prompt the pane's authority accepted) the worktree it may name."""
        reply = self.service.ingest_hook(submission)
        outcome = reply.body.get("outcome")
        if reply.status != 200 or outcome != "applied":
            event = submission.payload.get("hook_event_name")
            said = self.refusals if reply.status != 200 else self.unapplied
            said.refused(
                reply.status,
                str(reply.body.get("reason", outcome or "")),
                f"{submission.agent} {event if isinstance(event, str) else '?'} "
                f"for pane {submission.pane_key}",
            )
        self.sessions.observe(submission)
        if reply.status == 200:
            self._name_worktree_from(submission)
        return reply

    def _name_worktree_from(self, submission: HookSubmission) -> None:
        """Ask gitwatch, in the background, to name the row's worktree from the prompt
        (actors/hooks/first_prompt.py); the hook's reply never waits for it."""
        row = self.table.row(submission.pane_key)
        if row is None:
            return
        question = self.first_prompts.claim(submission.agent, submission.payload, row.worktree_id)
        if question is not None:
            self.ctx.nursery.start_soon(
                ask_to_name_worktree, self.gitwatch, self.first_prompts, question
            )

    # ops -------------------------------------------------------------------
    async def session_bindings(self, _: NoArgs) -> hooks.SessionBindings:
        return self.sessions.snapshot(self.ctx.events.epoch, self.ctx.events.seq)

    async def snapshot(self, _: NoArgs) -> hooks.Snapshot:
        return hooks.Snapshot(
            epoch=self.ctx.events.epoch,
            seq=self.ctx.events.seq,
            rev=self.table.rev,
            rows=self.service.snapshot_rows(),
            fates=self.table.fates(),
        )

    async def ingest_osc(self, args: hooks.IngestOscArgs) -> hooks.IngestResult:
        _require_pane_key(args.pane_key)
        document = decode_osc_payload(args.payload)
        if document is None:
            raise BadRequest("OSC payload is not a bounded JSON object")
        event = event_from_osc(
            args.pane_key,
            args.worktree_id,
            document,
            terminal_handle=args.terminal_handle,
            connection_id=args.connection_id,
            connection_seq=args.connection_seq,
            evidence_age_ms=args.evidence_age_ms,
        )
        if event is None:
            return hooks.IngestResult(outcome="ignored", reason="no_status")
        await self.follower.retirements_known()
        return _answer(self.service.apply(event))

    async def ingest_structured(self, args: hooks.IngestStructuredArgs) -> hooks.IngestResult:
        _require_pane_key(args.pane_key)
        event = event_from_structured(
            args.pane_key,
            args.worktree_id,
            args.state,
            structured_host=args.structured_host,
            agent=args.agent,
            session_id=args.session_id,
            detail=args.detail,
        )
        await self.follower.retirements_known()
        return _answer(self.service.apply(event))

    async def retire_pane(self, args: hooks.RetirePaneArgs) -> hooks.Removed:
        _require_pane_key(args.pane_key)
        effects = self.service.retire_pane(args.pane_key, args.retire_id)
        # Seed 02 §9: a retirement is flushed at once, not debounced.
        self.saver.flush_now()
        return hooks.Removed(removed=bool(effects.events))

    async def restart_pane(self, args: hooks.RestartPaneArgs) -> hooks.Restarted:
        _require_pane_key(args.pane_key)
        digest = args.launch_token_sha256
        if digest is not None and not is_sha256_hex(digest):
            raise BadRequest("launchTokenSha256 must be 64 lowercase hex digits")
        had = self.table.row(args.pane_key)
        lifted = self.service.restart_pane(
            args.pane_key, digest, args.worktree_id, args.terminal_handle
        )
        now = self.table.row(args.pane_key)
        log.info(
            "pane %s: a new launch (%s); its row %s",
            args.pane_key,
            args.terminal_handle,
            "none" if had is None else ("dropped" if now is None else f"kept ({now.state})"),
        )
        return hooks.Restarted(fence_lifted=lifted)

    async def pty_exited(self, args: hooks.PtyExitedArgs) -> hooks.Removed:
        _require_pane_key(args.pane_key)
        effects = self.service.pty_exited(args.pane_key, args.terminal_handle, args.exit_code)
        log.info(
            "pane %s: its terminal %s exited (%s)%s",
            args.pane_key,
            args.terminal_handle,
            args.exit_code,
            "; its row removed" if effects.events else "",
        )
        return hooks.Removed(removed=bool(effects.events))

    async def reconcile_ptys(self, args: hooks.ReconcilePtysArgs) -> hooks.PtysReconciled:
        named = [(p.pane_key, p.launch_token_sha256) for p in args.running]
        named += [(p.pane_key, p.launch_token_sha256) for p in args.ended]
        for pane_key, digest in named:
            _require_pane_key(pane_key)
            if not is_sha256_hex(digest):
                raise BadRequest("launchTokenSha256 must be 64 lowercase hex digits")
        effects, verdicts = self.service.reconcile_ptys(args.running, args.ended)
        if effects.events:
            log.info(
                "ptyd's truth: %d rows tied to their live terminal, %d replaced, %d exited",
                len(verdicts.still_running),
                len(verdicts.replaced),
                len(verdicts.exited),
            )
        return hooks.PtysReconciled(
            epoch=self.ctx.events.epoch,
            # The launches confirmed running (their rows' states are not: pty_truth).
            confirmed=len(verdicts.still_running),
            exited=len(verdicts.exited),
            replaced=len(verdicts.replaced),
        )

    async def pane_input(self, args: hooks.PaneInputArgs) -> hooks.IngestResult:
        _require_pane_key(args.pane_key)
        return _answer(self.service.pane_input(args.pane_key, input_age_ms(args)))

    async def ack(self, args: hooks.AckArgs) -> hooks.Acked:
        if args.pane_key is not None:
            _require_pane_key(args.pane_key)
        return hooks.Acked(acked=len(self.service.ack(args.pane_key).events))

    async def alias_pane(self, args: hooks.AliasPaneArgs) -> hooks.Aliased:
        _require_pane_key(args.alias)
        _require_pane_key(args.pane_key)
        outcome = self.service.alias_pane(args.alias, args.pane_key).outcome
        assert outcome != "rejected"  # aliasing always answers applied or unchanged
        return hooks.Aliased(outcome=outcome)

    async def clear(self, args: hooks.ClearArgs) -> hooks.Removed:
        _require_pane_key(args.pane_key)
        effects = self.service.clear_pane(args.pane_key, args.reason[:MAX_CLEAR_REASON_CHARS])
        return hooks.Removed(removed=bool(effects.events))

    async def endpoint(self, _: NoArgs) -> hooks.Endpoint:
        return hooks.Endpoint(
            port=self.http.port,
            version=HOOK_PROTOCOL_VERSION,
            endpoint_file=str(self.ctx.paths.hooks_dir / ENDPOINT_FILE_NAME),
            script_path=str(self.script_path),
        )

    # -- issue 27: permission requests --
    async def permission_snapshot(self, _: NoArgs) -> hooks.PermissionSnapshot:
        return self.permissions.snapshot(self.ctx.events.epoch, self.ctx.events.seq)

    async def answer_permission(self, args: hooks.AnswerPermissionArgs) -> hooks.PermissionAnswered:
        return self.permissions.answer(args)

    async def flush(self) -> None:
        self.saver.flush_now()
        self.sessions.saver.flush_now()

    # -- issue 16 items 5/7/12 (hooks-hardening) --
    def stats(self) -> dict[str, Any]:
        """``sys.stats`` → ``hooks``: the files' write health, the last load, the endpoint."""
        return {
            "hooks": {
                "statusFile": {
                    **self.saver.health.to_dict(),
                    "load": self.status_load.to_dict() if self.status_load else None,
                },
                "endpointFile": self.endpoint_file.health.to_dict() if self.endpoint_file else None,
                "http": self.http.statistics().to_dict(),
                "rows": {
                    "count": len(self.table.rows()),
                    "evicted": self.table.evicted,
                    "maxPerWorktree": MAX_ROWS_PER_WORKTREE,
                    "max": MAX_ROWS,
                },
            }
        }

    # -- end issue 16 items 5/7/12 --

    def handlers(self) -> list[tuple[Op[Any, Any], Callable[[Any], Awaitable[Any]]]]:
        """Every op of ``orca.contracts.hooks`` with the method serving it."""
        return [
            (hooks.SNAPSHOT, self.snapshot),
            (hooks.INGEST_OSC, self.ingest_osc),
            (hooks.INGEST_STRUCTURED, self.ingest_structured),
            (hooks.RETIRE_PANE, self.retire_pane),
            (hooks.RESTART_PANE, self.restart_pane),
            (hooks.ALIAS_PANE, self.alias_pane),
            (hooks.CLEAR, self.clear),
            (hooks.PTY_EXITED, self.pty_exited),
            (hooks.RECONCILE_PTYS, self.reconcile_ptys),
            (hooks.PANE_INPUT, self.pane_input),
            (hooks.ACK, self.ack),
            (hooks.ENDPOINT, self.endpoint),
            (hooks.PERMISSION_SNAPSHOT, self.permission_snapshot),
            (hooks.ANSWER_PERMISSION, self.answer_permission),
            (hooks.SESSION_BINDINGS, self.session_bindings),
        ]


async def setup(ctx: ActorContext) -> None:
    actor = HooksActor(ctx)
    actor.hydrate()
    port = await ctx.nursery.start(actor.http.run)
    # -- issue 16 item 5: a refused endpoint.env is reported and retried, never fatal --
    actor.endpoint_file = EndpointPublisher(ctx.paths.hooks_dir, port, actor.secret)
    actor.endpoint_file.publish()
    ctx.nursery.start_soon(actor.endpoint_file.run)
    ctx.rpc.extra_stats = actor.stats
    # -- end issue 16 item 5 --
    ctx.nursery.start_soon(actor.saver.run)
    await ctx.nursery.start(actor.follower.run)
    ctx.nursery.start_soon(actor.follower.run_worktree_checks)
    await actor.follower.resolve_restored_worktrees()
    # Retirements missed while down: in the background, never delaying readiness.
    ctx.nursery.start_soon(actor.follower.run_catch_up)
    for op, handler in actor.handlers():
        ctx.rpc.register(op, handler)
    # issue 25: the session bindings (their own file, saved debounced like the rows;
    # last, so the start-up above keeps its timing; a hook bound meanwhile is kept).
    actor.sessions.hydrate()
    ctx.nursery.start_soon(actor.sessions.saver.run)
    ctx.on_stop(actor.flush)
    log.info("hook endpoint on 127.0.0.1:%d", port)
