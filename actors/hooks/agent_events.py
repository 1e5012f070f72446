"""Each agent's documented hook events mapped to row states. Pure.

The hook script forwards the agent's own hook payload unchanged (the JSON the agent
writes to the hook's stdin), so the event name and fields are the agent's:

* Claude Code - ``hook_event_name`` in SessionStart, UserPromptSubmit, PreToolUse,
  PostToolUse, PostToolUseFailure, PermissionRequest, Notification (with
  ``notification_type``: ``permission_prompt``, ``idle_prompt``, ...), Stop,
  StopFailure, SubagentStart, SubagentStop, PreCompact, PostCompact, SessionEnd;
* Codex - the same PascalCase names (SessionStart, UserPromptSubmit, PreToolUse,
  PermissionRequest, PostToolUse, SubagentStart/Stop, PreCompact/PostCompact, Stop);
* Gemini CLI - SessionStart, SessionEnd, BeforeAgent, AfterAgent, BeforeModel,
  AfterModel, BeforeToolSelection, BeforeTool, AfterTool, PreCompress and
  Notification (``notification_type`` ``ToolPermission``);
* Cursor - camelCase ``hook_event_name`` (beforeSubmitPrompt, beforeShellExecution,
  beforeMCPExecution, beforeReadFile, afterFileEdit, stop, ...);
* OpenCode - plugin events by ``type`` (``session.idle``, ``permission.asked``, ...);
* Amp and the ``generic`` agent - an explicit ``{"state": ...}`` document, which every
  agent may also send (a wrapper script that knows better than the event table).

Sources (read 2026-12): Claude Code hooks reference https://code.claude.com/docs/en/hooks
(StopFailure "runs instead of Stop when the turn ends due to an API error";
PostToolUseFailure after a tool call fails; PermissionDenied when auto mode or a rule
denies a call and Claude carries on; SubagentStop when a subagent finishes - it may
finish after the main turn's Stop); Codex hooks https://developers.openai.com/codex/hooks
and its legacy ``notify`` (``codex-rs/hooks/src/legacy_notify.rs``: one JSON argument
``{"type": "agent-turn-complete", "thread-id", "turn-id", "cwd", ...}``); Gemini CLI
https://github.com/google-gemini/gemini-cli/blob/main/docs/hooks/reference.md.

``working`` = the agent is in a turn; ``blocked`` = it stopped on a permission prompt;
``waiting`` = it sits at its input prompt; ``done`` = the turn finished; a ``clear``
means the agent session ended and the row goes away. Unknown events change nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from orca.hook_script import KNOWN_AGENTS as KNOWN_AGENTS  # one list: script and endpoint
from orca.model.agent_status import AGENT_STATES, AgentState

Action = AgentState | Literal["clear"]

_TURN_EVENTS: Mapping[str, Action] = {
    "SessionStart": "waiting",
    "UserPromptSubmit": "working",
    "PreToolUse": "working",
    "PostToolUse": "working",
    # The turn goes on after a failed tool (the model sees the error): an approved tool
    # that fails must not leave the row ``blocked``.
    "PostToolUseFailure": "working",
    "PermissionRequest": "blocked",
    # Auto mode / a rule denied the call; Claude carries on with another approach.
    "PermissionDenied": "working",
    "SubagentStart": "working",
    # A subagent finishing hands control back to the main agent - if its turn is still
    # open (``RESUME_ONLY_EVENTS``): a late SubagentStop never reopens a finished turn.
    "SubagentStop": "working",
    "PreCompact": "working",
    "PostCompact": "working",
    "Stop": "done",
    "StopFailure": "done",
    "SessionEnd": "clear",
}

# Codex: the hook events above plus the legacy ``notify`` program's payload, whose
# ``type`` names the event (only ``agent-turn-complete`` exists).
_CODEX_EVENTS: Mapping[str, Action] = {**_TURN_EVENTS, "agent-turn-complete": "done"}

# Events that only continue an open turn (``StatusEvent.resume_only``).
RESUME_ONLY_EVENTS: frozenset[str] = frozenset({"SubagentStop"})
# Events that never end a turn blocked on a permission (``StatusEvent.not_while_blocked``):
# Codex's legacy notify also fires for its side threads (the session title on the first
# turn), so the row went blocked -> done while Codex still waited for its approval and
# the held request left every face (issue 40 item 8). Codex's Stop hook ends the turn.
NOT_WHILE_BLOCKED_EVENTS: frozenset[str] = frozenset({"agent-turn-complete"})

_GEMINI_EVENTS: Mapping[str, Action] = {
    "SessionStart": "waiting",
    "BeforeAgent": "working",
    "BeforeModel": "working",
    "AfterModel": "working",
    "BeforeToolSelection": "working",
    "BeforeTool": "working",
    "AfterTool": "working",
    "PreCompress": "working",
    "AfterAgent": "done",
    "SessionEnd": "clear",
}

_CURSOR_EVENTS: Mapping[str, Action] = {
    "sessionStart": "waiting",
    "beforeSubmitPrompt": "working",
    "beforeShellExecution": "working",
    "afterShellExecution": "working",
    "beforeMCPExecution": "working",
    "afterMCPExecution": "working",
    "beforeReadFile": "working",
    "afterFileEdit": "working",
    "afterAgentResponse": "working",
    "afterAgentThought": "working",
    "stop": "done",
    "sessionEnd": "clear",
}

_OPENCODE_EVENTS: Mapping[str, Action] = {
    "session.created": "waiting",
    "tool.execute.before": "working",
    "tool.execute.after": "working",
    "permission.asked": "blocked",
    "permission.updated": "blocked",
    "permission.replied": "working",
    "session.idle": "done",
    "session.deleted": "clear",
}

_EVENT_TABLES: Mapping[str, Mapping[str, Action]] = {
    "claude": _TURN_EVENTS,
    "codex": _CODEX_EVENTS,
    "gemini": _GEMINI_EVENTS,
    "cursor": _CURSOR_EVENTS,
    "opencode": _OPENCODE_EVENTS,
}

# Notification subtypes that mean "the agent needs the user" (Claude / Gemini docs).
_NOTIFICATION_ACTIONS: Mapping[str, Action] = {
    "permission_prompt": "blocked",
    "elicitation_dialog": "blocked",
    "ToolPermission": "blocked",
    "idle_prompt": "waiting",
    # The user answered an MCP elicitation: the turn goes on.
    "elicitation_response": "working",
    "elicitation_complete": "working",
}
MAX_DETAIL_CHARS = 200
# The agents whose permission ask Orca holds (``orca.integrations`` ``held_events``; a
# unit test keeps the two equal): ``orca approve``, the web and ``orca ui`` answer them.
# Every other agent (Gemini CLI: its Notification hook holds nothing) asks in its own
# terminal only, and its blocked row says so in every face (issue 40 item 8).
HELD_ASKS = frozenset({"claude", "codex"})
ANSWER_IN_TERMINAL = "answer in its terminal"


@dataclass(frozen=True)
class HookDecision:
    """What one hook payload means for the row; ``action is None`` = no change."""

    action: Action | None
    event: str
    detail: str = ""
    session_id: str = ""

    @property
    def resume_only(self) -> bool:
        return self.event in RESUME_ONLY_EVENTS

    @property
    def not_while_blocked(self) -> bool:
        return self.event in NOT_WHILE_BLOCKED_EVENTS


def _text(payload: Mapping[str, object], *keys: str) -> str:
    for key in keys:
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _explicit_action(payload: Mapping[str, object]) -> Action | None:
    state = payload.get("state")
    if state == "clear":
        return "clear"
    for candidate in AGENT_STATES:
        if state == candidate:
            return candidate
    return None


def decide(agent: str, payload: Mapping[str, object]) -> HookDecision:
    """Map one agent hook payload to an action on the pane's row."""
    event = _text(payload, "hook_event_name", "type", "event")
    session_id = _text(
        payload, "session_id", "conversation_id", "sessionID", "sessionId", "thread-id"
    )
    explicit = _explicit_action(payload)
    if explicit is not None:
        detail = _text(payload, "detail", "message")
        return HookDecision(
            explicit, event or "state", _where_to_answer(agent, explicit, detail), session_id
        )
    action: Action | None = None
    detail = _text(payload, "tool_name", "tool")
    if event == "Notification":
        action = _NOTIFICATION_ACTIONS.get(_text(payload, "notification_type"))
        detail = _text(payload, "message")
    else:
        action = _EVENT_TABLES.get(agent, {}).get(event)
    return HookDecision(action, event, _where_to_answer(agent, action, detail), session_id)


def _where_to_answer(agent: str, action: Action | None, detail: str) -> str:
    """The row's detail, bounded; a blocked agent whose ask Orca cannot hold is told to
    be answered in its terminal."""
    if action == "blocked" and agent not in HELD_ASKS:
        detail = f"{ANSWER_IN_TERMINAL}: {detail}" if detail else ANSWER_IN_TERMINAL
    return detail[:MAX_DETAIL_CHARS]
