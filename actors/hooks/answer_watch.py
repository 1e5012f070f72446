"""Settling an answered prompt from evidence (issue 40 item 4).

A key typed into a ``blocked`` pane (or an answer from a face) means the prompt was
*answered*, not approved. The row turns ``working`` at once (``pane_input``: an
approved tool may run for minutes before its next hook), and this watch settles it:

* the agent's next hook (PostToolUse after an approval, Stop, another ask) moves the
  row on, and the watch ends (:meth:`AgentStatusTable.still_answered` is false);
* otherwise the agent's terminal decides (ptyd's ``term.activity``). An agent at work
  animates its screen (Claude Code's spinner and timer, Codex's and Gemini CLI's), one
  idle at its prompt prints nothing. So output quiet for :data:`QUIET_S`, or the
  agent's own interrupt line on the screen with a short quiet after it, means idle:
  the row becomes ``waiting``. Claude Code 2.1, refused or cancelled in its own
  dialog (Esc, "No"), prints its interrupt line, returns to its prompt and sends no
  hook at all (its Stop hook does not run on a user interrupt); Gemini CLI 0.61,
  refused with Esc in its dialog, likewise (its line, no AfterAgent); Codex 0.171,
  Esc while Orca holds its approval hook, likewise (its line, no Stop).

:func:`settled` is the pure rule; :func:`watch_answer` the trio loop around it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import trio

from orca.actor.client import RpcClient
from orca.contracts import ptyd
from orca.wire.errors import NotFound, OrcaError

log = logging.getLogger(__name__)

# An agent at work redraws at least this often (spinners tick every ~0.1 s, their
# elapsed-time counters every second); a screen quiet this long is an idle prompt.
QUIET_S = 3.0
# The interrupt line is on the screen: a short quiet after it is enough (the TUI has
# finished redrawing around it).
MARKED_QUIET_S = 0.5
# How long an answer is watched. An approved command quiet longer than QUIET_S settles
# as idle; its PostToolUse hook turns it working again when it ends.
WATCH_FOR_S = 120.0
# What each agent prints when the user refuses or cancels in its own dialog, as read
# from the agent's screen. Claude Code 2.1.x: "Interrupted · What should Claude do
# instead?" (its TUI; also the text users report in anthropics/claude-code issues).
# Gemini CLI 0.61: the info line "Request cancelled." (its interactive UI adds it when
# a turn is cancelled, Esc in its permission dialog included; no hook fires then).
# Codex 0.171: "Conversation interrupted" (its TUI, Esc while a turn runs, its approval
# hook held by Orca included; no hook fires then).
INTERRUPT_LINES: dict[str, tuple[str, ...]] = {
    "claude": ("Interrupted · What should Claude do instead?",),
    "codex": ("Conversation interrupted",),
    "gemini": ("Request cancelled.",),
}
IDLE_DETAIL = "answered in its terminal; idle at its prompt"
INTERRUPTED_DETAIL = "refused in its terminal; idle at its prompt"


def settled(agent: str, quiet_ms: int, lines: Sequence[str]) -> str | None:
    """The detail of the ``waiting`` row when the terminal shows the agent idle at its
    prompt, else None (still at work, or too soon to tell)."""
    marks = INTERRUPT_LINES.get(agent, ())
    if marks and quiet_ms >= MARKED_QUIET_S * 1000:
        bottom = [line for line in lines if line.strip()][-12:]
        if any(mark in line for line in bottom for mark in marks):
            return INTERRUPTED_DETAIL
    if quiet_ms >= QUIET_S * 1000:
        return IDLE_DETAIL
    return None


async def watch_answer(
    ptyd_client: RpcClient,
    pane_key: str,
    rev: int,
    agent: str,
    still_answered: Callable[[str, int], bool],
    settle: Callable[[str, int, str], object],
) -> None:
    """Until the answered row at ``rev`` is moved on by something else, settled as
    idle from the terminal, or :data:`WATCH_FOR_S` has passed."""
    with trio.move_on_after(WATCH_FOR_S):
        wait = MARKED_QUIET_S
        while True:
            await trio.sleep(wait)
            if not still_answered(pane_key, rev):
                return  # a hook, an exit or another answer settled it
            try:
                seen: ptyd.Activity = await ptyd_client.invoke(
                    ptyd.ACTIVITY, ptyd.ActivityArgs(pane_key=pane_key), timeout=2.0
                )
            except NotFound:
                return  # no running terminal there: its exit settles the row
            except OrcaError as exc:
                log.debug("answer of %s: ptyd did not tell (%s)", pane_key, exc)
                wait = QUIET_S
                continue
            detail = settled(agent, seen.quiet_ms, seen.lines)
            if detail is not None:
                if still_answered(pane_key, rev):
                    settle(pane_key, rev, detail)
                return
            quiet_s = seen.quiet_ms / 1000
            wait = max(MARKED_QUIET_S, QUIET_S - quiet_s)
