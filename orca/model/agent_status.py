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
from typing import Literal, get_args

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
    }


def project_worktrees(rows: Iterable[AgentStatusRow], now_ms: int) -> list[dict[str, object]]:
    """Per worktree: the shared summary and its agents, ordered by worktree id."""
    grouped = group_by_worktree(rows)
    projected: list[dict[str, object]] = []
    for worktree_id in sorted(grouped):
        group = grouped[worktree_id]
        summary = summarize_worktree(worktree_id, group, now_ms)
        projected.append(
            {
                "worktreeId": worktree_id,
                "summary": {
                    "state": summary.state,
                    "counts": summary.counts,
                    "latestUpdateMs": summary.latest_update_ms,
                },
                "agents": [project_agent(row, now_ms) for row in group],
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
