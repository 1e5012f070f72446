"""The rule that settles an answered prompt from the agent's terminal (issue 40 item 4),
and the table ops around it."""

from __future__ import annotations

from typing import Any

import trio

from actors.hooks.answer_watch import (
    IDLE_DETAIL,
    INTERRUPTED_DETAIL,
    MARKED_QUIET_S,
    QUIET_S,
    asks_on_screen,
    settled,
    watch_answer,
)
from orca.contracts import ptyd

CLAUDE_REFUSED = [
    "> deploy it",
    "⏺ Bash(make deploy)",
    "  ⎿  Interrupted · What should Claude do instead?",
    "",
    "╭────────────╮",
    "│ >          │",
    "╰────────────╯",
]


def test_claudes_interrupt_line_settles_after_a_short_quiet() -> None:
    assert settled("claude", int(MARKED_QUIET_S * 1000), CLAUDE_REFUSED) == INTERRUPTED_DETAIL
    assert settled("claude", int(MARKED_QUIET_S * 1000) - 1, CLAUDE_REFUSED) is None


# Gemini CLI 0.61, Esc in its permission dialog (tests/system/test_real_gemini.py's
# screen): the tool's box marked "-", its info line, then its empty input box.
GEMINI_REFUSED = [
    " > orca-run: touch esc-x",
    "╭──────────────────────────────╮",
    "│ -  Shell touch esc-x         │",
    "╰──────────────────────────────╯",
    "ℹ Request cancelled.",
    "                  ? for shortcuts",
    "──────────────────────────────────",
    " Shift+Tab to accept edits",
    " >   Type your message or @path/to/file",
    " workspace (/directory)      sandbox      /model",
    " /tmp/project                no sandbox   Auto",
]


def test_geminis_cancel_line_settles_after_a_short_quiet() -> None:
    assert settled("gemini", int(MARKED_QUIET_S * 1000), GEMINI_REFUSED) == INTERRUPTED_DETAIL
    assert settled("gemini", int(MARKED_QUIET_S * 1000) - 1, GEMINI_REFUSED) is None


# Codex 0.171, Esc while its approval hook was held (as tests/system/test_real_codex.py
# sees its screen).
CODEX_INTERRUPTED = [
    "› orca-ask: touch refused-two",
    "• Exited (status 1) touch refused-two",
    "■ Conversation interrupted - use /feedback if something went wrong",
    "",
    "› Ask Codex to do anything",
]


def test_codexs_interrupt_line_settles_after_a_short_quiet() -> None:
    assert settled("codex", int(MARKED_QUIET_S * 1000), CODEX_INTERRUPTED) == INTERRUPTED_DETAIL
    assert settled("codex", int(MARKED_QUIET_S * 1000) - 1, CODEX_INTERRUPTED) is None


def test_a_quiet_screen_is_an_idle_prompt_for_every_agent() -> None:
    screen = ["› ", "  Working (3s • esc to interrupt)"]
    assert settled("codex", int(QUIET_S * 1000) - 1, screen) is None
    assert settled("codex", int(QUIET_S * 1000), screen) == IDLE_DETAIL
    assert settled("gemini", int(QUIET_S * 1000), []) == IDLE_DETAIL


def test_another_agents_screen_showing_claudes_line_needs_the_full_quiet() -> None:
    assert settled("codex", int(MARKED_QUIET_S * 1000), CLAUDE_REFUSED) is None


def test_an_old_interrupt_line_scrolled_above_the_bottom_does_not_count() -> None:
    old = [CLAUDE_REFUSED[2]] + [f"output line {i}" for i in range(20)]
    assert settled("claude", int(MARKED_QUIET_S * 1000), old) is None


# Codex 0.171's own permission dialog, drawn once its PermissionRequest hook returned
# with no decision (ptyd's screen in tests/system/test_real_codex.py, blank lines cut).
CODEX_DIALOG = [
    "› orca-ask: touch answered-three",
    "• Running touch answered-three",
    "  Would you like to run the following command?",
    "  Environment: local",
    "  Reason: The test asks for this command.",
    "  $ touch answered-three",
    "› 1. Yes, proceed (y)",
    "  2. Yes, and don't ask again for commands that start with `touch answered-",
    "     three` (p)",
    "  3. No, and tell Codex what to do differently (esc)",
    "",
    "  Press enter to confirm or esc to cancel",
]


def test_codexs_dialog_is_seen_on_its_screen_and_no_other_agents() -> None:
    assert asks_on_screen("codex", CODEX_DIALOG)
    assert not asks_on_screen("codex", CODEX_INTERRUPTED)
    # Claude Code shows its dialog while its hook runs; Gemini CLI holds nothing.
    assert not asks_on_screen("claude", CODEX_DIALOG)
    assert not asks_on_screen("gemini", CODEX_DIALOG)


class _Screen:
    """ptyd's ``term.activity`` of one pane: a screen that keeps redrawing (Codex's
    dialog blinks its terminal title), so it is never quiet."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    async def invoke(self, _method: Any, _args: Any, timeout: float) -> ptyd.Activity:
        return ptyd.Activity(session_id="s", running=True, quiet_ms=10, lines=self.lines)


async def _watch(agent: str, lines: list[str], released: bool) -> list[tuple[str, str]]:
    calls: list[tuple[str, str]] = []
    answered = [True]

    def settle(pane: str, rev: int, detail: str) -> None:
        calls.append(("waiting", detail))
        answered[0] = False

    def asks(pane: str, rev: int) -> None:
        calls.append(("blocked", pane))
        answered[0] = False

    with trio.move_on_after(4 * MARKED_QUIET_S):
        await watch_answer(
            _Screen(lines),  # type: ignore[arg-type]
            "p",
            7,
            agent,
            lambda pane, rev: answered[0],
            settle,
            asks if released else None,
        )
    return calls


async def test_a_key_that_released_codexs_held_ask_blocks_again_on_its_dialog() -> None:
    """Issue 40 item 8: ``y`` typed while Orca held Codex's hook released the hold, but
    Codex then drew its own dialog and waits on it: the row is blocked again."""
    with trio.fail_after(10):
        assert await _watch("codex", CODEX_DIALOG, released=True) == [("blocked", "p")]


async def test_an_answer_that_released_nothing_never_blocks_on_the_dialog() -> None:
    """Enter typed in Codex's dialog (nothing held any more), or Claude's own dialog:
    no re-block (a stale dialog line must not bring back a prompt already answered)."""
    with trio.fail_after(10):
        assert await _watch("codex", CODEX_DIALOG, released=False) == []
        assert await _watch("claude", CODEX_DIALOG, released=True) == []
