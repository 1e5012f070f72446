"""What ptyd's truth about the PTYs says of each agent row (seed 03 restore). Pure.

``ptyd`` owns PTY truth: which launches run in which pane, which ended and how. After
a restart (of hooks, of ptyd, or of both: ``orca restart --all``, an ``orcad`` crash)
it sends that truth (``agentStatus.reconcile_ptys``) and the table judges every row
against it here.

Seed 03's hydration honesty is why a row read from ``last-status.json`` comes back
``restoredUnconfirmed``: on its own it proves nothing - the agent may be gone, and a
terminal handle saved with it would tie it to someone else's terminal (so none is
saved). ptyd can prove one thing about it: that its PTY owner still runs *the launch
that wrote the row*. A launch is named by its launch-token hash, which hooks already
keeps per pane (the commitment, persisted with the row) and which ptyd knows of every
session, running, ended or archived; one launch is one process, so the same hash is
the same PTY, pid and session. A live row (hooks did not restart) is also named by the
terminal handle its OSC writes carried.

A live PTY proves the process, not the state (seed 03 "水合诚实性": a restored
non-done row is never fresh until a live event). While hooks was down the agent may
have finished its turn: its Stop hook found no one listening and exited 0 silently,
so the row on disk still says ``working``. Reading that as live truth would show a
finished agent busy, fresh, for the whole display decay - with nothing on screen to
doubt it. So ptyd's truth settles what it knows (which terminal, whether the launch
ended) and never what it does not (the agent's turn): a restored row of a running
launch is tied to its terminal again and *stays* ``restoredUnconfirmed``; only the
agent's own next report (a hook or an OSC 9999 document, through
``apply_normalized_status``) confirms it.

Verdicts, per row (structured rows have no PTY and are never judged):

* ``still_running`` - the pane runs the row's launch: the row is tied to that
  terminal again (readers name it, ``orca ack`` and attach find it; the handle was
  never saved). Nothing else changes: a restored row stays unconfirmed (``orca
  worktree ps``: ``idle (restored: working)``), its state and evidence times stay as
  the agent last reported them;
* ``replaced`` - the pane runs launches, none of them the row's: the new launch's
  ``restart_pane`` was lost (hooks was down); the row goes as it would have then;
* ``exited`` - the row's launch ended (ptyd saw it, or archived it as lost): the
  authenticated PTY exit, as ``pty_exited``;
* no verdict - ptyd knows nothing of the row's launch (a row without a commitment, a
  history evicted, a pane no PTY of ours ever ran): nothing changes; a restored row
  stays unconfirmed and readers show its terminal as gone.

``replaced`` and ``exited`` remove rows: ending is a fact about the process, which is
ptyd's to know.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from orca.contracts.hooks import EndedPty, LivePty
from orca.model.agent_status import AgentStatusRow


@dataclass(frozen=True)
class PtyVerdicts:
    """The table's work for one reconciliation (pane keys are canonical)."""

    # pane -> the live terminal handle of the row's launch (ties it; confirms nothing)
    still_running: dict[str, str] = field(default_factory=dict)
    replaced: list[str] = field(default_factory=list)
    exited: dict[str, EndedPty] = field(default_factory=dict)
    # Panes that run exactly one launch: (its token hash, its terminal handle) - what
    # a ``restart_pane`` lost while hooks was down would have told.
    current: dict[str, tuple[str, str]] = field(default_factory=dict)


P = TypeVar("P", LivePty, EndedPty)


def _by_pane(ptys: Iterable[P]) -> dict[str, list[P]]:
    grouped: dict[str, list[P]] = {}
    for pty in ptys:
        grouped.setdefault(pty.pane_key, []).append(pty)
    return grouped


def _is_the_rows(pty: LivePty | EndedPty, row: AgentStatusRow, launch: str | None) -> bool:
    if launch is not None and pty.launch_token_sha256 == launch:
        return True
    return row.terminal_handle is not None and pty.terminal_handle == row.terminal_handle


def judge_rows(
    rows: Iterable[AgentStatusRow],
    launches: Mapping[str, str],
    running: Iterable[LivePty],
    ended: Iterable[EndedPty],
) -> PtyVerdicts:
    """Judge every row against ptyd's truth; ``launches``: the row's launch-token hash
    by pane (the commitment); ``running``/``ended``: keyed by canonical pane keys."""
    live = _by_pane(running)
    gone = _by_pane(ended)
    verdicts = PtyVerdicts(
        current={
            pane: (ptys[0].launch_token_sha256, ptys[0].terminal_handle)
            for pane, ptys in live.items()
            if len(ptys) == 1
        }
    )
    for row in rows:
        if row.structured_host is not None:
            continue
        pane = row.pane_key
        launch = launches.get(pane)
        here = live.get(pane, [])
        mine = [p for p in here if _is_the_rows(p, row, launch)]
        if mine:
            verdicts.still_running[pane] = mine[0].terminal_handle
        elif here and launch is not None:
            verdicts.replaced.append(pane)
        elif not here:
            ends = [p for p in gone.get(pane, []) if _is_the_rows(p, row, launch)]
            if ends:
                verdicts.exited[pane] = ends[-1]
    return verdicts
