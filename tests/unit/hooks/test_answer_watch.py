"""The rule that settles an answered prompt from the agent's terminal (issue 40 item 4),
and the table ops around it."""

from __future__ import annotations

from actors.hooks.answer_watch import (
    IDLE_DETAIL,
    INTERRUPTED_DETAIL,
    MARKED_QUIET_S,
    QUIET_S,
    settled,
)

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
