"""01-23, hooks' half: which hook asks gitwatch to name a worktree, and how often."""

from __future__ import annotations

from typing import Any, cast

import pytest
import trio

from actors.hooks.first_prompt import (
    MAX_PROMPT_CHARS,
    FirstPrompt,
    FirstPromptGate,
    ask_to_name_worktree,
    prompt_text,
)
from orca.actor.client import RpcClient
from orca.contracts import gitwatch
from orca.wire.errors import NotFound, OrcaError, Timeout, Unavailable

WT = "repo1::/w/untitled-1a2b3c"
OTHER = "repo1::/w/untitled-4d5e6f"


def _claude(prompt: object, event: str = "UserPromptSubmit") -> dict[str, object]:
    return {"hook_event_name": event, "session_id": "s", "prompt": prompt}


@pytest.mark.parametrize(
    ("agent", "payload"),
    [
        ("claude", _claude("Fix the login page")),
        ("codex", _claude("Fix the login page")),
        ("gemini", {"hook_event_name": "BeforeAgent", "prompt": "Fix the login page"}),
        ("cursor", {"hook_event_name": "beforeSubmitPrompt", "prompt": "Fix the login page"}),
    ],
)
def test_each_agents_prompt_event_carries_the_prompt(
    agent: str, payload: dict[str, object]
) -> None:
    """Claude's and Codex's UserPromptSubmit, Gemini's BeforeAgent, Cursor's
    beforeSubmitPrompt: the prompt is theirs to name the worktree."""
    assert prompt_text(agent, payload) == "Fix the login page"


@pytest.mark.parametrize(
    ("agent", "payload"),
    [
        ("claude", _claude("Fix it", event="PreToolUse")),  # not a prompt
        ("claude", {"hook_event_name": "SessionStart", "source": "startup"}),
        ("gemini", _claude("Fix it")),  # Gemini's prompt event is BeforeAgent
        ("opencode", _claude("Fix it")),  # no prompt event known
        ("claude", _claude("")),
        ("claude", _claude(" \n\t ")),
        ("claude", _claude(["Fix it"])),  # not text
        ("claude", {"hook_event_name": "UserPromptSubmit"}),  # no prompt at all
        ("claude", _claude("/init")),  # a slash command describes no work
        ("claude", _claude("  /model opus")),
        ("claude", {"state": "working", "prompt": "Fix it"}),  # an explicit state
    ],
)
def test_other_hooks_carry_no_prompt(agent: str, payload: dict[str, object]) -> None:
    """Only a user prompt with text names a worktree."""
    assert prompt_text(agent, payload) is None


def test_a_long_prompt_is_cut_before_it_is_sent() -> None:
    """Only its first line names the worktree; a pasted file is not sent whole."""
    text = prompt_text("claude", _claude("Fix it\n" + "x" * (2 * MAX_PROMPT_CHARS)))
    assert text is not None and len(text) == MAX_PROMPT_CHARS and text.startswith("Fix it\n")


def test_a_worktree_is_asked_about_once_its_answer_came() -> None:
    """The first prompt asks; after gitwatch's answer, later prompts ask nothing."""
    gate = FirstPromptGate()
    assert gate.claim("claude", _claude("Fix the login"), WT) == FirstPrompt(WT, "Fix the login")
    gate.answered(WT)
    assert gate.claim("claude", _claude("Now the tests"), WT) is None
    assert gate.claim("claude", _claude("Add dark mode"), OTHER) == FirstPrompt(
        OTHER, "Add dark mode"
    )


def test_a_prompt_while_the_call_is_in_flight_asks_nothing() -> None:
    """Two prompts racing make one call."""
    gate = FirstPromptGate()
    assert gate.claim("claude", _claude("Fix the login"), WT) is not None
    assert gate.claim("codex", _claude("Fix the login"), WT) is None


def test_a_failed_call_lets_the_next_prompt_ask() -> None:
    """gitwatch down or the prompt gave no name: the next prompt asks again."""
    gate = FirstPromptGate()
    assert gate.claim("claude", _claude("Fix the login"), WT) is not None
    gate.failed(WT)
    assert gate.claim("claude", _claude("Then the tests"), WT) == FirstPrompt(WT, "Then the tests")


def test_a_hook_that_is_no_prompt_claims_nothing() -> None:
    """A SessionStart, a slash command or a row with no worktree leaves the worktree
    unasked, so the first real prompt still names it."""
    gate = FirstPromptGate()
    assert gate.claim("claude", {"hook_event_name": "SessionStart"}, WT) is None
    assert gate.claim("claude", _claude("/clear"), WT) is None
    assert gate.claim("claude", _claude("Fix the login"), "") is None
    assert gate.claim("claude", _claude("Fix the login"), WT) is not None


def test_the_answered_worktrees_are_bounded() -> None:
    """Past the bound the oldest is forgotten (asked again, for the same answer)."""
    gate = FirstPromptGate(capacity=2)
    for wt in ("a::/1", "b::/2", "c::/3"):
        assert gate.claim("claude", _claude("go on"), wt) is not None
        gate.answered(wt)
    assert gate.claim("claude", _claude("go on"), "a::/1") is not None
    assert gate.claim("claude", _claude("go on"), "c::/3") is None


class FakeGitwatch:
    """gitwatch's renameFromFirstMessage: answers (or raises) what the test says."""

    def __init__(self, answer: gitwatch.FirstMessageRename | OrcaError) -> None:
        self.answer = answer
        self.calls: list[gitwatch.FirstMessageArgs] = []

    async def invoke(self, op: Any, args: Any, *, timeout: float) -> Any:
        assert op is gitwatch.WORKTREE_RENAME_FROM_FIRST_MESSAGE and timeout > 0
        self.calls.append(args)
        if isinstance(self.answer, OrcaError):
            raise self.answer
        return self.answer


RENAMED = gitwatch.FirstMessageRename(
    renamed=True,
    rename=gitwatch.Renamed(
        old_worktree_id=WT, new_worktree_id="repo1::/w/Fix-the-login", path="/w/Fix-the-login"
    ),
)


@pytest.mark.parametrize(
    ("answer", "asks_again"),
    [
        (RENAMED, False),
        (gitwatch.FirstMessageRename(renamed=False, skipped="no rename pending"), False),
        (gitwatch.FirstMessageRename(renamed=False, skipped="rename failed: taken"), False),
        (NotFound("no worktree"), False),
        (
            gitwatch.FirstMessageRename(
                renamed=False, skipped="no usable name in message", still_pending=True
            ),
            True,
        ),
        (Unavailable("gitwatch is down"), True),
        (Timeout("no reply"), True),
    ],
)
async def test_the_answer_decides_whether_a_later_prompt_asks(
    answer: gitwatch.FirstMessageRename | OrcaError, asks_again: bool
) -> None:
    """Renamed, nothing pending, a failed rename, no such worktree: final. The flag
    still set, or no answer: the next prompt asks. Nothing is raised into the hook path."""
    with trio.fail_after(5):
        gate = FirstPromptGate()
        client = FakeGitwatch(answer)
        question = gate.claim("claude", _claude("Fix the login\nand its tests"), WT)
        assert question is not None
        await ask_to_name_worktree(cast(RpcClient, client), gate, question)
        sent = client.calls[0]
        assert (sent.worktree_id, sent.message) == (WT, "Fix the login\nand its tests")
        again = gate.claim("claude", _claude("next"), WT)
        assert (again is not None) == asks_again
