"""Agent-status rows and the one summary/freshness rule every reader uses (seed 03).

The ``hooks`` actor owns the rows; the TUI, ``orca worktree ps``, web and remote
mirrors only project them. Seed 03 PR 3 ("一个汇总，一个时钟"): the worktree summary
and the 30-minute display decay exist once, here, so the same pane never reads
differently on two surfaces.

Vocabulary (seed 03 "不变的内容"):

* row states ``working | blocked | waiting | done``: ``blocked`` is an agent stopped
  on a permission prompt, ``waiting`` one idle at its input prompt, ``done`` a turn
  that finished;
* structured sessions speak ``working | attention | idle`` and are mapped once, by
  :func:`map_structured_state`;
* every row records the ``source`` whose write won (``hook``, ``terminal`` for OSC
  9999, ``structured``); readers never re-decide priority.

Freshness (seed 03 "水合诚实性"): a row hydrated from disk carries
``restoredUnconfirmed`` and is never fresh until a live event rewrites it; a row owned
by a structured host bypasses the age check (the host deletes it when the session
goes away); any other row stops being fresh ``DISPLAY_DECAY_MS`` after its last
evidence and is then displayed as ``idle``.

Pure: no I/O, no clock reads (``now_ms`` is always passed in).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal, Protocol, get_args

import msgspec

AgentState = Literal["working", "blocked", "waiting", "done"]
StructuredState = Literal["working", "attention", "idle"]
StatusSource = Literal["hook", "terminal", "structured"]
DisplayState = Literal["working", "blocked", "waiting", "done", "idle"]
SummaryState = Literal["blocked", "waiting", "working", "done", "idle"]

AGENT_STATES: tuple[AgentState, ...] = get_args(AgentState)
STATUS_SOURCES: tuple[StatusSource, ...] = get_args(StatusSource)

# Seed 03 PR 3: the display decay every reader shares (upstream had the constant
# copied by hand into the mobile client; here it exists once).
DISPLAY_DECAY_MS = 30 * 60 * 1000

# Priority decided on write (seed 03 "规则"): a structured session is the agent's own
# journal, a hook is the agent telling us its turn structure, OSC 9999 is what the
# terminal saw. Higher wins; the store records which one did.
SOURCE_RANK: Mapping[StatusSource, int] = {"terminal": 1, "hook": 2, "structured": 3}

# Summary order: what most needs the user comes first. A permission prompt blocks the
# agent outright, an input prompt merely waits, then active work, then finished turns.
_SUMMARY_ORDER: tuple[SummaryState, ...] = ("blocked", "waiting", "working", "done", "idle")

_STRUCTURED_TO_ROW: Mapping[StructuredState, AgentState] = {
    "working": "working",
    # "attention" is the structured feed's "the user must act" (approval or question).
    "attention": "blocked",
    "idle": "done",
}


class AgentStatusRow(msgspec.Struct, frozen=True, rename="camel", kw_only=True):
    """One pane's agent status, as the hooks table holds it and every reader receives it.

    ``updated_at_ms`` is the time of the latest evidence (the table's clock, never
    earlier than the previous write), ``state_since_ms`` when the current state began
    (the "age" readers show). ``terminal_handle`` is live-only: it belongs to the
    runtime that issued it and is never persisted. ``rev`` is the table-wide write
    counter, the order in which rows were written regardless of wall-clock steps.
    """

    pane_key: str
    worktree_id: str
    state: AgentState
    source: StatusSource
    updated_at_ms: int
    state_since_ms: int
    agent: str = "unknown"
    tab_id: str = ""
    detail: str = ""
    session_id: str = ""
    terminal_handle: str | None = None
    structured_host: str | None = None
    restored_unconfirmed: bool = False
    rev: int = 0
    # The execution host whose store holds the row (one store per host, seed 03): a
    # client mirroring several hosts keys rows by (hostId, paneKey).
    host_id: str = "local"
    # Seed 03 reader-side fact, kept in the one store so every reader agrees: a
    # ``done`` or ``blocked`` row is unread from the moment it entered that state
    # until the user attached to the pane or acknowledged it (``orca ack``).
    unread: bool = False


class PaneFate(msgspec.Struct, frozen=True, rename="camel", kw_only=True):
    """What became of a pane's terminal, from ``ptyd``'s facts (never guessed).

    ``exited``: ptyd reported the PTY's exit (``exit_code``, ``ended_at_ms``); the
    agent row was removed at that moment. Kept (bounded) so a reader can show where
    the row was that the agent exited rather than silently dropping it.
    """

    pane_key: str
    worktree_id: str
    agent: str
    terminal_handle: str
    exit_code: int | None
    ended_at_ms: int
    host_id: str = "local"


class TerminalFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What a reader learned from ``ptyd`` (``term.list``) for the admission rule.

    ``live_panes`` / ``live_handles``: panes and terminal handles with a running
    PTY. ``exited``: pane key -> exit code of a PTY that ended and is still listed.
    """

    live_panes: frozenset[str]
    live_handles: frozenset[str]
    exited: Mapping[str, int | None] = msgspec.field(default_factory=dict)


NO_FACTS = TerminalFacts(live_panes=frozenset(), live_handles=frozenset())


class ListedTerminal(Protocol):
    """What ``terminal_facts`` reads of a ``term.list`` row (``ptyd.SessionRow``)."""

    @property
    def running(self) -> bool: ...
    @property
    def pane_key(self) -> str: ...
    @property
    def terminal_handle(self) -> str: ...
    @property
    def exit_code(self) -> int | None: ...


def terminal_facts(sessions: Iterable[ListedTerminal]) -> TerminalFacts:
    """The admission rule's facts from ptyd's listing (or a mirror of it): every reader
    (``orca worktree ps``, ``orca ui``) derives them here."""
    rows = list(sessions)
    running = [s for s in rows if s.running]
    live = frozenset(s.pane_key for s in running)
    return TerminalFacts(
        live_panes=live,
        live_handles=frozenset(s.terminal_handle for s in running),
        exited={s.pane_key: s.exit_code for s in rows if not s.running and s.pane_key not in live},
    )


class WorktreeSummary(msgspec.Struct, frozen=True, rename="camel", kw_only=True):
    """The per-worktree projection every surface shows."""

    worktree_id: str
    state: SummaryState
    counts: dict[str, int]
    latest_update_ms: int | None


def map_structured_state(state: StructuredState) -> AgentState:
    """The one mapping from the structured feed's vocabulary to row states."""
    return _STRUCTURED_TO_ROW[state]


def is_fresh(row: AgentStatusRow, now_ms: int) -> bool:
    """Whether a reader may show the row's state as live truth."""
    if row.restored_unconfirmed:
        return False
    if row.structured_host is not None:
        return True
    return now_ms - row.updated_at_ms < DISPLAY_DECAY_MS


def display_state(row: AgentStatusRow, now_ms: int) -> DisplayState:
    """The state a reader shows: the row's state while fresh, ``idle`` after the decay."""
    return row.state if is_fresh(row, now_ms) else "idle"


def state_age_ms(row: AgentStatusRow, now_ms: int) -> int:
    """How long the row has been in its state (never negative under clock steps)."""
    return max(0, now_ms - row.state_since_ms)


def summarize_worktree(
    worktree_id: str, rows: Iterable[AgentStatusRow], now_ms: int
) -> WorktreeSummary:
    """Summarise one worktree's rows: the most urgent fresh display state wins."""
    counts: dict[str, int] = {}
    latest: int | None = None
    for row in rows:
        shown = display_state(row, now_ms)
        counts[shown] = counts.get(shown, 0) + 1
        if latest is None or row.updated_at_ms > latest:
            latest = row.updated_at_ms
    state: SummaryState = next((s for s in _SUMMARY_ORDER if counts.get(s)), "idle")
    return WorktreeSummary(
        worktree_id=worktree_id, state=state, counts=counts, latest_update_ms=latest
    )


def group_by_worktree(rows: Iterable[AgentStatusRow]) -> dict[str, list[AgentStatusRow]]:
    """Rows per worktree id, each list in pane-key order (stable output for every reader)."""
    grouped: dict[str, list[AgentStatusRow]] = {}
    for row in rows:
        grouped.setdefault(row.worktree_id, []).append(row)
    for group in grouped.values():
        group.sort(key=lambda r: r.pane_key)
    return grouped


def summarize_all(rows: Iterable[AgentStatusRow], now_ms: int) -> list[WorktreeSummary]:
    """Every worktree's summary, ordered by worktree id."""
    grouped = group_by_worktree(rows)
    return [summarize_worktree(wt, grouped[wt], now_ms) for wt in sorted(grouped)]


def is_admitted(row: AgentStatusRow, facts: TerminalFacts | None) -> bool:
    """Seed 03's admission rule ("准入门控"): may a list surface show this row live?

    A hook or OSC row needs a live PTY for its pane (or its terminal handle); a
    structured row is shown while its host holds the session (the host removes the
    row when it forgets it). Without ptyd's facts (``None``: ptyd did not answer) no
    row can be checked, and every row is shown as the store holds it.
    """
    if facts is None or row.structured_host is not None:
        return True
    if row.pane_key in facts.live_panes:
        return True
    return row.terminal_handle is not None and row.terminal_handle in facts.live_handles


def needs_user(agent: Mapping[str, object]) -> bool:
    """A projected agent that needs the user: blocked, or an unread finished turn."""
    shown = agent.get("displayState")
    return shown == "blocked" or (shown == "done" and bool(agent.get("unread")))


def project_agent(row: AgentStatusRow, now_ms: int) -> dict[str, object]:
    """One agent as every list surface shows it (``orca worktree ps``, TUI, web)."""
    return {
        "paneKey": row.pane_key,
        "tabId": row.tab_id,
        "agent": row.agent,
        "state": row.state,
        "displayState": display_state(row, now_ms),
        "fresh": is_fresh(row, now_ms),
        "ageMs": state_age_ms(row, now_ms),
        "source": row.source,
        "detail": row.detail,
        "restoredUnconfirmed": row.restored_unconfirmed,
        "structuredHostOwned": row.structured_host is not None,
        "terminalHandle": row.terminal_handle,
        "unread": row.unread,
        "terminal": {"state": "live"},
    }


def project_fate(fate: PaneFate, now_ms: int) -> dict[str, object]:
    """A pane whose PTY exited, in the agent shape (``displayState: exited``)."""
    return {
        "paneKey": fate.pane_key,
        "tabId": fate.pane_key.split(":", 1)[0],
        "agent": fate.agent,
        "state": "exited",
        "displayState": "exited",
        "fresh": True,
        "ageMs": max(0, now_ms - fate.ended_at_ms),
        "source": "ptyd",
        "detail": f"exit {fate.exit_code}" if fate.exit_code is not None else "exit unknown",
        "restoredUnconfirmed": False,
        "structuredHostOwned": False,
        "terminalHandle": fate.terminal_handle,
        "unread": False,
        "terminal": {
            "state": "exited",
            "exitCode": fate.exit_code,
            "endedAtMs": fate.ended_at_ms,
        },
    }


def _gone(projected: dict[str, object], facts: TerminalFacts, pane_key: str) -> dict[str, object]:
    # A row whose pane has no live PTY: not shown as working/waiting/done (seed 03
    # admission), but as what ptyd says of the terminal - exited (still listed) or gone.
    exited = pane_key in facts.exited
    terminal: dict[str, object] = {"state": "exited" if exited else "gone"}
    if exited:
        terminal["exitCode"] = facts.exited[pane_key]
    return {
        **projected,
        "displayState": terminal["state"],
        "fresh": False,
        "unread": False,
        "terminal": terminal,
    }


def project_worktrees(
    rows: Iterable[AgentStatusRow],
    now_ms: int,
    facts: TerminalFacts | None = None,
    fates: Iterable[PaneFate] = (),
    known_worktrees: frozenset[str] | None = None,
) -> list[dict[str, object]]:
    """Per worktree: the shared summary and its agents, ordered by worktree id.

    With ``facts`` (ptyd's), rows failing :func:`is_admitted` are listed by their
    terminal's fate (``exited`` / ``gone``) and left out of the summary; ``fates``
    (PTY exits hooks recorded) are listed where the row was. With
    ``known_worktrees`` (the store's), rows of unknown worktrees are not listed.
    """
    live: list[AgentStatusRow] = []
    dead: list[AgentStatusRow] = []
    for row in rows:
        if known_worktrees is not None and row.worktree_id not in known_worktrees:
            continue
        (live if is_admitted(row, facts) else dead).append(row)
    grouped = group_by_worktree(live)
    dead_by_wt = group_by_worktree(dead)
    fates_by_wt: dict[str, list[PaneFate]] = {}
    shown = {r.pane_key for r in live} | {r.pane_key for r in dead}
    for fate in fates:
        if fate.pane_key in shown:
            continue  # a new agent (or the row) is the later fact
        if known_worktrees is not None and fate.worktree_id not in known_worktrees:
            continue
        fates_by_wt.setdefault(fate.worktree_id, []).append(fate)
    projected: list[dict[str, object]] = []
    for worktree_id in sorted(set(grouped) | set(dead_by_wt) | set(fates_by_wt)):
        group = grouped.get(worktree_id, [])
        summary = summarize_worktree(worktree_id, group, now_ms)
        agents = [project_agent(row, now_ms) for row in group]
        agents += [
            _gone(project_agent(row, now_ms), facts or NO_FACTS, row.pane_key)
            for row in dead_by_wt.get(worktree_id, [])
        ]
        agents += [
            project_fate(f, now_ms)
            for f in sorted(fates_by_wt.get(worktree_id, []), key=lambda f: f.pane_key)
        ]
        agents.sort(key=lambda a: str(a["paneKey"]))
        projected.append(
            {
                "worktreeId": worktree_id,
                "summary": {
                    "state": summary.state,
                    "counts": summary.counts,
                    "latestUpdateMs": summary.latest_update_ms,
                },
                "agents": agents,
            }
        )
    return projected


# -- mirrors -----------------------------------------------------------------------
# Every reader (TUI, web, remote hosts) keeps the same copy of the store the same way:
# ``orca.contracts.hooks.load_mirror`` / ``apply_to_mirror`` (``orca.actor.Mirror``'s
# ``load`` / ``apply``) fold the typed snapshot and events into rows by pane key with
# these three functions. Readers never merge anything back into the store (seed 03
# "镜像不是合并").


def index_rows(rows: Iterable[AgentStatusRow]) -> dict[str, AgentStatusRow]:
    """Rows by pane key (a mirror's state)."""
    return {row.pane_key: row for row in rows}


def with_row(rows: Mapping[str, AgentStatusRow], row: AgentStatusRow) -> dict[str, AgentStatusRow]:
    """A mirror's rows after ``row`` was written (a new dict)."""
    return {**rows, row.pane_key: row}


def without_pane(rows: Mapping[str, AgentStatusRow], pane_key: str) -> dict[str, AgentStatusRow]:
    """A mirror's rows after the pane's row was cleared (a new dict)."""
    return {k: v for k, v in rows.items() if k != pane_key}
