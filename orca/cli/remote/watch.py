"""Remote hosts' rows in ``orca watch``: labelled lines, unverifiable on link loss.

Only imported when a remote host is known (``orca.remote.any_known_host``), so a
local-only ``orca watch`` stays what it was. Mirror, never merge (seed 03): the rows
come from the local gateway's mirrors (``gateway.mirrors``); the gateway publishes
``gateway.hostStatus`` for each status change a mirror applies (printed as it comes,
so a transition is never lost between two reads, and ``--notify`` sees it) and
``gateway.mirrorChanged`` whenever a mirror changed; on the latter this module re-reads
the mirrors and prints what the events did not already say (a link's state, a
resync's difference; a row's ``rev`` keeps an event that is older than a read from
being printed after it). No polling: the watch sleeps in one poll on the hooks
subscription and the gateway's.

Every line carries its host (``host``, ``hostId``, ``verifiable``,
``unverifiableSince``; local lines ``host: "local"``); a remote agent's line its
``handle`` as ``orca worktree ps`` shows it (``HOST:<terminal handle>``). When a host's link is lost, a
``{"event": "link", "verifiable": false, ...}`` line, then each of its rows once more,
as ``worktree ps`` shows them: ``displayState: "unverifiable"`` with ``lastSeen`` (its
last known state) - kept, never shown as live, never cleared. When the link is back,
a ``link`` line with ``verifiable: true`` and every row as it is now. A mirror resync
(new epoch, gap) is diffed like any change, so no row is lost or printed twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import zmq

from orca.cli.remote.readers import _label, _local_label, _mirrors, _unverifiable
from orca.cli.watch_lines import clear_line, set_line
from orca.views.agent_handles import LineHandles

if TYPE_CHECKING:
    from orca.contracts.gateway import HostMirror

Line = dict[str, object]
Emit = Callable[[Line], None]
GATEWAY_ACTOR = "gateway"


def _row_key(row: Any) -> tuple[object, ...]:
    return (row.rev, row.state, row.unread, row.detail, row.worktree_id, row.agent)


class RemoteWatch:
    """Follows the local gateway's mirrors for ``orca watch``."""

    def __init__(self) -> None:
        from orca.client.sync import endpoint_for
        from orca.contracts import gateway as gw
        from orca.contracts.sys import HEARTBEAT_TYPE

        self._heartbeat = HEARTBEAT_TYPE
        ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
        self.socket = ctx.socket(zmq.SUB)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.RCVHWM, 10_000)
        self._host_status = gw.HOST_STATUS
        for topic in (gw.MIRROR_CHANGED.type, gw.HOST_STATUS.type, HEARTBEAT_TYPE):
            self.socket.setsockopt(zmq.SUBSCRIBE, topic.encode())
        self.socket.connect(endpoint_for(GATEWAY_ACTOR, None, "pub"))
        self.local = _local_label()
        self._rows: dict[str, dict[str, tuple[tuple[object, ...], Any]]] = {}
        self._reachable: dict[str, bool] = {}
        self._labels: dict[str, dict[str, Any]] = {}
        self._revs: dict[tuple[str, str], int] = {}  # (host, pane) -> highest rev shown
        self._names: dict[str, LineHandles] = {}  # host -> its agents' handles
        self._gateway_epoch: str | None = None

    def close(self) -> None:
        self.socket.close(linger=0)

    def label_local(self, line: Line) -> Line:
        return {**line, **self.local}

    # -- mirror diffs --------------------------------------------------------------
    def refresh(self, emit: Emit) -> None:
        """Re-read the mirrors and emit what changed since the last read."""
        now_ms = time.time_ns() // 1_000_000
        for mirror in _mirrors():
            self._host(mirror, now_ms, emit)

    def _named(self, host: str, line: Line) -> Line:
        """``line`` with its agent's handle, ``HOST:<handle>`` as ``orca worktree ps``
        shows it (the host's terminals as last mirrored)."""
        return {"event": line["event"], "handle": self._names[host].name(line), **line}

    def _host(self, mirror: HostMirror, now_ms: int, emit: Emit) -> None:
        link = mirror.link
        label = self._labels[link.name] = _label(link)
        paths = [(str(w.get("id", "")), str(w.get("path", ""))) for w in mirror.worktrees]
        names = self._names.setdefault(link.name, LineHandles([], prefix=f"{link.name}:"))
        names.update(mirror.sessions, paths)
        before = self._rows.get(link.name)
        was = self._reachable.get(link.name)
        self._reachable[link.name] = link.reachable
        rows = {r.pane_key: (_row_key(r), r) for r in mirror.rows}
        stale = _unverifiable(link)
        if stale is not None:
            if was is False and before is not None:
                return  # still unreachable: nothing it says is new
            kept = before if before is not None else rows
            self._rows[link.name] = kept
            emit({"event": "link", **label, "text": stale, "rows": len(kept)})
            for _, row in kept.values():
                line = self._named(link.name, {**set_line(row, now_ms), **label})
                line["lastSeen"] = line["displayState"]
                line["displayState"] = "unverifiable"
                line["unverifiableDetail"] = stale
                emit(line)
            return
        self._rows[link.name] = rows
        if was is False:
            emit({"event": "link", **label, "text": "live again", "rows": len(rows)})
            before = None  # every row once more, as it is now
        for pane, (key, row) in rows.items():
            self._seen(link.name, pane, row.rev)
            if before is None or before.get(pane, (None,))[0] != key:
                emit(self._named(link.name, {**set_line(row, now_ms), **label}))
        for pane, (_, row) in (before or {}).items():
            if pane not in rows:
                gone: Line = {
                    "event": "clear",
                    "paneKey": pane,
                    "worktreeId": row.worktree_id,
                    "reason": "cleared",
                    **label,
                }
                emit(self._named(link.name, gone))

    def _seen(self, host: str, pane: str, rev: int) -> bool:
        """Record ``rev`` for the pane; False if a higher or equal one was shown."""
        if len(self._revs) > 100_000:
            self._revs.clear()
        if self._revs.get((host, pane), -1) >= rev:
            return False
        self._revs[(host, pane)] = rev
        return True

    def status(self, change: Any, emit: Emit) -> None:
        """One ``gateway.hostStatus``: printed now, unless the host is not (yet) shown
        as reachable here (the next read of the mirrors shows it) or already shown."""
        host = change.host
        rows = self._rows.get(host)
        if not self._reachable.get(host) or rows is None:
            return
        label = self._labels[host]
        if change.row is not None:
            row = change.row
            if self._seen(host, row.pane_key, row.rev):
                rows[row.pane_key] = (_row_key(row), row)
                now_ms = time.time_ns() // 1_000_000
                emit(self._named(host, {**set_line(row, now_ms), **label}))
        elif change.cleared is not None and rows.pop(change.cleared.pane_key, None) is not None:
            emit(self._named(host, {**clear_line(change.cleared), **label}))

    # -- the combined wait -----------------------------------------------------------
    def receive(self, sub: Any, timeout: float, emit: Emit) -> Any:
        """The next local (hooks) event as ``sub.receive`` gives it, or None after
        ``timeout``; mirror changes arriving meanwhile are emitted as lines."""
        deadline = time.monotonic() + timeout
        poller = zmq.Poller()
        poller.register(sub.socket, zmq.POLLIN)
        poller.register(self.socket, zmq.POLLIN)
        while True:
            got = sub.receive(0.01)  # at once when queued (0 would never poll)
            if got is not None:
                return got
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready = dict(poller.poll(int(remaining * 1000) + 1))
            if self.socket in ready and self._drain(emit):
                self.refresh(emit)

    def _drain(self, emit: Emit) -> bool:
        """Read every queued gateway event (status changes are printed in order);
        whether the mirrors are worth re-reading (a change, or the first heartbeat of
        a gateway: it may have started since)."""
        from orca.wire.envelope import decode_event
        from orca.wire.errors import BadFrame

        changed = False
        while True:
            try:
                frames = self.socket.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return changed
            try:
                event = decode_event(frames[-1])
            except BadFrame:
                continue
            if event.type == self._host_status.type:
                try:
                    self.status(self._host_status.decode(event.data), emit)
                except Exception:  # a malformed event: the next read of the mirrors says it
                    changed = True
                continue
            if event.type != self._heartbeat or event.epoch != self._gateway_epoch:
                changed = True
            self._gateway_epoch = event.epoch
