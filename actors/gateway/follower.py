"""Follow remote hosts: one mirror per host in ``remote-hosts.json`` (``orca host add``).

Per host, one task and one CURVE client of its gateway (our client key, its pinned
server key, heartbeats from ``orca.remote.hosts.Heartbeats``). The Clone order: take
the ring's head, then snapshot every source, then long-poll events from that head; a
gap, a new gateway epoch or a source's seq gap means re-snapshot (``hostmirror``).
Any failed exchange marks the host unreachable (rows kept, ``unverifiable_since``
set) and the loop starts over, which is the resync on reconnection.

Nothing received here is written anywhere: the mirrors live in this process's memory
and are served read-only (``gateway.mirrors``). The host list is re-read whenever its
file changes (inotify on the data folder: ``orca host add`` is followed at once, and
nothing wakes while it does not change; every ``HOSTS_POLL_S`` where inotify cannot
watch); a removed host's task ends and its mirror is dropped.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import trio

from actors.gateway.hostmirror import HostMirrorState
from actors.gateway.listener import RELAY_TIMEOUT_S
from actors.gateway.sshlink import SshLink, SshLinkDown
from orca.actor.client import RpcClient
from orca.actor.inotify import Inotify
from orca.actor.inotifyabi import (
    IN_CLOSE_WRITE,
    IN_CREATE,
    IN_DELETE,
    IN_MOVED_FROM,
    IN_MOVED_TO,
    IN_ONLYDIR,
)
from orca.contracts import gateway as gw
from orca.contracts import gitwatch, hooks, ptyd, store
from orca.model.codec import to_builtins
from orca.paths import OrcaPaths
from orca.remote import KNOWN_HOSTS_FILE
from orca.remote.hosts import Heartbeats, HostConfigError, RemoteHost, link_client, load_hosts
from orca.wire.errors import OrcaError, Timeout

log = logging.getLogger(__name__)

# Where inotify is unavailable (or its watch limit is reached), the host list is read
# this often instead.
HOSTS_POLL_S = 1.0
_HOSTS_EVENTS = IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ONLYDIR
# A long-poll waits this long on the remote side; our timeout adds the link's heartbeat
# timeout, so a silent link is declared lost within poll + heartbeat timeout.
POLL_WAIT_S = 1.0
RETRY_S = 0.5
# An SSH host that keeps failing is tried again after 0.5, 1, 2, 4, 8, 8… s: a laptop
# back from sleep relinks within 8 s, a dead host costs one ssh start per 8 s.
SSH_MAX_BACKOFF_S = 8.0
# The store first: its repos label the worktree rows gitwatch lists (a reader between
# two loads sees a row's labels before the row, never a row without them).
SNAPSHOT_ORDER = ("store", "hooks", "ptyd", "gitwatch")


def _first(group: BaseExceptionGroup[Any]) -> BaseException:
    """The first exception of a (possibly nested) group: the one a message names."""
    first: BaseException = group
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    return first


class Follower:
    def __init__(
        self,
        paths: OrcaPaths,
        beats: Heartbeats,
        on_change: Callable[[HostMirrorState], None] | None = None,
        on_status: Callable[[HostMirrorState, Any, Any], None] | None = None,
        on_hosts: Callable[[dict[str, RemoteHost]], None] | None = None,
    ) -> None:
        self.paths = paths
        self._on_hosts = on_hosts
        self.beats = beats
        self._on_change = on_change
        self._on_status = on_status
        self._notified: dict[str, int] = {}
        self.mirrors: dict[str, HostMirrorState] = {}
        self._scopes: dict[str, tuple[RemoteHost, trio.CancelScope]] = {}
        # The live ssh master of each SSH host (its pid: `gateway.status`, tests).
        self.ssh_links: dict[str, SshLink] = {}

    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            watch = self._watch_hosts_file()
            try:
                while True:
                    self._reconcile(nursery)
                    if watch is None:
                        await trio.sleep(HOSTS_POLL_S)
                        continue
                    while not any(e.name in (KNOWN_HOSTS_FILE, "") for e in await watch.read()):
                        pass  # another file of the data folder changed
            finally:
                if watch is not None:
                    watch.close()

    def _watch_hosts_file(self) -> Inotify | None:
        """An inotify watch of the folder holding the host list (its file is replaced
        by a rename), or None: then the list is read every ``HOSTS_POLL_S``."""
        folder = str(self.paths.data_dir)
        try:
            watch = Inotify()
        except OSError as exc:
            log.warning("cannot watch the host list (%s): read every %gs", exc, HOSTS_POLL_S)
            return None
        try:
            watch.add_watch(folder, _HOSTS_EVENTS)
        except OSError as exc:
            log.warning("cannot watch %s (%s): host list read every %gs", folder, exc, HOSTS_POLL_S)
            watch.close()
            return None
        return watch

    def _reconcile(self, nursery: trio.Nursery) -> None:
        try:
            hosts = load_hosts(self.paths)
        except HostConfigError as exc:
            log.warning("remote hosts unreadable (%s): keeping the current ones", exc)
            return
        if self._on_hosts is not None:
            self._on_hosts(hosts)
        for name, (host, scope) in list(self._scopes.items()):
            if hosts.get(name) != host:
                scope.cancel()
                del self._scopes[name]
                self.mirrors.pop(name, None)
        for name, host in hosts.items():
            if name not in self._scopes:
                scope = trio.CancelScope()
                self._scopes[name] = (host, scope)
                self.mirrors[name] = HostMirrorState(name, host.host_id, host.endpoint)
                nursery.start_soon(self._follow, host, scope)

    async def _follow(self, host: RemoteHost, scope: trio.CancelScope) -> None:
        with scope:
            mirror = self.mirrors[host.name]
            # A reply the remote gateway could not get from its own actor comes back as
            # an error within RELAY_TIMEOUT_S; only silence past this is the link.
            timeout = POLL_WAIT_S + max(self.beats.timeout_s, RELAY_TIMEOUT_S + 0.5)
            delay = RETRY_S / 2  # doubled before its first use
            while True:
                attempt = time.time()
                client = RpcClient(
                    host.endpoint, timeout=timeout, curve=link_client(self.paths, host, self.beats)
                )
                try:
                    async with trio.open_nursery() as nursery:
                        if host.ssh is not None:  # the link rides in ssh: connect it first
                            link = SshLink(self.paths, host, self.beats)
                            self.ssh_links[host.name] = link
                            await nursery.start(link.run)
                        await nursery.start(client.run)
                        await self._sync(client, mirror)
                except* OrcaError as group:
                    exc = _first(group)
                    if mirror.reachable:
                        log.warning("remote host %s unreachable: %s", host.name, exc)
                    code = getattr(exc, "code", "error")
                    refused = self._forward_refusal(host.name)
                    mirror.mark_unreachable(time.time(), refused or f"{code}: {exc}")
                except* SshLinkDown as group:  # after OrcaError: ssh's reason is the one kept
                    down = _first(group)
                    log.warning("remote host %s: ssh link down: %s", host.name, down)
                    mirror.mark_unreachable(time.time(), f"ssh: {down}")
                except* Exception as group:  # a peer's bytes must never end this actor
                    log.error("remote host %s: mirror failed: %r", host.name, _first(group))
                    mirror.mark_unreachable(time.time(), f"error: {_first(group)!r}")
                finally:
                    client.close()
                    self.ssh_links.pop(host.name, None)
                self.notify(mirror)
                if host.ssh is None:
                    await trio.sleep(RETRY_S)
                    continue
                # ssh hosts: back off (each try starts an ssh), from scratch once a try
                # got as far as a sync.
                synced = mirror.last_contact is not None and mirror.last_contact >= attempt
                delay = RETRY_S if synced else min(delay * 2, SSH_MAX_BACKOFF_S)
                await trio.sleep(delay)

    def _forward_refusal(self, name: str) -> str | None:
        """Why an SSH host's forward could not reach its gateway, as ssh said it
        (``channel N: open failed: …``: the socket gone there, forwarding refused)."""
        link = self.ssh_links.get(name)
        if link is None:
            return None
        said = [ln for ln in link.stderr_text.splitlines() if "open failed" in ln]
        return f"ssh: forward refused there: {said[-1].strip()[:200]}" if said else None

    async def _snapshot(self, client: RpcClient, mirror: HostMirrorState, src: str) -> None:
        """Load ``src``; if the remote gateway says its actor is down (an error reply,
        not silence), that source keeps its rows and the link stays up."""
        try:
            await self._load(client, mirror, src)
        except Timeout:
            raise
        except OrcaError as exc:
            log.info("remote host %s: %s not loaded: %s", mirror.name, src, exc)
            mirror.source_errors[src] = str(exc)[:200]
        else:
            mirror.source_errors.pop(src, None)

    async def _load(self, client: RpcClient, mirror: HostMirrorState, src: str) -> None:
        if src == "hooks":
            mirror.load_hooks(await client.invoke(hooks.SNAPSHOT))
        elif src == "ptyd":
            mirror.load_ptyd(await client.invoke(ptyd.SNAPSHOT))
        elif src == "gitwatch":
            snap = await client.invoke(gitwatch.SNAPSHOT)
            listed = await client.invoke(gitwatch.WORKTREE_LIST, gitwatch.ListArgs())
            rows: list[dict[str, Any]] = [to_builtins(r) for r in listed.worktrees]
            mirror.load_gitwatch(snap, rows)
        elif src == "store":
            repos = await client.invoke(store.REPO_LIST)
            metas = await client.invoke(store.WORKTREE_META_LIST)
            mirror.load_store(
                [to_builtins(r) for r in repos.repos],
                {k: to_builtins(m) for k, m in metas.worktree_meta.items()},
            )

    def notify(self, mirror: HostMirrorState) -> None:
        """Tell ``on_status`` each status change applied (``gateway.hostStatus``), then
        ``on_change`` (``gateway.mirrorChanged``) once per new ``version`` of a mirror."""
        for row, cleared in mirror.take_changes():
            if self._on_status is not None:
                try:
                    self._on_status(mirror, row, cleared)
                except Exception:
                    log.exception("remote host %s: status notification failed", mirror.name)
        if self._on_change is None or self._notified.get(mirror.name) == mirror.version:
            return
        self._notified[mirror.name] = mirror.version
        try:
            self._on_change(mirror)
        except Exception:  # a notification must never end the follower
            log.exception("remote host %s: change notification failed", mirror.name)

    async def _sync(self, client: RpcClient, mirror: HostMirrorState) -> None:
        while True:  # one round per (re)snapshot of everything
            head = await client.invoke(gw.EVENTS, gw.EventsArgs(after=-1, wait_s=0))
            for src in SNAPSHOT_ORDER:
                await self._snapshot(client, mirror, src)
            if mirror.unverifiable_since is not None or not mirror.reachable:
                log.info("remote host %s: in sync (epoch %s)", mirror.name, head.epoch)
            mirror.mark_contact(time.time())
            mirror.resyncs += 1
            self.notify(mirror)
            cursor = head.next
            while True:
                batch = await client.invoke(
                    gw.EVENTS,
                    gw.EventsArgs(epoch=head.epoch, after=cursor, wait_s=POLL_WAIT_S),
                )
                mirror.mark_contact(time.time())
                if batch.gap:
                    break
                stale = mirror.apply(batch.events)
                for src in (s for s in SNAPSHOT_ORDER if s in stale):
                    await self._snapshot(client, mirror, src)
                self.notify(mirror)
                cursor = batch.next

    def links(self) -> list[gw.HostLink]:
        return [m.link() for m in self.mirrors.values()]

    def views(self) -> list[gw.HostMirror]:
        return [m.view() for m in self.mirrors.values()]
