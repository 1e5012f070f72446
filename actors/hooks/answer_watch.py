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

An agent that draws its own permission dialog only after its PermissionRequest hook
returns (Codex 0.171: while Orca holds the hook it shows a spinner and nothing else) can
take no answer while held: a key typed then releases the hold (answered there) but is
lost, and Codex then draws its dialog and waits on it. So when the answer released a
held request of such an agent, its dialog on the screen (:func:`asks_on_screen`) turns
the row back to ``blocked``, saying it asks in its terminal (nothing is held any more:
no face can answer it); the answer typed in that dialog turns it working again.

:func:`settled` and :func:`asks_on_screen` are the pure rules; :func:`watch_answer` the
trio loop around them.
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
# What each agent whose dialog comes only after its hook returns shows in that dialog,
# as read from its screen. Codex 0.171: "Would you like to run the following command?"
# above its choices and, under them, "Press enter to confirm or esc to cancel" (its
# terminal title meanwhile blinks "[ . ] Action Required", so the screen is never quiet).
# Claude Code shows its dialog while the hook runs; Gemini CLI holds nothing.
DIALOG_AFTER_HOOK_LINES: dict[str, tuple[str, ...]] = {
    "codex": ("Press enter to confirm or esc to cancel",),
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


def asks_on_screen(agent: str, lines: Sequence[str]) -> bool:
    """Whether the terminal shows the agent's own permission dialog, one it draws only
    after its hook returned (:data:`DIALOG_AFTER_HOOK_LINES`)."""
    marks = DIALOG_AFTER_HOOK_LINES.get(agent, ())
    bottom = [line for line in lines if line.strip()][-12:]
    return any(mark in line for line in bottom for mark in marks)


async def watch_answer(
    ptyd_client: RpcClient,
    pane_key: str,
    rev: int,
    agent: str,
    still_answered: Callable[[str, int], bool],
    settle: Callable[[str, int, str], object],
    asks: Callable[[str, int], object] | None = None,
) -> None:
    """Until the answered row at ``rev`` is moved on by something else, settled as
    idle from the terminal, or :data:`WATCH_FOR_S` has passed. ``asks`` is given when
    the answer released a held request of an agent that draws its dialog only after its
    hook returns: that dialog on the screen calls it (the row asks in its terminal)."""
    watch_dialog = asks is not None and agent in DIALOG_AFTER_HOOK_LINES
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
            if watch_dialog and asks is not None and asks_on_screen(agent, seen.lines):
                if still_answered(pane_key, rev):
                    asks(pane_key, rev)
                return
            detail = settled(agent, seen.quiet_ms, seen.lines)
            if detail is not None:
                if still_answered(pane_key, rev):
                    settle(pane_key, rev, detail)
                return
            quiet_s = seen.quiet_ms / 1000
            # Awaiting a dialog: looked for as often as an interrupt line's quiet.
            wait = MARKED_QUIET_S if watch_dialog else max(MARKED_QUIET_S, QUIET_S - quiet_s)
