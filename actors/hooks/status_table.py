"""The agent-status table: one ingest path, one close (seed 03; architecture §3.3).

(The table of this execution host's agent rows; not to be confused with the ``store``
actor, which hooks only follows: :mod:`actors.hooks.store_follower`.)

Every producer - HTTP hooks, OSC 9999 rows forwarded by ``ptyd``, structured
sessions - becomes a :class:`StatusEvent` and enters
:meth:`AgentStatusTable.apply_normalized_status`.
Nothing else writes a row. Each call returns :class:`TableEffects`: the contract's
event Structs the shell must publish (``StatusSet`` / ``StatusCleared`` of
:mod:`orca.contracts.hooks`) and whether the persisted file needs rescheduling.
Pure: the clock is an argument, no I/O.

Order of the gates in ``apply_normalized_status`` (each rejection names itself):

1. alias resolution, then pane-key shape; a legacy numeric key is accepted only from
   the terminal (in-process OSC) or through a registered alias (seed 03 "遗留的数字
   pane 键");
2. the retired-pane fence (seed 02 §9, architecture §3.2);
3. the producer connection's watermark (replays dropped);
4. the launch-token commitment (hook writes only: ``ptyd`` and structured hosts are
   authenticated RPC peers);
5. evidence age: the table clock never goes backwards, and an event whose
   observation (``now - evidenceAgeMs``, measured on the producer's monotonic clock
   so wall-clock steps between hosts do not matter) is older than the row's is stale -
   and so is one older than the pane's last removal: the evidence age outlives the
   row (seed 03 PR 1b), so a late observation from before a clear, an exit or a
   worktree's removal cannot bring the row back; a live restart of the pane forgets it;
6. priority on write: a lower-ranked source cannot overwrite a live higher-ranked row
   within ``PRIORITY_HOLD_MS``; a restored (unconfirmed) row yields to any live event.

Invariants:

* ``updated_at_ms`` of the rows and the table clock are non-decreasing per pane;
  ``rev`` strictly increases with every applied write.
* a row never persists a terminal handle, a raw token, a structured row or a legacy
  numeric key (the serializer enforces it; :meth:`persistable_rows` filters).
* removing a row (retire, clear, session end) publishes exactly one clear.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from typing import Literal

from msgspec.structs import replace as replace_row

from actors.hooks.pane_authority import (
    KNOWN_WORKTREE_CAPACITY,
    BoundedLru,
    Fence,
    PaneAuthority,
    is_sha256_hex,
    parse_pane_key,
)
from actors.hooks.pty_truth import PtyVerdicts, judge_rows
from orca.contracts.hooks import EndedPty, LivePty, StatusCleared, StatusEventData, StatusSet
from orca.model.agent_status import (
    SOURCE_RANK,
    AgentState,
    AgentStatusRow,
    PaneFate,
    StatusSource,
)
from orca.model.hosts import LOCAL_HOST_ID

# A hook-reporting agent usually also prints OSC 9999. The hook knows the turn
# structure, so OSC may take over a hook row only once the hook has been silent this
# long (hook script removed, agent crashed) - long enough to span one slow tool call.
PRIORITY_HOLD_MS = 5 * 60 * 1000
# Details are one-line labels (tool name, notification text); bound what we store.
MAX_DETAIL_CHARS = 200
MAX_LABEL_CHARS = 64
# Renamed worktrees we still translate (old id -> new id): agents launched before a
# ``git worktree move`` keep reporting the id in their environment until they exit.
# One entry per rename; thousands of renames outlive any agent that saw the old id.
WORKTREE_RENAME_CAPACITY = 4096
# PTY exits remembered for readers (one per pane; a relaunch supersedes it).
FATE_CAPACITY = 1024
# When each pane's row was last removed (one per pane, like the worktree and terminal
# memories): a late observation from before it is stale. A pane cleared this many
# clears ago is far beyond any transport's replay window.
CLEARED_CAPACITY = KNOWN_WORKTREE_CAPACITY
# States that need the user to look: unread until attach or ``orca ack`` (seed 03).
UNREAD_STATES: frozenset[str] = frozenset({"done", "blocked"})

Outcome = Literal["applied", "unchanged", "rejected"]


@dataclass(frozen=True)
class StatusEvent:
    """A normalized status observation, whatever produced it.

    ``state is None`` asks to remove the pane's row (agent session ended).
    ``launch_token_sha256`` is the hash of the launch token; raw tokens stop at the
    boundary. ``evidence_age_ms`` is how old the observation was when sent.
    """

    pane_key: str
    state: AgentState | None
    source: StatusSource
    worktree_id: str = ""
    agent: str = "unknown"
    tab_id: str = ""  # as the hook stated it; the row files its pane key's tab
    detail: str = ""
    session_id: str = ""
    terminal_handle: str | None = None
    structured_host: str | None = None
    launch_token_sha256: str | None = None
    connection_id: str | None = None
    connection_seq: int | None = None
    evidence_age_ms: int = 0
    # Only continues a turn in progress (``working``/``blocked``), never reopens a
    # finished one: Claude Code's SubagentStop may arrive after the main Stop.
    resume_only: bool = False
    # Never ends a turn blocked on a permission (Codex's legacy notify: it fires for
    # side threads too); the agent's own Stop hook does.
    not_while_blocked: bool = False


@dataclass(frozen=True)
class TableEffects:
    outcome: Outcome
    reason: str = ""
    events: tuple[StatusEventData, ...] = ()
    persist: bool = False


def _clear(row: AgentStatusRow, reason: str) -> StatusCleared:
    return StatusCleared(pane_key=row.pane_key, worktree_id=row.worktree_id, reason=reason)


def is_persistable(row: AgentStatusRow) -> bool:
    """Structured rows (the journal is their truth) and legacy numeric keys never persist."""
    if row.structured_host is not None:
        return False
    key = parse_pane_key(row.pane_key)
    return key is not None and not key.is_legacy_numeric


# Bounds on the table (issue 16 item 12: 80,000 pane keys once made a 215 MiB table and
# a 46.6 MB status file rewritten every 2 s). One row per pane by construction; a
# worktree with more panes than this running agents is not a real workspace, and the
# total covers 50 agents x many worktrees for days. The oldest row (by update time) is
# evicted first, published as a clear with reason ``evicted`` and counted in sys.stats.
MAX_ROWS_PER_WORKTREE = 64
MAX_ROWS = 4096
EVICTED = "evicted"


class AgentStatusTable:
    """The one agent-status table of this execution host."""

    def __init__(self, host_id: str = LOCAL_HOST_ID) -> None:
        self.host_id = host_id
        self.authority = PaneAuthority()
        self._rows: dict[str, AgentStatusRow] = {}
        # The worktree of each pane we have heard of, so an OSC row (ptyd sends only
        # the pane key) can be placed once a hook or a restart has named it.
        self._pane_worktrees: BoundedLru[str, str] = BoundedLru(KNOWN_WORKTREE_CAPACITY)
        # Invariant: acyclic - recording old -> new first forgets any rename out of
        # ``new`` (it is current again), so following the chain always ends.
        self._renames: BoundedLru[str, str] = BoundedLru(WORKTREE_RENAME_CAPACITY)
        # The terminal handle of each pane's latest launch (``restart_pane``), so the
        # exit of an older PTY in a relaunched pane removes nothing.
        self._terminals: BoundedLru[str, str] = BoundedLru(KNOWN_WORKTREE_CAPACITY)
        self._fates: BoundedLru[str, PaneFate] = BoundedLru(FATE_CAPACITY)
        # Seed 03: "证据年龄映射, 必须比传输清除存活更久" - the evidence time of each
        # pane's last removal (table clock), kept after the row is gone. Not persisted:
        # a restart forgets it, as it forgets the producers' watermarks.
        self._cleared_at: BoundedLru[str, int] = BoundedLru(CLEARED_CAPACITY)
        # The launch-token hash behind each row's latest hook write: a relaunch whose
        # own first hook beat its ``restart_pane`` (HTTP vs ptyd's queue) is not
        # mistaken for the previous agent's row.
        self._row_tokens: dict[str, str] = {}
        # The connection (ptyd's link) whose message wrote each row, if any.
        self._row_writers: dict[str, str] = {}
        self._clock_ms = 0
        self._rev = 0
        self.evicted = 0  # rows dropped by the bounds above, since start

    # reads -----------------------------------------------------------------
    @property
    def rev(self) -> int:
        return self._rev

    def rows(self) -> list[AgentStatusRow]:
        return sorted(self._rows.values(), key=lambda r: r.pane_key)

    def row(self, pane_key: str) -> AgentStatusRow | None:
        return self._rows.get(self.authority.resolve(pane_key))

    def fates(self) -> list[PaneFate]:
        return sorted((f for _, f in self._fates.items()), key=lambda f: f.pane_key)

    def persistable_rows(self) -> list[AgentStatusRow]:
        return [r for r in self.rows() if is_persistable(r)]

    def worktree_ids(self) -> list[str]:
        """The distinct worktree ids the rows are filed under (to re-resolve at start)."""
        return sorted({r.worktree_id for r in self._rows.values()})

    def current_worktree(self, worktree_id: str) -> str:
        """``worktree_id`` after every rename we have heard of (itself if none)."""
        # The map is acyclic (see ``__init__``); the bound is belt and braces.
        for _ in range(WORKTREE_RENAME_CAPACITY):
            renamed = self._renames.get(worktree_id)
            if renamed is None:
                break
            worktree_id = renamed
        return worktree_id

    # the one ingest path ---------------------------------------------------
    def apply_normalized_status(self, event: StatusEvent, now_ms: int) -> TableEffects:
        """Gate, order and apply one observation; see the module docstring."""
        auth = self.authority
        aliased = auth.is_alias(event.pane_key)
        pane = auth.resolve(event.pane_key)
        key = parse_pane_key(pane)
        if key is None:
            return TableEffects("rejected", "bad_pane_key")
        if key.is_legacy_numeric and not aliased and event.source != "terminal":
            return TableEffects("rejected", "legacy_numeric_pane_key")
        if auth.is_fenced(pane):
            return TableEffects("rejected", "retired_pane")
        if (
            event.connection_id is not None
            and event.connection_seq is not None
            and not auth.accept_sequence(event.connection_id, event.connection_seq)
        ):
            return TableEffects("rejected", "replayed")
        if event.source == "hook":
            token = event.launch_token_sha256
            if token is not None and not is_sha256_hex(token):
                return TableEffects("rejected", "bad_launch_token_hash")
            refused = auth.check_launch_token(pane, token)
            if refused is not None:
                return TableEffects("rejected", refused)

        table_now = self._tick(now_ms)
        observed_ms = max(0, table_now - max(0, event.evidence_age_ms))
        existing = self._rows.get(pane)
        if (
            existing is not None
            and event.connection_id is not None
            and self._row_writers.get(pane) == event.connection_id
        ):
            # The same producer's next message (its sequence was checked above): its
            # order is the producer's, not two clocks' millisecond rounding.
            observed_ms = max(observed_ms, existing.updated_at_ms)
        if (
            existing is not None
            and not existing.restored_unconfirmed
            and observed_ms < existing.updated_at_ms
        ):
            return TableEffects("rejected", "stale_evidence")
        cleared_at = self._cleared_at.get(pane)
        if cleared_at is not None and observed_ms < cleared_at:
            return TableEffects("rejected", "stale_evidence")
        if event.state is None:
            # Remembered even when there is no row: an older event still in flight
            # must not create one after the agent said its session ended.
            return self._remove(pane, "session_ended", cleared_at_ms=observed_ms)
        if existing is not None and self._outranks(existing, event.source, observed_ms):
            return self._carry_handle_only(existing, event.terminal_handle)
        if event.not_while_blocked and existing is not None and existing.state == "blocked":
            return TableEffects("unchanged", "still_blocked")
        if event.resume_only and (
            existing is None
            or existing.restored_unconfirmed
            or existing.state not in ("working", "blocked")
        ):
            return TableEffects("unchanged", "turn_finished")

        worktree_id = self.current_worktree(
            event.worktree_id
            or (existing.worktree_id if existing else "")
            or self._pane_worktrees.get(pane)
            or ""
        )
        if not worktree_id:
            return TableEffects("rejected", "unknown_worktree")
        self._pane_worktrees.put(pane, worktree_id)
        same_state = (
            existing is not None
            and existing.state == event.state
            and not existing.restored_unconfirmed
        )
        self._rev += 1
        row = AgentStatusRow(
            pane_key=pane,
            worktree_id=worktree_id,
            state=event.state,
            source=event.source,
            updated_at_ms=observed_ms,
            state_since_ms=existing.state_since_ms if existing and same_state else observed_ms,
            agent=_label(event.agent, existing.agent if existing else "unknown"),
            # The pane key names the tab (ptyd exports ORCA_TAB_ID from it). A hook that
            # states another tab does not move its pane there, and a row filed under
            # that name would be one the strict hydrate (status_file) must drop.
            tab_id=key.tab_id,
            detail=event.detail[:MAX_DETAIL_CHARS],
            session_id=event.session_id or (existing.session_id if existing else ""),
            # Seed 03: carried forward when the event resolves none (only the OSC path
            # can resolve one; an HTTP hook for the same pane must not wipe it).
            # An HTTP hook names no terminal: the pane's current one (ptyd told us at
            # its launch) is the row's, so every reader can name it (issue 32).
            terminal_handle=event.terminal_handle
            or (existing.terminal_handle if existing else None)
            or self._terminals.get(pane),
            structured_host=event.structured_host,
            restored_unconfirmed=False,
            rev=self._rev,
            host_id=self.host_id,
            unread=event.state in UNREAD_STATES
            and (not same_state or (existing is not None and existing.unread)),
        )
        self._fates.pop(pane)
        if event.connection_id is not None:
            self._row_writers[pane] = event.connection_id
        else:
            self._row_writers.pop(pane, None)
        if event.launch_token_sha256 is not None:
            self._row_tokens[pane] = event.launch_token_sha256
        self._rows[pane] = row
        evicted = self._evict_beyond_bounds(keep=pane) if existing is None else ()
        return TableEffects(
            "applied",
            events=(StatusSet(row=row), *evicted),
            persist=is_persistable(row)
            or (existing is not None and is_persistable(existing))
            or bool(evicted),
        )

    # closes and restarts ---------------------------------------------------
    def retire_pane(
        self, pane_key: str, retire_id: str | None = None, now_ms: int = 0
    ) -> TableEffects:
        """Close a pane: drop its row and fence it (and its aliases) against late writes.

        Always ``persist``: the fence itself is saved (seed 02 §9, §13).
        """
        pane = self.authority.resolve(pane_key)
        retired_at = self._tick(now_ms)
        self.authority.fence(pane, retire_id or uuid.uuid4().hex, retired_at)
        self._pane_worktrees.pop(pane)
        self._fates.pop(pane)
        removed = self._remove(pane, "retired", cleared_at_ms=retired_at)
        return replace(removed, outcome="applied", persist=True)

    def retire_from_store(
        self, host_id: str, tab_id: str, leaf_id: str, now_ms: int = 0
    ) -> TableEffects:
        """The store's ``session.paneRetired``: the same close as :meth:`retire_pane`.

        The key is fenced whatever host retired it; the row goes (with its clear) only
        when it belongs to that execution host. A malformed key is the sender's fault.
        """
        pane_key = f"{tab_id}:{leaf_id}"
        if parse_pane_key(pane_key) is None:
            return TableEffects("rejected", "bad_pane_key")
        row = self.row(pane_key)
        if row is not None and row.host_id != host_id:
            pane = self.authority.resolve(pane_key)
            self.authority.fence(pane, f"store:{host_id}", self._tick(now_ms))
            return TableEffects("applied", "other_host", persist=True)
        return self.retire_pane(pane_key, f"store:{host_id}", now_ms)

    def rekey_worktree(self, old: str, new: str) -> TableEffects:
        """A worktree changed id (``git worktree move``): file its rows under ``new``.

        Each moved row is re-published; panes remembered without a row move too, and
        later writes naming ``old`` (agents keep their launch environment) land under
        ``new``.
        """
        if not old or not new or old == new:
            return TableEffects("rejected", "bad_worktree_rename")
        self._renames.pop(new)
        self._renames.put(old, new)
        self._pane_worktrees.replace_values(old, new)
        moved: list[StatusEventData] = []
        persist = False
        for pane, row in sorted(self._rows.items()):
            if row.worktree_id != old:
                continue
            self._rev += 1
            renamed = replace_row(row, worktree_id=new, rev=self._rev)
            self._rows[pane] = renamed
            moved.append(StatusSet(row=renamed))
            persist = persist or is_persistable(renamed)
        if not moved:
            return TableEffects("unchanged")
        return TableEffects("applied", events=tuple(moved), persist=persist)

    def restart_pane(
        self, pane_key: str, launch_token_sha256: str | None = None, worktree_id: str = ""
    ) -> bool:
        """A live restart in the pane: lift its fence and (re)commit the launch token.

        Returns whether a fence was lifted. Never called from hydration or replay.
        """
        pane = self.authority.resolve(pane_key)
        if worktree_id:
            self._pane_worktrees.put(pane, worktree_id)
        # A new launch: its evidence may predate this call (ptyd scanned it while the
        # restart was in flight), and the old launch's is fenced by its token and by
        # ptyd's order, so the old removal's time no longer applies.
        self._cleared_at.pop(pane)
        lifted = self.authority.lift_fence(pane)
        if launch_token_sha256 is not None:
            self.authority.commitments[pane] = launch_token_sha256
        else:
            self.authority.commitments.pop(pane, None)
        return lifted

    def replace_agent(
        self, pane_key: str, terminal_handle: str | None, launch_token_sha256: str | None = None
    ) -> TableEffects:
        """A new launch in the pane (after :meth:`restart_pane`): drop the previous
        agent's row (reason ``replaced``; seed 03 PR 1b "provider-generation 替换": a
        new launch never inherits the old row) and its fate; ``terminal_handle``
        becomes the pane's current terminal."""
        pane = self.authority.resolve(pane_key)
        if terminal_handle:
            self._terminals.put(pane, terminal_handle)
        self._fates.pop(pane)
        if launch_token_sha256 is not None and self._row_tokens.get(pane) == launch_token_sha256:
            row = self._rows.get(pane)
            if row is not None and terminal_handle and row.terminal_handle != terminal_handle:
                # Its own first hook came first and could not name the terminal.
                kept = self._carry_handle_only(row, terminal_handle)
                return replace(kept, reason="written_by_this_launch")
            return TableEffects("unchanged", "written_by_this_launch")
        return self._remove(pane, "replaced")

    def pty_exited(
        self, pane_key: str, terminal_handle: str, exit_code: int | None, now_ms: int
    ) -> TableEffects:
        """ptyd saw the pane's PTY exit: remove the row everywhere, remember the fate.

        An exit of a terminal the pane no longer runs (relaunched since) is ignored.
        """
        pane = self.authority.resolve(pane_key)
        current = self._terminals.get(pane)
        if current is not None and terminal_handle and current != terminal_handle:
            return TableEffects("unchanged", "stale_terminal")
        ended_at = self._tick(now_ms)
        self._remember_cleared(pane, ended_at)
        self.authority.launch_ended(pane)
        row = self._rows.get(pane)
        if row is None or self.authority.is_fenced(pane):
            # No agent was shown there (a plain shell), or the pane was closed: a
            # closed pane leaves every surface at once, it has no fate to show.
            return TableEffects("unchanged")
        self._fates.put(
            pane,
            PaneFate(
                pane_key=pane,
                worktree_id=row.worktree_id,
                agent=row.agent,
                terminal_handle=terminal_handle,
                exit_code=exit_code,
                ended_at_ms=ended_at,
                host_id=self.host_id,
            ),
        )
        self._rows.pop(pane)
        self._row_writers.pop(pane, None)
        self._row_tokens.pop(pane, None)
        self._rev += 1
        cleared = StatusCleared(
            pane_key=pane, worktree_id=row.worktree_id, reason="pty_exited", exit_code=exit_code
        )
        return TableEffects("applied", "pty_exited", events=(cleared,), persist=is_persistable(row))

    def pane_input(self, pane_key: str, now_ms: int, evidence_age_ms: int = 0) -> TableEffects:
        """The user typed into the pane: a ``blocked`` row returns to ``working`` (the
        prompt was answered); anything else is unchanged. Answered is not approved: the
        shell (``actors/hooks/answer_watch.py``) then settles it from the agent's next
        hook or its terminal (:meth:`pane_idle`). A key typed before the row was
        blocked (``evidence_age_ms``: ptyd's queue lagged) answers nothing: it is what
        made the agent ask, as often as not."""
        pane = self.authority.resolve(pane_key)
        row = self._rows.get(pane)
        if row is None or row.state != "blocked" or row.restored_unconfirmed:
            return TableEffects("unchanged")
        table_now = self._tick(now_ms)
        if table_now - max(0, evidence_age_ms) < row.state_since_ms:
            return TableEffects("unchanged", "typed_before_the_ask")
        self._rev += 1
        answered = replace_row(
            row,
            state="working",
            updated_at_ms=table_now,
            state_since_ms=table_now,
            detail="prompt answered",
            unread=False,
            rev=self._rev,
        )
        self._rows[pane] = answered
        return TableEffects(
            "applied", events=(StatusSet(row=answered),), persist=is_persistable(answered)
        )

    def still_answered(self, pane_key: str, rev: int) -> bool:
        """Whether the pane's row is still the ``working`` that :meth:`pane_input` made of
        its answered prompt (``rev``): no hook, exit or answer has moved it since."""
        row = self._rows.get(self.authority.resolve(pane_key))
        return row is not None and row.rev == rev and row.state == "working"

    def pane_idle(self, pane_key: str, rev: int, detail: str, now_ms: int) -> TableEffects:
        """The answered prompt settled without a hook: the agent is idle at its prompt
        (its terminal says so: quiet, or its interrupt line), so the row is ``waiting``,
        never ``working`` (issue 40 item 4). Only while the row is still the one the
        answer made (``rev``); anything newer wins."""
        return self._settle_answer(pane_key, rev, "waiting", detail, now_ms)

    def pane_asking(self, pane_key: str, rev: int, detail: str, now_ms: int) -> TableEffects:
        """The key that answered the prompt was lost: the agent draws its own dialog only
        after its hook returned (Codex) and now waits on it, so the row is ``blocked``
        again, never ``working`` (issue 40 item 8). Only while the row is still the one
        the answer made (``rev``); anything newer wins."""
        return self._settle_answer(pane_key, rev, "blocked", detail, now_ms)

    def _settle_answer(
        self, pane_key: str, rev: int, state: AgentState, detail: str, now_ms: int
    ) -> TableEffects:
        pane = self.authority.resolve(pane_key)
        row = self._rows.get(pane)
        if row is None or row.rev != rev or row.state != "working":
            return TableEffects("unchanged")
        table_now = self._tick(now_ms)
        self._rev += 1
        settled = replace_row(
            row,
            state=state,
            updated_at_ms=table_now,
            state_since_ms=table_now,
            detail=detail,
            unread=False,  # the user answered it in its terminal: they are looking at it
            rev=self._rev,
        )
        self._rows[pane] = settled
        return TableEffects(
            "applied", events=(StatusSet(row=settled),), persist=is_persistable(settled)
        )

    def ack(self, pane_key: str | None) -> TableEffects:
        """Mark the pane's row (every row when ``None``) read; one set per change."""
        panes = [self.authority.resolve(pane_key)] if pane_key is not None else sorted(self._rows)
        events: list[StatusEventData] = []
        for pane in panes:
            row = self._rows.get(pane)
            if row is None or not row.unread:
                continue
            self._rev += 1
            read = replace_row(row, unread=False, rev=self._rev)
            self._rows[pane] = read
            events.append(StatusSet(row=read))
        if not events:
            return TableEffects("unchanged")
        return TableEffects("applied", events=tuple(events), persist=True)

    def drop_worktree(self, worktree_id: str, reason: str, now_ms: int = 0) -> TableEffects:
        """Remove every row and fate filed under ``worktree_id`` (the store calls it
        unknown: strict hydrate, a removed worktree). A fate goes with a clear of its
        pane too, so a reader that keeps fates drops it as well."""
        events: list[StatusEventData] = []
        persist = False
        dropped_at = self._tick(now_ms)
        for pane, row in sorted(self._rows.items()):
            if row.worktree_id == worktree_id:
                events.extend(self._remove(pane, reason, cleared_at_ms=dropped_at).events)
                persist = True
        for pane, fate in sorted(self._fates.items()):
            if fate.worktree_id == worktree_id:
                self._fates.pop(pane)
                events.append(StatusCleared(pane_key=pane, worktree_id=worktree_id, reason=reason))
        if not events:
            return TableEffects("unchanged")
        return TableEffects("applied", reason, events=tuple(events), persist=persist)

    def fate_worktree_ids(self) -> list[str]:
        """The distinct worktree ids the fates are filed under."""
        return sorted({fate.worktree_id for _, fate in self._fates.items()})

    def reconcile_ptys(
        self, running: list[LivePty], ended: list[EndedPty], now_ms: int
    ) -> tuple[TableEffects, PtyVerdicts]:
        """ptyd's truth about every pane's PTYs: tie each row to its launch's running
        terminal, or replace or end it (:mod:`actors.hooks.pty_truth`); note each
        pane's one current launch. Never confirms a restored row: a live PTY proves
        the process, not the agent's turn."""
        auth = self.authority
        running = [replace_row(p, pane_key=auth.resolve(p.pane_key)) for p in running]
        ended = [replace_row(p, pane_key=auth.resolve(p.pane_key)) for p in ended]
        launches = {
            pane: launch
            for pane in self._rows
            if (launch := self._row_tokens.get(pane) or auth.commitments.get(pane))
        }
        verdicts = judge_rows(self._rows.values(), launches, running, ended)
        events: list[StatusEventData] = []
        persist = False
        for pane, handle in sorted(verdicts.still_running.items()):
            row = self._rows[pane]
            if row.terminal_handle == handle:
                continue
            # Only the handle (never persisted, so nothing to save): the row keeps its
            # state, evidence times and ``restoredUnconfirmed`` until the agent reports.
            self._rev += 1
            self._rows[pane] = replace_row(row, terminal_handle=handle, rev=self._rev)
            events.append(StatusSet(row=self._rows[pane]))
        for pane in verdicts.replaced:
            removed = self._remove(pane, "replaced")
            events.extend(removed.events)
            persist = persist or removed.persist
        for pane, end in sorted(verdicts.exited.items()):
            gone = self.pty_exited(pane, end.terminal_handle, end.exit_code, now_ms)
            events.extend(gone.events)
            persist = persist or gone.persist
        for pane, (launch, handle) in verdicts.current.items():
            if auth.is_fenced(pane):
                continue  # a closed pane stays closed; only a live restart reopens it
            self._terminals.put(pane, handle)
            if auth.commitments.get(pane) != launch:
                auth.commitments[pane] = launch
                persist = persist or pane in self._rows
        outcome: Outcome = "applied" if events else "unchanged"
        return TableEffects(outcome, events=tuple(events), persist=persist), verdicts

    def clear_pane(self, pane_key: str, reason: str, now_ms: int = 0) -> TableEffects:
        """Remove a pane's row without fencing (authenticated exit, session removal);
        an observation from before it stays stale (module docstring, gate 5)."""
        pane = self.authority.resolve(pane_key)
        return self._remove(pane, reason, cleared_at_ms=self._tick(now_ms))

    def alias_pane(self, alias: str, canonical: str) -> TableEffects:
        """Register ``alias`` for ``canonical``; a row kept under the alias moves over."""
        self.authority.add_alias(alias, canonical)
        old = self._rows.pop(alias, None)
        self._row_writers.pop(alias, None)
        target = self.authority.resolve(canonical)
        if old is None or target in self._rows:
            if old is None:
                return TableEffects("unchanged")
            return TableEffects("applied", events=(_clear(old, "aliased"),), persist=True)
        self._rev += 1
        moved = replace_row(old, pane_key=target, rev=self._rev)
        self._rows[target] = moved
        return TableEffects(
            "applied",
            events=(_clear(old, "aliased"), StatusSet(row=moved)),
            persist=True,
        )

    # hydration ---------------------------------------------------------------
    def hydrate(
        self,
        rows: list[AgentStatusRow],
        commitments: dict[str, str],
        fences: list[Fence] | None = None,
    ) -> None:
        """Load rows and fences restored from disk (rows already marked unconfirmed).

        A fenced pane's row is not loaded: the fence is the later fact.
        """
        restored = [f for f in fences or () if parse_pane_key(f.pane_key) is not None]
        # A fence's time is a record, not evidence: it does not move the table clock.
        self.authority.restore_fences(restored)
        for row in rows:
            if is_persistable(row) and not self.authority.is_fenced(row.pane_key):
                self._rows[row.pane_key] = row
                self._clock_ms = max(self._clock_ms, row.updated_at_ms)
                self._rev = max(self._rev, row.rev)
        # A file written by an unbounded build (or edited by hand) is held to the bounds.
        by_worktree: dict[str, list[AgentStatusRow]] = {}
        for row in self._rows.values():
            by_worktree.setdefault(row.worktree_id, []).append(row)
        for same in by_worktree.values():
            self._evict_oldest(same, len(same) - MAX_ROWS_PER_WORKTREE, None)
        self._evict_oldest(list(self._rows.values()), len(self._rows) - MAX_ROWS, None)
        for pane, digest in commitments.items():
            if parse_pane_key(pane) is not None and is_sha256_hex(digest):
                self.authority.commitments[pane] = digest

    # internals -------------------------------------------------------------
    def _evict_beyond_bounds(self, keep: str | None = None) -> tuple[StatusCleared, ...]:
        """Drop the oldest rows past the per-worktree and total bounds (never ``keep``)."""
        gone: list[StatusCleared] = []
        if keep is not None:
            worktree = self._rows[keep].worktree_id
            same = [r for r in self._rows.values() if r.worktree_id == worktree]
            gone += self._evict_oldest(same, len(same) - MAX_ROWS_PER_WORKTREE, keep)
        gone += self._evict_oldest(list(self._rows.values()), len(self._rows) - MAX_ROWS, keep)
        return tuple(gone)

    def _evict_oldest(
        self, rows: list[AgentStatusRow], excess: int, keep: str | None
    ) -> list[StatusCleared]:
        if excess <= 0:
            return []
        oldest = sorted(
            (r for r in rows if r.pane_key != keep), key=lambda r: (r.updated_at_ms, r.pane_key)
        )[:excess]
        for row in oldest:
            self._rows.pop(row.pane_key, None)
            self._row_tokens.pop(row.pane_key, None)
            self._row_writers.pop(row.pane_key, None)
            self._remember_cleared(row.pane_key, self._clock_ms)
        if oldest:
            self._rev += 1
            self.evicted += len(oldest)
        return [_clear(row, EVICTED) for row in oldest]

    def _tick(self, now_ms: int) -> int:
        # Invariant: the table clock never goes backwards, so a wall-clock step back
        # cannot make a newer write sort before an older one.
        self._clock_ms = max(self._clock_ms, now_ms)
        return self._clock_ms

    @staticmethod
    def _outranks(existing: AgentStatusRow, source: StatusSource, observed_ms: int) -> bool:
        if existing.restored_unconfirmed:
            return False
        if SOURCE_RANK[existing.source] <= SOURCE_RANK[source]:
            return False
        if existing.structured_host is not None:
            return True
        return observed_ms - existing.updated_at_ms < PRIORITY_HOLD_MS

    def _carry_handle_only(self, existing: AgentStatusRow, handle: str | None) -> TableEffects:
        if handle is None or handle == existing.terminal_handle:
            return TableEffects("rejected", "outranked")
        self._rev += 1
        row = replace_row(existing, terminal_handle=handle, rev=self._rev)
        self._rows[row.pane_key] = row
        return TableEffects(
            "applied",
            "outranked_handle_only",
            events=(StatusSet(row=row),),
        )

    def _remember_cleared(self, pane: str, at_ms: int) -> None:
        self._cleared_at.put(pane, max(at_ms, self._cleared_at.get(pane) or 0))

    def _remove(self, pane: str, reason: str, *, cleared_at_ms: int | None = None) -> TableEffects:
        """Drop the pane's row (one clear). With ``cleared_at_ms`` the removal is
        remembered as evidence; without it (``replaced``: a new launch took the pane,
        whose own evidence may predate the removal) it is not."""
        if cleared_at_ms is not None:
            self._remember_cleared(pane, cleared_at_ms)
        self._row_tokens.pop(pane, None)
        self._row_writers.pop(pane, None)
        row = self._rows.pop(pane, None)
        if row is None:
            return TableEffects("unchanged")
        self._rev += 1
        return TableEffects(
            "applied", reason, events=(_clear(row, reason),), persist=is_persistable(row)
        )


def _label(value: str, fallback: str) -> str:
    value = value[:MAX_LABEL_CHARS]
    return fallback if value in ("", "unknown") else value
