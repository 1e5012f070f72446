"""The op handlers of ``ptyd``, one method per op of ``orca.contracts.ptyd``.

Each handler takes its op's decoded args Struct and returns its result Struct; the
effects (publish, keeper, hooks, store) are the actor's (``actor.Ptyd``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from actors.ptyd.info import decode_signal
from actors.ptyd.replies import attach_reply, map_session_errors, read_reply, spawn_errors
from actors.ptyd.session import InputBacklogFull, SessionEnded
from actors.ptyd.stream import screen_snapshot
from orca.contracts import ptyd as contract
from orca.contracts.base import NoArgs
from orca.wire.errors import BadRequest, NotFound

if TYPE_CHECKING:
    from actors.ptyd.actor import Ptyd


class PtydOps:
    """The handlers, bound to one actor."""

    def __init__(self, ptyd: Ptyd) -> None:
        self.ptyd = ptyd

    async def spawn(self, args: contract.SpawnArgs) -> contract.SpawnResult:
        ptyd = self.ptyd
        try:
            session = ptyd.table.spawn(args)
        except (OSError, ValueError) as exc:
            raise spawn_errors(exc) from exc
        ptyd.gc.on_sessions_spawned(args.worktree_id)
        info = session.info
        spawned = info.to_row(contract.SessionSpawned, session.scrollback.end, session.subscribers)
        fds = [session.master_fd, *(session.pipe or ())]
        ptyd.session_changed(session, "spawned", spawned, fds=fds)
        ptyd.start_session(session)
        return contract.SpawnResult(
            session_id=info.session_id,
            pane_key=info.pane_key,
            tab_id=info.tab_id,
            terminal_handle=info.terminal_handle,
            pid=info.pid,
            launch_token_sha256=info.launch_token_sha256,
        )

    async def write(self, args: contract.WriteArgs) -> contract.WriteResult:
        session = self.ptyd.session(args.session_id)
        if args.data is not None and args.text is not None:
            raise BadRequest("give either data or text, not both")
        data = args.data if args.data is not None else (args.text or "").encode()
        try:
            session.write_nowait(data)
        except (InputBacklogFull, SessionEnded) as exc:
            raise map_session_errors(exc) from exc
        # Issue 12 (hooks helper): input into a pane answers its permission prompt.
        self.ptyd.hooks.pane_input(session.info.pane_key, session.info.terminal_handle)
        return contract.WriteResult(queued=len(data))

    async def resize(self, args: contract.ResizeArgs) -> contract.Empty:
        session = self.ptyd.session(args.session_id)
        try:
            self.ptyd.resize_session(session, args.cols, args.rows)
        except SessionEnded as exc:
            raise map_session_errors(exc) from exc
        return contract.Empty()

    async def signal(self, args: contract.SignalArgs) -> contract.SignalResult:
        session = self.ptyd.session(args.session_id)
        try:
            signum = decode_signal(args.signal)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        return contract.SignalResult(delivered=session.send_signal(signum))

    async def kill(self, args: contract.SessionArgs) -> contract.Empty:
        session = self.ptyd.session(args.session_id)
        self.ptyd.ctx.nursery.start_soon(session.kill)
        return contract.Empty()

    async def close(self, args: contract.SessionArgs) -> contract.CloseResult:
        # A pane close (docs/protocols.md §2): end the PTY, then retire the pane in store and
        # fence it in hooks before replying. Concurrent: those calls wait on peers.
        if self.ptyd.close_archived(args.session_id):  # issue 13: only its history to delete
            return contract.CloseResult(history_only=True)
        session = self.ptyd.session(args.session_id)
        self.ptyd.close_session(session)
        return await self.ptyd.retire_closed_pane(session)

    async def list(self, args: contract.ListArgs) -> contract.SessionList:
        rows = [
            self.ptyd.row(s)
            for s in self.ptyd.table.sessions()
            if args.worktree_id is None or s.info.worktree_id == args.worktree_id
        ]
        if args.history:  # issue 13: sessions that ended before this start, from disk
            rows += self.ptyd.archived_rows(args.worktree_id)
        return contract.SessionList(sessions=rows)

    async def read(self, args: contract.ReadArgs) -> contract.ReadResult:
        ended = self.ptyd.archived(args.session_id)
        if ended is not None:  # issue 13: rebuilt from its journal
            await self.ptyd.archive.prepare(ended)
            return self.ptyd.archive.read_reply(ended, args.since, args.limit)
        return read_reply(self.ptyd.session(args.session_id), args.since, args.limit)

    async def attach(self, args: contract.AttachArgs) -> contract.AttachResult:
        events = self.ptyd.ctx.events
        ended = self.ptyd.archived(args.session_id)
        if ended is not None:  # issue 13: its final screen and exit code; nothing follows
            await self.ptyd.archive.prepare(ended)
            return self.ptyd.archive.attach_reply(ended, events.epoch, events.seq)
        session = self.ptyd.session(args.session_id)
        # Issue 12 (hooks helper): attaching is the user seeing the pane (unread ends).
        self.ptyd.hooks.pane_attached(session.info.pane_key)
        epoch, seq = events.epoch, events.seq  # the position the screen corresponds to
        screen_at = await screen_snapshot(session)  # formatted off the loop
        reply = attach_reply(session, epoch, seq, screen_at, self.ptyd.stream.endpoint or None)
        if args.attachment_id is None:
            return reply
        session.hold_lease(args.attachment_id, contract.ATTACH_LEASE_S)
        return msgspec.structs.replace(reply, lease_s=contract.ATTACH_LEASE_S)

    async def lease(self, args: contract.LeaseArgs) -> contract.LeaseResult:
        self.ptyd.session(args.session_id).hold_lease(args.attachment_id, contract.ATTACH_LEASE_S)
        return contract.LeaseResult(lease_s=contract.ATTACH_LEASE_S)

    async def detach(self, args: contract.LeaseArgs) -> contract.Empty:
        self.ptyd.session(args.session_id).release_lease(args.attachment_id)
        return contract.Empty()

    async def snapshot(self, args: NoArgs) -> contract.Snapshot:
        events = self.ptyd.ctx.events
        rows = [self.ptyd.row(s) for s in self.ptyd.table.sessions()]
        return contract.Snapshot(epoch=events.epoch, seq=events.seq, sessions=rows)

    async def activity(self, args: contract.ActivityArgs) -> contract.Activity:
        running = [
            s
            for s in self.ptyd.table.sessions()
            if s.info.pane_key == args.pane_key and not s.exited.is_set()
        ]
        if not running:
            raise NotFound(f"no running terminal in pane {args.pane_key!r}")
        session = max(running, key=lambda s: s.info.created_at)
        quiet_ms, lines = await session.activity()
        return contract.Activity(
            session_id=session.session_id, running=True, quiet_ms=quiet_ms, lines=lines
        )

    async def gc_status(self, args: NoArgs) -> contract.GcStatus:
        gc = self.ptyd.gc
        return contract.GcStatus(suspects=gc.suspects, grace_s=gc.grace_s)


def register_ops(ptyd: Ptyd) -> PtydOps:
    """Serve every op of the ptyd contract on the actor's RPC server (the ops returned:
    ptyd's own tasks start terminals the way a client does)."""
    ops = PtydOps(ptyd)
    rpc = ptyd.ctx.rpc
    rpc.register(contract.SPAWN, ops.spawn)
    rpc.register(contract.WRITE, ops.write)
    rpc.register(contract.RESIZE, ops.resize)
    rpc.register(contract.SIGNAL, ops.signal)
    rpc.register(contract.KILL, ops.kill)
    rpc.register(contract.CLOSE, ops.close, concurrent=True)
    rpc.register(contract.LIST, ops.list)
    rpc.register(contract.READ, ops.read)
    rpc.register(contract.ATTACH, ops.attach, concurrent=True)  # formats off the loop
    rpc.register(contract.LEASE, ops.lease)
    rpc.register(contract.DETACH, ops.detach)
    rpc.register(contract.SNAPSHOT, ops.snapshot)
    rpc.register(contract.GC_STATUS, ops.gc_status)
    rpc.register(contract.ACTIVITY, ops.activity, concurrent=True)  # reads the model off the loop
    return ops
