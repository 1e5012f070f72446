"""Op handlers of ``ptyd`` and the actor's ``setup`` (contract: ``api.py``)."""

from __future__ import annotations

import logging
import os

from actors.ptyd import api, handoff
from actors.ptyd.actor import Ptyd, PtydSettings
from actors.ptyd.history import remove_orphans
from actors.ptyd.info import decode_signal
from actors.ptyd.replies import map_session_errors, read_reply, spawn_errors, spawn_request
from actors.ptyd.session import InputBacklogFull, SessionEnded
from orca.actor import ActorContext
from orca.wire.errors import BadRequest

log = logging.getLogger(__name__)


def register_ops(ptyd: Ptyd) -> None:
    """Register every ``term.*`` op of ``api.py`` on the actor's RPC server."""
    ctx = ptyd.ctx

    async def spawn_op(args: api.SpawnArgs) -> dict[str, object]:
        req = spawn_request(args)
        try:
            session = ptyd.table.spawn(req)
        except (OSError, ValueError) as exc:
            raise spawn_errors(exc) from exc
        ptyd.gc.on_sessions_spawned(args.worktree_id)
        if ptyd.keeper is not None:
            ptyd.keeper.deposit(session.info, [session.master_fd, *(session.pipe or ())])
        ptyd.on_launch(session)
        ptyd.start_session(session)
        ctx.events.publish(api.SPAWNED_EVENT, ptyd.row(session))
        info = session.info
        return {
            "sessionId": info.session_id,
            "paneKey": info.pane_key,
            "tabId": info.tab_id,
            "terminalHandle": info.terminal_handle,
            "pid": info.pid,
            "launchTokenSha256": info.launch_token_sha256,
        }

    async def write_op(args: api.WriteArgs) -> dict[str, object]:
        session = ptyd.session(args.session_id)
        data = args.data if args.data is not None else (args.text or "").encode()
        if args.data is not None and args.text is not None:
            raise BadRequest("give either data or text, not both")
        try:
            session.write_nowait(data)
        except (InputBacklogFull, SessionEnded) as exc:
            raise map_session_errors(exc) from exc
        return {"queued": len(data)}

    async def resize_op(args: api.ResizeArgs) -> dict[str, object]:
        if not (1 <= args.cols <= api.MAX_DIMENSION and 1 <= args.rows <= api.MAX_DIMENSION):
            raise BadRequest(f"cols/rows must be within 1..{api.MAX_DIMENSION}")
        session = ptyd.session(args.session_id)
        try:
            session.resize(args.cols, args.rows)
        except SessionEnded as exc:
            raise map_session_errors(exc) from exc
        if ptyd.keeper is not None:
            ptyd.keeper.update(session.info)
        return {}

    async def signal_op(args: api.SignalArgs) -> dict[str, object]:
        session = ptyd.session(args.session_id)
        try:
            signum = decode_signal(args.signal)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        return {"delivered": session.send_signal(signum)}

    async def kill_op(args: api.SessionArgs) -> dict[str, object]:
        session = ptyd.session(args.session_id)
        ctx.nursery.start_soon(session.kill)
        return {}

    async def close_op(args: api.SessionArgs) -> dict[str, object]:
        # A pane close (ARCHITECTURE §3.2): end the PTY, then retire the pane in store and
        # fence it in hooks before replying. Concurrent: those calls wait on peers.
        session = ptyd.session(args.session_id)
        ptyd.close_session(session)
        return await ptyd.retire_closed_pane(session)

    async def list_op(args: api.ListArgs) -> dict[str, object]:
        rows = [
            ptyd.row(s)
            for s in ptyd.table.sessions()
            if args.worktree_id is None or s.info.worktree_id == args.worktree_id
        ]
        return {"sessions": rows}

    async def read_op(args: api.ReadArgs) -> dict[str, object]:
        return read_reply(ptyd.session(args.session_id), args.since, args.limit)

    async def attach_op(args: api.SessionArgs) -> dict[str, object]:
        session = ptyd.session(args.session_id)
        reply = read_reply(session, None, None)
        reply.update(
            epoch=ctx.events.epoch,
            seq=ctx.events.seq,
            topics=[api.output_topic(session.session_id), api.exit_topic(session.session_id)],
        )
        return reply

    async def snapshot_op(args: api.EmptyArgs) -> dict[str, object]:
        return {
            "epoch": ctx.events.epoch,
            "seq": ctx.events.seq,
            "sessions": [ptyd.row(s) for s in ptyd.table.sessions()],
        }

    async def gc_status_op(args: api.EmptyArgs) -> dict[str, object]:
        return {"suspects": ptyd.gc.suspects, "graceS": ptyd.gc.grace_s}

    ctx.rpc.register("term.spawn", spawn_op, api.SpawnArgs)
    ctx.rpc.register("term.write", write_op, api.WriteArgs)
    ctx.rpc.register("term.resize", resize_op, api.ResizeArgs)
    ctx.rpc.register("term.signal", signal_op, api.SignalArgs)
    ctx.rpc.register("term.kill", kill_op, api.SessionArgs)
    ctx.rpc.register("term.close", close_op, api.SessionArgs, concurrent=True)
    ctx.rpc.register("term.list", list_op, api.ListArgs)
    ctx.rpc.register("term.read", read_op, api.ReadArgs)
    ctx.rpc.register("term.attach", attach_op, api.SessionArgs)
    ctx.rpc.register("term.snapshot", snapshot_op, api.EmptyArgs)
    ctx.rpc.register("term.gc_status", gc_status_op, api.EmptyArgs)


async def setup(ctx: ActorContext) -> None:
    """Build the actor: reclaim sessions from the fd keeper if any, register, start tasks."""
    ptyd = Ptyd(ctx, PtydSettings.from_env())
    keeper_path = handoff.find_keeper(os.environ, ctx.paths.runtime_dir)
    if keeper_path:
        try:
            ptyd.keeper = handoff.KeeperLink(keeper_path)
        except OSError as exc:  # a stale socket of a supervisor that is gone
            log.error("fd keeper at %s unreachable (%s): crash survival is off", keeper_path, exc)
        else:
            adopted = ptyd.adopt_from_keeper()
            # Retirements published while ptyd was down (never blocks the start).
            ctx.nursery.start_soon(ptyd.end_panes_retired_while_down, adopted)
    else:
        log.warning("no fd keeper: terminals will not survive a ptyd crash")
    live_keys = {s.info.history_key for s in ptyd.table.sessions()}
    if ctx.paths.terminal_history_dir.is_dir():
        removed = remove_orphans(ctx.paths.terminal_history_dir, live_keys)
        if removed:
            log.info("removed %d terminal histories of sessions lost before this start", removed)
    register_ops(ptyd)
    ctx.rpc.extra_stats = lambda: {
        "ptyd": {
            "sessions": len(ptyd.table),
            "hooksDropped": ptyd.hooks_dropped,
            "hooksFailed": ptyd.hooks_failed,
            "gcSuspects": len(ptyd.gc.suspects),
        }
    }
    ctx.nursery.start_soon(ptyd.forward_to_hooks)
    ctx.nursery.start_soon(ptyd.run_gc)
    ctx.nursery.start_soon(ptyd.follow_store)
