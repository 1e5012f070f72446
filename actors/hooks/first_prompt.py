"""The agent's first prompt names its workspace (seed 01 §4.3, 01-23): hooks' half.

A worktree created with a placeholder name (``orca worktree create REPO`` without a
NAME) carries ``pendingFirstAgentMessageRename`` in its meta; gitwatch's
``worktree.renameFromFirstMessage`` renames it from a message once and clears the flag
(``actors/gitwatch/firstmessage.py``). Hooks is the one that sees the user's prompts,
so it makes the call: when an accepted hook is a user prompt with text
(:data:`PROMPT_EVENTS`), hooks asks gitwatch to name the row's worktree from it.

Hooks does not mirror the flag; gitwatch decides (a worktree the user named, or renamed
with ``worktree.rename``, has none and is never renamed). So that every prompt does not
cost a call, :class:`FirstPromptGate` asks about each worktree once per incarnation:
an answer is final (renamed, nothing pending, a rename that failed) unless it says the
flag is still set (``stillPending``: the prompt gave no usable name); that, or a failed
call (gitwatch down, a timeout), lets the next prompt ask again (the op is idempotent: a rename that happened answers "no
rename pending"). A restart of hooks asks each worktree once more, for the same answer.

A slash command (``/init``, ``/model``) describes no work: it names nothing and leaves
the question to the next prompt. The call runs in the background; the hook's reply never
waits for it, and its failure is logged, never raised into the hook path.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass

from orca.actor.client import RpcClient
from orca.contracts import gitwatch
from orca.wire.errors import BadRequest, NotFound, OrcaError

log = logging.getLogger(__name__)

# The hook events, per agent, that carry the user's prompt in ``prompt``: Claude Code's
# and Codex's UserPromptSubmit, Gemini CLI's BeforeAgent, Cursor's beforeSubmitPrompt
# (each tool's hooks reference, as in actors/hooks/agent_events.py).
PROMPT_EVENTS: Mapping[str, frozenset[str]] = {
    "claude": frozenset({"UserPromptSubmit"}),
    "codex": frozenset({"UserPromptSubmit"}),
    "gemini": frozenset({"BeforeAgent"}),
    "cursor": frozenset({"beforeSubmitPrompt"}),
}
# Only the first line names the worktree (at most 40 characters, gitwatch's
# FIRST_MESSAGE_NAME_CHARS); a prompt may paste a whole file, so send a bounded head.
MAX_PROMPT_CHARS = 4096
# Worktrees remembered as asked; one forgotten is asked again, for the same answer.
ASKED_CAPACITY = 4096
# A rename moves a branch and a folder and waits for store's identity migration.
RENAME_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class FirstPrompt:
    """One question for gitwatch: name ``worktree_id`` from ``message``."""

    worktree_id: str
    message: str


def prompt_text(agent: str, payload: Mapping[str, object]) -> str | None:
    """The user's prompt a hook payload carries, or None (not a prompt event, no text,
    a slash command)."""
    event = payload.get("hook_event_name")
    if not isinstance(event, str) or event not in PROMPT_EVENTS.get(agent, ()):
        return None
    prompt = payload.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return None
    if prompt.lstrip().startswith("/"):
        return None
    return prompt[:MAX_PROMPT_CHARS]


class FirstPromptGate:
    """Which worktrees hooks still asks gitwatch to name from a prompt.

    Invariant: a worktree is in at most one of ``_asking`` (a call in flight) and
    ``_answered``; only :meth:`claim` puts it in ``_asking``, so two prompts racing
    make one call.
    """

    def __init__(self, capacity: int = ASKED_CAPACITY) -> None:
        self._capacity = capacity
        self._asking: set[str] = set()
        self._answered: OrderedDict[str, None] = OrderedDict()

    def claim(
        self, agent: str, payload: Mapping[str, object], worktree_id: str
    ) -> FirstPrompt | None:
        """The question an accepted hook of ``worktree_id``'s pane raises, if any; the
        worktree is then in flight until :meth:`answered` or :meth:`failed`."""
        if not worktree_id or worktree_id in self._asking or worktree_id in self._answered:
            return None
        message = prompt_text(agent, payload)
        if message is None:
            return None
        self._asking.add(worktree_id)
        return FirstPrompt(worktree_id, message)

    def answered(self, worktree_id: str) -> None:
        """gitwatch answered (renamed, or nothing to do): never ask about it again."""
        self._asking.discard(worktree_id)
        self._answered[worktree_id] = None
        self._answered.move_to_end(worktree_id)
        while len(self._answered) > self._capacity:
            self._answered.popitem(last=False)

    def failed(self, worktree_id: str) -> None:
        """The call failed: the worktree's next prompt asks again."""
        self._asking.discard(worktree_id)


async def ask_to_name_worktree(
    gitwatch_client: RpcClient, gate: FirstPromptGate, question: FirstPrompt
) -> None:
    """Ask gitwatch to name the worktree from the prompt; log the outcome, raise nothing."""
    wt = question.worktree_id
    try:
        result = await gitwatch_client.invoke(
            gitwatch.WORKTREE_RENAME_FROM_FIRST_MESSAGE,
            gitwatch.FirstMessageArgs(worktree_id=wt, message=question.message),
            timeout=RENAME_TIMEOUT_S,
        )
    except (NotFound, BadRequest) as exc:
        gate.answered(wt)  # no such worktree (a folder, one gone): asking again won't help
        log.debug("first prompt of %s names nothing: %s", wt, exc)
        return
    except OrcaError as exc:
        gate.failed(wt)
        log.warning("first prompt of %s: gitwatch did not name it (%s); next prompt asks", wt, exc)
        return
    if result.still_pending:
        gate.failed(wt)  # the prompt gave no name: the next one may
    else:
        gate.answered(wt)
    if result.renamed and result.rename is not None:
        log.info(
            "first prompt named %s %r (%s)", wt, result.rename.display_name, result.rename.path
        )
    else:
        log.debug("first prompt of %s named nothing: %s", wt, result.skipped)
