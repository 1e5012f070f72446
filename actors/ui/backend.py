"""The UI's view of the service, on the trio side: mirrors, liveness, and requests.

One :class:`Backend` per ``orca ui``. It follows five actors with
``orca.actor.Mirror`` (store: repos, names, the local workspace session; hooks: agent
rows; ptyd: sessions; gitwatch: git facts; orcad: actor states) and one heartbeat
:class:`~orca.actor.subscriber.Subscriber` per actor, and it calls their ops for the
user's actions. It never writes a file: every change is a request to the actor that
owns it (docs/architecture.md §1).

Liveness from events, not polling: an actor (orcad included) is shown down the moment
its process ends (a pidfd per pid orcad reports, ``_watch_pids``), and up again when it
is heard from (a heartbeat: a publisher answers each new subscription with one at once,
and a restarted actor hears ours again as the socket reconnects; or a snapshot).
Publishers restate themselves only every ``IDLE_HEARTBEAT_S`` while idle, so silence
alone means down only after ``SILENT_AFTER_S`` (a wedged process, or one whose pid is
not known yet; orcad ends a wedged actor well before). The mirrors resnapshot by
themselves when a publisher returns with a new epoch, so recovery needs no action here.

Changes reach the app through ``on_change`` (called on the app's thread: trio runs as
a guest of Textual's loop, ``actors/ui/runtime.py``); the app coalesces them.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

import msgspec
import trio

from actors.ui import mirrors
from actors.ui.runs_follower import RunsFollower
from actors.ui.vault_view import VaultFollower
from orca.actor import Mirror, RpcClient, open_rpc_client
from orca.actor.mirror import MirrorSpec
from orca.actor.publisher import IDLE_HEARTBEAT_S
from orca.actor.subscriber import Subscriber
from orca.contracts import gateway as gw
from orca.contracts import gitwatch, hooks, ptyd
from orca.contracts import store as store_contract
from orca.contracts import supervisor as sup
from orca.contracts.base import Op
from orca.model import tab_groups
from orca.model.session import WorkspaceSessionState
from orca.paths import OrcaPaths
from orca.remote import any_known_host
from orca.user_env import user_environment
from orca.wire.envelope import Event
from orca.wire.errors import OrcaError

log = logging.getLogger(__name__)

ACTORS = ("store", "hooks", "ptyd", "gitwatch", "supervisor")
# Two missed idle heartbeats, and more: the actor is down or wedged (an ended process is
# seen at once, by its pidfd).
SILENT_AFTER_S = 2 * IDLE_HEARTBEAT_S + 5.0
# Calls the user waits for; a dead actor answers "unavailable" after this.
CALL_TIMEOUT_S = 5.0
# term.close replies within ~3 s even with hooks and store down (orca/contracts/ptyd.py).
CLOSE_TIMEOUT_S = 8.0
# Remote hosts (issue 18): the mirrors are re-read on the gateway's events, and at
# least this often (a missed event, the gateway restarted, a host added later).
REMOTE_REFRESH_S = 5.0
MIRRORS_TIMEOUT_S = 2.0


SPECS: dict[str, MirrorSpec] = {
    "store": MirrorSpec(
        store_contract.CONTRACT,
        store_contract.STATE_SNAPSHOT,
        mirrors.load_store,
        mirrors.apply_store,
    ),
    # The status events only: hooks also publishes permission requests (issue 27).
    "hooks": MirrorSpec(
        hooks.CONTRACT, hooks.SNAPSHOT, mirrors.load_status, mirrors.apply_status, hooks.EVENTS
    ),
    # Not term.output: the sessions' bytes reach the panes that show them, by topic
    # (their attach streams). Not even received: 20 agents printing are thousands of
    # chunks a second, each a trio wake-up on the UI's one thread (bench/ui.py).
    "ptyd": MirrorSpec(
        ptyd.CONTRACT,
        ptyd.SNAPSHOT,
        mirrors.load_sessions,
        mirrors.apply_sessions,
        (ptyd.SPAWNED, ptyd.CLOSED, ptyd.EXIT, ptyd.REKEYED, ptyd.RESIZED),
        narrow=True,
    ),
    "gitwatch": MirrorSpec(
        gitwatch.CONTRACT, gitwatch.SNAPSHOT, mirrors.load_git, mirrors.apply_git
    ),
    "supervisor": MirrorSpec(sup.CONTRACT, sup.SNAPSHOT, mirrors.load_actors, mirrors.apply_actors),
}


def _moved(mirror: Mirror[Any], since: tuple[int, int]) -> bool:
    return (mirror.snapshots, mirror.applied) != since


class Backend:
    """Mirrors of every actor plus the requests the UI makes."""

    def __init__(self, paths: OrcaPaths, on_change: Callable[[str], None]) -> None:
        self.paths = paths
        self._on_change = on_change
        self.clients: dict[str, RpcClient] = {}
        self.mirrors: dict[str, Mirror[Any]] = {}
        self.alive: dict[str, bool] = dict.fromkeys(ACTORS, False)
        self.last_heard: dict[str, float] = {}
        self._beats: dict[str, trio.Event] = {a: trio.Event() for a in ACTORS}
        # The pid whose end marks each actor down (orcad's word), and a wake-up when
        # orcad's mirror changed.
        self._watched_pids: dict[str, tuple[int, trio.CancelScope]] = {}
        self._pids_poke = trio.Event()
        self.changes = 0
        # The local gateway's mirrors of remote hosts, as last read (read-only: shown
        # beside the local rows, never written anywhere).
        self.remote: list[gw.HostMirror] = []
        # What each pane's agent has cost (the vault, issue 25): tab labels, search.
        self.vault = VaultFollower(paths, self._changed)
        # orch's runs (issue 26): followed for the run view, read only while it is open.
        self.runs = RunsFollower(paths)
        self._remote_poke = trio.Event()
        # Terminals that ended before this ptyd started, known from their history on
        # disk (``term.list {history}``: not in ptyd's snapshot), by session id: a pane
        # bound to one shows its last screen. Read again whenever ptyd's mirror takes a
        # snapshot (ptyd restarted: its archive is read at its start).
        self.history: dict[str, ptyd.SessionRow] = {}
        self._history_poke = trio.Event()

    # -- state the app reads -----------------------------------------------------------
    def state(self, actor: str) -> Any:
        mirror = self.mirrors.get(actor)
        return None if mirror is None else mirror.state

    @property
    def store(self) -> mirrors.StoreView:
        return self.state("store") or mirrors.StoreView()

    @property
    def status(self) -> mirrors.StatusView:
        return self.state("hooks") or mirrors.StatusView()

    @property
    def sessions(self) -> dict[str, ptyd.SessionRow] | None:
        state: dict[str, ptyd.SessionRow] | None = self.state("ptyd")
        return state

    @property
    def git(self) -> dict[str, mirrors.WorktreeFacts]:
        return self.state("gitwatch") or {}

    @property
    def service(self) -> mirrors.ServiceView:
        return self.state("supervisor") or mirrors.ServiceView()

    @property
    def actors(self) -> dict[str, sup.ActorStatus]:
        return self.service.actors

    @property
    def service_up(self) -> bool:
        return self.alive["supervisor"]

    def loaded(self, actor: str) -> bool:
        """The actor's mirror holds a snapshot (its state is the actor's, not a default)."""
        mirror = self.mirrors.get(actor)
        return mirror is not None and mirror.snapshots > 0

    def session(self) -> WorkspaceSessionState:
        return tab_groups.decode_session(self.store.session)

    def terminal_handles(self) -> dict[str, str]:
        """Every terminal's handle by session id, as ``orca term ls`` names it (one name
        per thing in every face, issue 32; it showed ``1:bash``)."""
        from orca.model.ids import split_worktree_id_for_filesystem
        from orca.views.handles import session_handles

        rows = [*(self.sessions or {}).values(), *self.history.values()]
        known = []
        for worktree_id in self.git:
            parts = split_worktree_id_for_filesystem(worktree_id)
            if parts is not None:
                known.append((worktree_id, parts.path))
        return session_handles([(s.session_id, s.worktree_id) for s in rows], known)

    def session_for_pane(self, pane_key: str) -> ptyd.SessionRow | None:
        """ptyd's newest session of a pane (running ones first; one that ended before
        ptyd's start, ``archived``, when it has no other)."""
        rows = [s for s in (self.sessions or {}).values() if s.pane_key == pane_key]
        if not rows:
            rows = [s for s in self.history.values() if s.pane_key == pane_key]
        rows.sort(key=lambda s: (s.running, s.created_at))
        return rows[-1] if rows else None

    # -- running -------------------------------------------------------------------------
    def _changed(self, what: str) -> None:
        self.changes += 1
        self._on_change(what)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with AsyncExitStack() as stack:
            for actor in ACTORS:
                endpoint = self.paths.ipc_endpoint(actor, "rpc")
                self.clients[actor] = await stack.enter_async_context(
                    open_rpc_client(endpoint, timeout=CALL_TIMEOUT_S)
                )
            nursery = await stack.enter_async_context(trio.open_nursery())
            for actor in ACTORS:
                spec = SPECS[actor]
                mirror: Mirror[Any] = Mirror(
                    client=self.clients[actor],
                    pub_endpoint=self.paths.ipc_endpoint(actor, "pub"),
                    snapshot=spec.snapshot,
                    events=spec.events or spec.contract.events.values(),
                    load=spec.load,
                    apply=spec.apply,
                    consumer=f"ui<-{actor}",
                    topics=[e.type for e in spec.events or ()] if spec.narrow else None,
                )
                self.mirrors[actor] = mirror
                stack.callback(mirror.close)
                nursery.start_soon(self._follow, actor, mirror)
                pulse = Subscriber(
                    self.paths.ipc_endpoint(actor, "pub"),
                    (),
                    lambda _e, _d: None,
                    consumer=f"ui-pulse<-{actor}",
                    on_other=functools.partial(self._heard_event, actor),
                )
                nursery.start_soon(pulse.run)
                nursery.start_soon(self._watch_pulse, actor)
            gateway = await stack.enter_async_context(
                open_rpc_client(
                    self.paths.ipc_endpoint(gw.CONTRACT.actor, "rpc"), timeout=MIRRORS_TIMEOUT_S
                )
            )
            nursery.start_soon(self._follow_remotes, gateway)
            nursery.start_soon(self._follow_history)
            nursery.start_soon(self._watch_pids)
            nursery.start_soon(self.vault.run)
            nursery.start_soon(self.runs.run)
            task_status.started()
            await trio.sleep_forever()

    async def _follow(self, actor: str, mirror: Mirror[Any]) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(mirror.run)
            seen = (-1, -1)
            shown: Any = None
            while True:
                await mirror.wait_until(functools.partial(_moved, since=seen))
                snapshot = mirror.snapshots != seen[0]
                if snapshot:
                    self._heard(actor)  # a snapshot is an answer: the actor is up
                seen = (mirror.snapshots, mirror.applied)
                if snapshot and actor == "ptyd":
                    self._history_poke.set()
                if actor == "supervisor":
                    self._pids_poke.set()
                # The projections return the same object for an event that changes
                # nothing the UI shows; a snapshot equal to what is shown (a narrowed
                # mirror's check at its first heartbeat) changes nothing either.
                if mirror.state is not shown and not (snapshot and mirror.state == shown):
                    shown = mirror.state
                    self._changed(actor)

    async def _follow_history(self) -> None:
        while True:
            await self._history_poke.wait()
            self._history_poke = trio.Event()
            try:
                listed: ptyd.SessionList = await self.invoke(
                    "ptyd", ptyd.LIST, ptyd.ListArgs(history=True)
                )
            except OrcaError as exc:  # ptyd went away again: its next snapshot asks
                log.info("ptyd did not list its ended terminals: %s", exc)
                continue
            history = {s.session_id: s for s in listed.sessions if s.archived}
            if history != self.history:
                self.history = history
                self._changed("ptyd")

    # -- remote hosts ------------------------------------------------------------------
    async def _follow_remotes(self, gateway: RpcClient) -> None:
        """Keep ``self.remote`` as the local gateway mirrors it: re-read ``gateway.mirrors``
        on its ``mirrorChanged``/``hostStatus`` events (only while a host is known)."""
        pulse = Subscriber(
            self.paths.ipc_endpoint(gw.CONTRACT.actor, "pub"),
            (gw.MIRROR_CHANGED, gw.HOST_STATUS),
            self._remote_event,
            consumer="ui<-gateway",
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pulse.run)
            while True:
                self._remote_poke = trio.Event()
                if any_known_host(self.paths):
                    await self._read_remotes(gateway)
                elif self.remote:
                    self.remote = []
                    self._changed("remote")
                with trio.move_on_after(REMOTE_REFRESH_S):
                    await self._remote_poke.wait()

    def _remote_event(self, _event: Event, _data: Any) -> None:
        self._remote_poke.set()

    async def _read_remotes(self, gateway: RpcClient) -> None:
        try:
            reply: gw.MirrorList = await gateway.invoke(gw.MIRRORS, None)
            hosts = reply.hosts
        except OrcaError as exc:
            # The local gateway is down: what it last said is kept, and can no longer
            # be verified (never shown as live, never cleared).
            log.info("the local gateway did not give its mirrors: %s", exc)
            now = time.time()
            hosts = [
                m
                if not m.link.reachable
                else msgspec.structs.replace(
                    m, link=msgspec.structs.replace(m.link, reachable=False, unverifiable_since=now)
                )
                for m in self.remote
            ]
        if hosts != self.remote:
            self.remote = hosts
            self._changed("remote")

    def _heard_event(self, actor: str, _event: Event) -> None:
        self._heard(actor)

    def _heard(self, actor: str) -> None:
        self.last_heard[actor] = time.monotonic()
        self._beats[actor].set()
        if not self.alive[actor]:
            self.alive[actor] = True
            self._changed("health")

    async def _watch_pulse(self, actor: str) -> None:
        while True:
            beat = self._beats[actor] = trio.Event()
            with trio.move_on_after(SILENT_AFTER_S):
                await beat.wait()
                continue
            if self.alive[actor]:
                self.alive[actor] = False
                self._changed("health")
            await beat.wait()

    def _pid_of(self, actor: str) -> int | None:
        service = self.service
        if actor == "supervisor":
            return service.supervisor_pid
        status = service.actors.get(actor)
        return None if status is None else status.pid

    async def _watch_pids(self) -> None:
        """One pidfd wait per followed actor's current pid (orcad's word for it)."""
        async with trio.open_nursery() as nursery:
            while True:
                self._pids_poke = trio.Event()
                for actor in ACTORS:
                    pid = self._pid_of(actor)
                    watched = self._watched_pids.get(actor)
                    if watched is not None and watched[0] == pid:
                        continue
                    if watched is not None:
                        watched[1].cancel()
                        del self._watched_pids[actor]
                    if pid is not None:
                        scope = trio.CancelScope()
                        self._watched_pids[actor] = (pid, scope)
                        nursery.start_soon(self._watch_pid, actor, pid, scope)
                await self._pids_poke.wait()

    async def _watch_pid(self, actor: str, pid: int, scope: trio.CancelScope) -> None:
        with scope:
            try:
                fd: int | None = os.pidfd_open(pid)
            except ProcessLookupError:  # gone already
                fd = None
            except OSError:  # no pidfd here: silence will tell
                return
            if fd is not None:
                try:
                    await trio.lowlevel.wait_readable(fd)
                finally:
                    os.close(fd)
            if self._watched_pids.get(actor, (None,))[0] == pid and self.alive[actor]:
                self.alive[actor] = False
                self._changed("health")

    # -- requests ------------------------------------------------------------------------
    async def invoke(self, actor: str, op: Op[Any, Any], args: Any = None, **kw: Any) -> Any:
        return await self.clients[actor].invoke(op, args, **kw)

    async def save_session(self, session: WorkspaceSessionState) -> store_contract.SessionWritten:
        """Write the layout fields (``session.patch``) at the revision we know."""
        args = store_contract.SessionPatchArgs(
            patch=tab_groups.layout_patch(session), revision=self.store.revision
        )
        result: store_contract.SessionWritten = await self.invoke(
            "store", store_contract.SESSION_PATCH, args
        )
        return result

    async def spawn(
        self,
        worktree_id: str,
        cwd: str,
        argv: list[str],
        pane_key: str,
        cols: int,
        rows: int,
        env: dict[str, str] | None = None,
    ) -> ptyd.SpawnResult:
        args = ptyd.SpawnArgs(
            argv=argv,
            cwd=cwd,
            worktree_id=worktree_id,
            cols=max(1, cols),
            rows=max(1, rows),
            pane_key=pane_key,
            env=env,
            # The shell `orca ui` runs in is the user's: its panes start in its
            # environment, as `orca term new`'s do (issue 40).
            user_env=user_environment(os.environ),
        )
        result: ptyd.SpawnResult = await self.invoke("ptyd", ptyd.SPAWN, args)
        return result

    async def resize(self, session_id: str, cols: int, rows: int) -> None:
        args = ptyd.ResizeArgs(session_id=session_id, cols=cols, rows=rows)
        await self.invoke("ptyd", ptyd.RESIZE, args)

    async def screen(self, session_id: str) -> tuple[bytes, int]:
        """ptyd's screen of a session now (``term.attach`` without a lease: the pane's
        stream is what counts it) and the offset it is at."""
        reply: ptyd.AttachResult = await self.invoke(
            "ptyd", ptyd.ATTACH, ptyd.AttachArgs(session_id=session_id)
        )
        return reply.data, reply.end

    async def close_session(self, session_id: str) -> None:
        """End a terminal by the retirement protocol (ptyd's ``term.close``: its pane
        retired in store and hooks); one already gone is no error."""
        from orca.wire.errors import NotFound

        try:
            await self.invoke(
                "ptyd", ptyd.CLOSE, ptyd.SessionArgs(session_id=session_id), timeout=CLOSE_TIMEOUT_S
            )
        except NotFound:
            pass

    async def retire_pane(self, pane_key: str) -> None:
        """Close a pane by the retirement protocol (docs/protocols.md §2): ptyd's
        ``term.close`` ends the PTY and retires the pane in store and hooks; a pane
        without a terminal is retired in the store directly."""
        tab_id, _, leaf_id = pane_key.partition(":")
        row = self.session_for_pane(pane_key)
        if row is not None:
            await self.invoke(
                "ptyd",
                ptyd.CLOSE,
                ptyd.SessionArgs(session_id=row.session_id),
                timeout=CLOSE_TIMEOUT_S,
            )
        # Idempotent: a no-op when term.close already retired it (and the only way for
        # a pane without a terminal).
        await self.invoke(
            "store",
            store_contract.SESSION_RETIRE_PANE,
            store_contract.RetirePaneArgs(tab_id=tab_id, leaf_id=leaf_id),
        )

    async def ack(self, pane_key: str | None) -> None:
        await self.invoke("hooks", hooks.ACK, hooks.AckArgs(pane_key=pane_key))

    async def restart_actor(self, name: str) -> None:
        await self.invoke("supervisor", sup.RESTART, sup.RestartArgs(name=name))

    async def create_worktree(self, repo_id: str, name: str, base: str | None) -> gitwatch.Created:
        args = gitwatch.CreateArgs(repo_id=repo_id, name=name, base=base or None, source="ui")
        result: gitwatch.Created = await self.invoke(
            "gitwatch", gitwatch.WORKTREE_CREATE, args, timeout=60
        )
        return result

    async def remove_worktree(self, worktree_id: str, force: bool) -> None:
        args = gitwatch.RemoveArgs(worktree_id=worktree_id, force=force)
        await self.invoke("gitwatch", gitwatch.WORKTREE_REMOVE, args, timeout=60)

    async def rename_worktree(self, worktree_id: str, new_name: str) -> gitwatch.Renamed:
        args = gitwatch.RenameArgs(worktree_id=worktree_id, new_name=new_name)
        result: gitwatch.Renamed = await self.invoke(
            "gitwatch", gitwatch.WORKTREE_RENAME, args, timeout=60
        )
        return result
