"""How an ended agent pane is started again on its own conversation (issue 34). Pure.

A pane's agent session is known from its hooks (``agentSession.bound``: agent, session
id, pane). Each agent CLI resumes a session by its id, in the folder it ran in:

* Claude Code: ``claude --resume <session-id>`` continues that conversation under the
  same id; ``--fork-session`` (with ``--resume``) continues it under a new id
  (``claude --help``, Claude Code 2.1; code.claude.com/docs/en/cli-reference).
* Codex: ``codex resume [OPTIONS] [SESSION_ID]`` ("Session id (UUID) or session name",
  ``codex resume --help``, Codex 0.171; developers.openai.com/codex/cli/reference).
  Codex's fork is an interactive ``/fork`` inside a session, not a command: no fork.
* Gemini CLI: ``gemini --resume <latest|index|session-id>`` (``gemini --help``,
  0.61; geminicli.com/docs/cli/session-management): no fork.

The command keeps the options the user started the agent with that set how it works
(its permission mode, model, sandbox, added folders) and drops everything else: a prompt
given on the first command line would otherwise be sent again into the resumed
conversation. Each agent's kept options, with how many values each takes, are below; an
option given as ``--name=value`` is kept whole.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orca.contracts.hooks import SessionBinding
    from orca.contracts.ptyd import SessionRow

# agent -> option -> how many values follow it
KEPT_OPTIONS: Mapping[str, Mapping[str, int]] = {
    "claude": {
        "--permission-mode": 1,
        "--model": 1,
        "--add-dir": 1,
        "--settings": 1,
        "--mcp-config": 1,
        "--allowedTools": 1,
        "--allowed-tools": 1,
        "--disallowedTools": 1,
        "--disallowed-tools": 1,
        "--dangerously-skip-permissions": 0,
        "--verbose": 0,
    },
    "codex": {
        "-a": 1,
        "--ask-for-approval": 1,
        "-s": 1,
        "--sandbox": 1,
        "-m": 1,
        "--model": 1,
        "-c": 1,
        "--config": 1,
        "-p": 1,
        "--profile": 1,
        "--add-dir": 1,
        "--enable": 1,
        "--disable": 1,
        "--search": 0,
        "--dangerously-bypass-approvals-and-sandbox": 0,
    },
    "gemini": {
        "-m": 1,
        "--model": 1,
        "--approval-mode": 1,
        "-y": 0,
        "--yolo": 0,
        "--include-directories": 1,
    },
}
FORKS = frozenset({"claude"})


@dataclass(frozen=True)
class Plan:
    """The command that resumes (or forks) a session, or why there is none."""

    argv: tuple[str, ...] = ()
    refusal: str = ""
    session_id: str = ""  # the conversation resumed (or forked)


def kept_options(agent: str, argv: Sequence[str]) -> list[str]:
    """The options of ``argv`` (its first word, the command, left out) that a resumed
    session keeps."""
    table = KEPT_OPTIONS.get(agent, {})
    kept: list[str] = []
    words = list(argv[1:])
    i = 0
    while i < len(words):
        word = words[i]
        name = word.split("=", 1)[0]
        arity = table.get(name)
        if arity is None:
            i += 1
            continue
        if "=" in word:
            kept.append(word)
            i += 1
            continue
        values = words[i + 1 : i + 1 + arity]
        if len(values) == arity:
            kept.extend([word, *values])
        i += 1 + arity
    return kept


def command_of(agent: str, argv: Sequence[str]) -> str:
    """The agent's command as the user typed it (a path kept) when the pane ran it,
    else its name (looked up on the pane's PATH)."""
    if argv and os.path.basename(argv[0]).startswith(agent):
        return argv[0]
    return agent


def resume_plan(agent: str, argv: Sequence[str], session_id: str, *, fork: bool = False) -> Plan:
    """How to continue ``session_id`` of ``agent`` (started as ``argv``) in a pane."""
    if not session_id:
        return Plan(refusal="no agent session is known for this terminal")
    if agent not in KEPT_OPTIONS:
        return Plan(refusal=f"{agent or 'its agent'} has no resume Orca knows")
    if fork and agent not in FORKS:
        return Plan(refusal=f"{agent} cannot fork a conversation from its command line")
    command = command_of(agent, argv)
    options = kept_options(agent, argv)
    if agent == "codex":
        return Plan(argv=(command, "resume", *options, session_id), session_id=session_id)
    extra = ("--fork-session",) if fork else ()
    return Plan(argv=(command, *options, "--resume", session_id, *extra), session_id=session_id)


def pane_plan(row: SessionRow, bindings: Sequence[SessionBinding], *, fork: bool = False) -> Plan:
    """The plan for the session ``row`` ran, by the pane's newest agent binding."""
    bound = [b for b in bindings if b.pane_key == row.pane_key]
    binding = max(bound, key=lambda b: b.bound_at_ms, default=None)
    if binding is None:
        return resume_plan("", row.argv, "", fork=fork)
    return resume_plan(binding.agent, row.argv, binding.session_id, fork=fork)


def panes_to_resume(live: Iterable[SessionRow], archived: Iterable[SessionRow]) -> list[SessionRow]:
    """The lost sessions that are the newest of their pane (pure)."""
    newest: dict[str, SessionRow] = {}
    for row in [*archived, *live]:
        seen = newest.get(row.pane_key)
        if seen is None or row.created_at > seen.created_at:
            newest[row.pane_key] = row
    return [r for r in newest.values() if r.lost and not r.running]


def plans(
    lost: Sequence[SessionRow], bindings: Sequence[SessionBinding]
) -> list[tuple[SessionRow, list[str], str]]:
    """(session, resume argv, refusal) for each lost session (pure)."""
    return [(row, list(p.argv), p.refusal) for row in lost for p in [pane_plan(row, bindings)]]
