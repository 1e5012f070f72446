"""One remote host's mirror (pure): snapshots and relayed events in, rows out.

The zguide "Clone" rules per source (``hooks``, ``ptyd``, ``gitwatch``): a source is
loaded from its snapshot (``epoch``, ``seq``); a relayed event of that source is applied
if its seq is the next one, dropped if already reflected, and anything else (a seq gap,
a new epoch, a heartbeat announcing a seq we have not seen) asks for a new snapshot of
that source (``apply`` returns the sources to re-snapshot). ``gitwatch`` events carry
no rows here: any of them asks for a fresh ``worktree.list``. ``store``: only the repo
and worktree-note events are relayed (its seq also counts events that are not), so
any of them, or a new store epoch, asks for a fresh ``repo.list`` + ``worktreeMeta.list``.

``version`` grows whenever what ``view`` shows may have changed (the gateway then
publishes ``gateway.mirrorChanged``, which ``orca watch`` follows).

Link state: ``reachable`` only while the last exchange succeeded; when it fails the
rows stay as they were (never cleared, never merged into local state) and
``unverifiable_since`` says since when nobody could confirm them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from orca.contracts import gitwatch, hooks, ptyd
from orca.contracts.gateway import HostLink, HostMirror, RelayedEvent
from orca.contracts.sys import HEARTBEAT_TYPE
from orca.model.agent_status import AgentStatusRow, PaneFate

SOURCES = ("hooks", "ptyd", "gitwatch", "store")
# Rows one remote host may put in our memory (a hostile host cannot grow us further).
MAX_ROWS = 10_000
MAX_SESSIONS = 10_000
MAX_WORKTREES = 10_000
MAX_REPOS = 2_000


@dataclass
class SourceCursor:
    epoch: str
    seq: int


@dataclass
class HostMirrorState:
    name: str
    host_id: str
    endpoint: str
    rows: dict[str, AgentStatusRow] = field(default_factory=dict)
    fates: list[PaneFate] = field(default_factory=list)
    sessions: dict[str, ptyd.SessionRow] = field(default_factory=dict)
    worktrees: list[dict[str, Any]] = field(default_factory=list)
    repos: list[dict[str, Any]] = field(default_factory=list)
    worktree_meta: dict[str, dict[str, Any]] = field(default_factory=dict)
    version: int = 0
    # Status changes applied since the follower last took them (``take_changes``).
    changes: list[tuple[AgentStatusRow | None, hooks.StatusCleared | None]] = field(
        default_factory=list
    )
    cursors: dict[str, SourceCursor] = field(default_factory=dict)
    reachable: bool = False
    unverifiable_since: float | None = None
    last_contact: float | None = None
    resyncs: int = 0
    error: str = "not contacted yet"
    dropped: int = 0
    source_errors: dict[str, str] = field(default_factory=dict)

    # -- link ---------------------------------------------------------------------
    def mark_contact(self, now: float) -> None:
        if not self.reachable:
            self.version += 1
        self.reachable = True
        self.unverifiable_since = None
        self.last_contact = now
        self.error = ""

    def mark_unreachable(self, now: float, error: str) -> None:
        if self.reachable or self.unverifiable_since is None:
            self.unverifiable_since = now
            self.version += 1
        self.reachable = False
        self.error = error[:300]

    def _label(self, row: AgentStatusRow) -> AgentStatusRow:
        """The row under this host's execution host id (in this mirror only)."""
        return msgspec.structs.replace(row, host_id=self.host_id)

    # -- snapshots -------------------------------------------------------------------
    def load_hooks(self, snap: hooks.Snapshot) -> None:
        self.changes = []  # the snapshot supersedes them (readers diff it)
        self.rows = {r.pane_key: self._label(r) for r in snap.rows[:MAX_ROWS]}
        self.fates = list(snap.fates[:MAX_ROWS])
        self.cursors["hooks"] = SourceCursor(snap.epoch, snap.seq)
        self.version += 1

    def load_ptyd(self, snap: ptyd.Snapshot) -> None:
        self.sessions = {
            s.session_id: msgspec.structs.replace(s, host_id=self.host_id)
            for s in snap.sessions[:MAX_SESSIONS]
        }
        self.cursors["ptyd"] = SourceCursor(snap.epoch, snap.seq)
        self.version += 1

    def load_gitwatch(self, snap: gitwatch.GitwatchSnapshot, rows: list[dict[str, Any]]) -> None:
        self.worktrees = rows[:MAX_WORKTREES]
        self.cursors["gitwatch"] = SourceCursor(snap.epoch, snap.seq)
        self.version += 1

    def load_store(self, repos: list[dict[str, Any]], meta: dict[str, dict[str, Any]]) -> None:
        """The remote store's repos and worktree notes (builtins), read-only labels.
        ``repo.list`` carries no epoch: the store's next relayed event sets it."""
        self.repos = repos[:MAX_REPOS]
        self.worktree_meta = dict(list(meta.items())[:MAX_WORKTREES])
        previous = self.cursors.get("store")
        self.cursors["store"] = SourceCursor(previous.epoch if previous else "", 0)
        self.version += 1

    # -- events --------------------------------------------------------------------
    def apply(self, events: list[RelayedEvent]) -> set[str]:
        """Fold relayed events in; the sources whose copy may now be wrong (re-snapshot)."""
        stale: set[str] = set()
        for event in events:
            src = event.src
            cursor = self.cursors.get(src)
            if src not in SOURCES or src in stale:
                continue
            if cursor is None:  # never loaded (its actor was down): its events say it is up
                stale.add(src)
                continue
            if src == "store" and not cursor.epoch:
                cursor.epoch = event.epoch  # repo.list has no epoch: the first one seen
            if event.epoch != cursor.epoch:
                stale.add(src)
                continue
            if src == "store":  # only some of its events are relayed: any one re-lists
                if event.type != HEARTBEAT_TYPE:
                    stale.add(src)
                continue
            if event.type == HEARTBEAT_TYPE:
                if event.seq > cursor.seq:
                    stale.add(src)
                continue
            if event.seq <= cursor.seq:
                continue
            if event.seq != cursor.seq + 1:
                stale.add(src)
                continue
            try:
                if not self._apply_one(event):
                    stale.add(src)
                else:
                    self.version += 1
            except (msgspec.ValidationError, ValueError, TypeError, KeyError):
                self.dropped += 1
                stale.add(src)
                continue
            cursor.seq = event.seq
        return stale

    def _apply_one(self, event: RelayedEvent) -> bool:
        """Apply one in-order event; False when only a snapshot can tell its effect."""
        if event.src == "hooks":
            if event.type == hooks.STATUS_SET.type:
                row = hooks.STATUS_SET.decode(event.data).row
                if row.pane_key not in self.rows and len(self.rows) >= MAX_ROWS:
                    return False
                self.rows[row.pane_key] = self._label(row)
                self._changed(self.rows[row.pane_key], None)
            elif event.type == hooks.STATUS_CLEARED.type:
                cleared = hooks.STATUS_CLEARED.decode(event.data)
                self.rows.pop(cleared.pane_key, None)
                self._changed(None, cleared)
            return True
        if event.src == "ptyd":
            if event.type == ptyd.SPAWNED.type:
                spawned = ptyd.SPAWNED.decode(event.data)
                if len(self.sessions) >= MAX_SESSIONS:
                    return False
                self.sessions[spawned.session_id] = msgspec.structs.replace(
                    msgspec.convert(msgspec.to_builtins(spawned), ptyd.SessionRow),
                    host_id=self.host_id,
                )
            elif event.type == ptyd.EXIT.type:
                exited = ptyd.EXIT.decode(event.data)
                session = self.sessions.get(exited.session_id)
                if session is not None:
                    self.sessions[exited.session_id] = msgspec.structs.replace(
                        session,
                        running=False,
                        exit_code=exited.exit_code,
                        end_offset=exited.end_offset,
                    )
            elif event.type == ptyd.CLOSED.type:
                self.sessions.pop(ptyd.CLOSED.decode(event.data).session_id, None)
            else:
                return False
            return True
        return False  # gitwatch: re-list

    def _changed(self, row: AgentStatusRow | None, cleared: hooks.StatusCleared | None) -> None:
        if len(self.changes) < MAX_ROWS:  # past it the readers re-read the mirror
            self.changes.append((row, cleared))

    def take_changes(self) -> list[tuple[AgentStatusRow | None, hooks.StatusCleared | None]]:
        changes, self.changes = self.changes, []
        return changes

    def view(self) -> HostMirror:
        return HostMirror(
            link=self.link(),
            rows=list(self.rows.values()),
            fates=list(self.fates),
            sessions=list(self.sessions.values()),
            worktrees=list(self.worktrees),
            repos=list(self.repos),
            worktree_meta=dict(self.worktree_meta),
            version=self.version,
        )

    def link(self) -> HostLink:
        return HostLink(
            name=self.name,
            host_id=self.host_id,
            endpoint=self.endpoint,
            reachable=self.reachable,
            unverifiable_since=self.unverifiable_since,
            last_contact=self.last_contact,
            resyncs=self.resyncs,
            error=self.error,
        )
