"""Codex CLI rollouts: one JSON object per line. Pure.

Where and what (read 2026-12 from openai/codex: ``RolloutLine`` / ``RolloutItem`` in
codex-rs/protocol/src/protocol.rs, ``TokenUsage`` in the same file; ccusage's Codex
notes, apps/codex/CLAUDE.md):

``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`` (``CODEX_HOME``
defaults to ``~/.codex``; ``archived_sessions/`` has the same layout). Every line is
``{"timestamp", "type", "payload"}``; ``type`` is ``session_meta`` (first line:
``payload.id`` the session, ``cwd``, ``cli_version``, ``forked_from_id`` on a fork),
``turn_context`` (``payload.model``, ``cwd``: the model of the turn that follows),
``response_item`` (the model's items: ``message``, ``function_call`` {name,
arguments}, ``function_call_output`` {output}, ``custom_tool_call`` {name, input},
``custom_tool_call_output``, ``local_shell_call`` {action.command}, ``reasoning``),
``event_msg`` (``user_message`` {message}, ``agent_message`` {message},
``token_count`` {info: {total_token_usage, last_token_usage} | null}) or
``compacted``.

Tokens: ``total_token_usage`` is the session's *cumulative* count
{input_tokens (including cached_input_tokens), cached_input_tokens, output_tokens
(including reasoning_output_tokens), reasoning_output_tokens, total_tokens}. Each
request's own count is the difference from the previous ``token_count``; an event
that repeats the last totals adds nothing; totals that go down (a new baseline) count
from zero. A fork's file starts with a replay of its parent's lines, so its first
deltas are the parent's: each delta is keyed by its lineage (the session, or the one a
fork was forked from) and the cumulative totals it ends at, and the index counts one
copy per key. Text rows come from ``event_msg`` (the person's
words, the agent's answers) and the tool items of ``response_item``; its
``message`` items repeat the same words plus injected context, so they are skipped.
"""

from __future__ import annotations

from typing import Any

from actors.vault.records import Parsed, SessionFacts, TextEntry, UsageRecord
from actors.vault.textparts import (
    TEXT_CHARS,
    TOOL_INPUT_CHARS,
    TOOL_OUTPUT_CHARS,
    as_int,
    collect_strings,
    compact_json,
    cut,
    text_str,
    timestamp_ms,
)

_TOTAL_FIELDS = (
    "input_tokens",
    "cached_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
    "total_tokens",
)


def parse_codex_line(doc: dict[str, Any], facts: SessionFacts, out: Parsed) -> None:
    kind = doc.get("type")
    payload = doc.get("payload")
    if not isinstance(payload, dict):
        return
    ts = timestamp_ms(doc.get("timestamp"))
    if kind == "session_meta":
        facts.session_id = facts.session_id or text_str(payload.get("id"))
        facts.cwd = facts.cwd or text_str(payload.get("cwd"))
        facts.forked_from = facts.forked_from or text_str(payload.get("forked_from_id"))
    elif kind == "turn_context":
        facts.model = text_str(payload.get("model")) or facts.model
        facts.cwd = facts.cwd or text_str(payload.get("cwd"))
    elif kind == "event_msg":
        _event(payload, ts, facts, out)
    elif kind == "response_item":
        _item(payload, ts, out)
        if payload.get("type") == "message" and not facts.event_text:
            _message(payload, ts, facts, out)


def _message(payload: dict[str, Any], ts: int, facts: SessionFacts, out: Parsed) -> None:
    """A ``response_item`` message: the conversation itself in rollouts that write no
    ``event_msg`` text (Codex 0.171, issue 40 item 8). The context Codex injects as user
    messages (``<environment_context>``, ``<user_instructions>``, AGENTS.md) is not the
    person's words and is left out."""
    role = payload.get("role")
    if role not in ("user", "assistant"):
        return
    parts = payload.get("content")
    if not isinstance(parts, list):
        return
    kinds = ("input_text",) if role == "user" else ("output_text",)
    text = "\n".join(
        text_str(p.get("text")) for p in parts if isinstance(p, dict) and p.get("type") in kinds
    ).strip()
    if not text or (role == "user" and _injected(text)):
        return
    out.entries.append(TextEntry(role, ts, cut(text, TEXT_CHARS)))
    if role == "user":
        facts.title = facts.title or cut(text, 1000)


def _injected(text: str) -> bool:
    """Context Codex puts in a user message, not typed by the person."""
    head = text.strip()
    if head.startswith("# AGENTS.md"):
        return True
    if not (head.startswith("<") and head.endswith(">")):
        return False
    tag = head[1:].split(">", 1)[0]  # <environment_context>, <permissions instructions>...
    return bool(tag) and tag.replace("_", "").replace(" ", "").isalpha()


def _event(payload: dict[str, Any], ts: int, facts: SessionFacts, out: Parsed) -> None:
    ptype = payload.get("type")
    if ptype in ("user_message", "agent_message"):
        facts.event_text = True
    if ptype == "user_message":
        text = text_str(payload.get("message"))
        if text:
            out.entries.append(TextEntry("user", ts, cut(text, TEXT_CHARS)))
            facts.title = facts.title or cut(text, 1000)
    elif ptype == "agent_message":
        text = text_str(payload.get("message"))
        if text:
            out.entries.append(TextEntry("assistant", ts, cut(text, TEXT_CHARS)))
    elif ptype == "token_count":
        usage = _token_delta(payload.get("info"), ts, facts)
        if usage is not None:
            out.usage.append(usage)


def _token_delta(info: Any, ts: int, facts: SessionFacts) -> UsageRecord | None:
    if not isinstance(info, dict):
        return None  # ``info: null``: a rate-limit update, no tokens yet
    total = info.get("total_token_usage")
    key: str | None
    if isinstance(total, dict):
        current = [as_int(total.get(name)) for name in _TOTAL_FIELDS]
        previous = facts.totals
        if all(c >= p for c, p in zip(current, previous, strict=True)):
            delta = [c - p for c, p in zip(current, previous, strict=True)]
        else:
            delta = current  # the cumulative count restarted
        facts.totals = current
        # The lineage names the key: a fork's replay of its parent's lines is the same
        # request as the parent's (one copy counts), another session's equal totals are
        # not (issue 40 item 8: a second session was dropped).
        lineage = facts.forked_from or facts.session_id
        key = f"cum:{lineage}:" + ":".join(str(n) for n in current)
    else:
        last = info.get("last_token_usage")
        if not isinstance(last, dict):
            return None
        delta = [as_int(last.get(name)) for name in _TOTAL_FIELDS]
        key = None
    given, cached, output, reasoning, _total = delta
    if given == 0 and cached == 0 and output == 0:
        return None
    return UsageRecord(
        ts_ms=ts,
        model=facts.model,
        msg_key=key,
        input=max(0, given - cached),
        cache_read=min(cached, given) if given else cached,
        output=output,
        reasoning=min(reasoning, output) if output else reasoning,
    )


def _item(payload: dict[str, Any], ts: int, out: Parsed) -> None:
    ptype = payload.get("type")
    if ptype in ("function_call", "custom_tool_call"):
        name = text_str(payload.get("name"))
        args = payload.get("arguments") if ptype == "function_call" else payload.get("input")
        out.entries.append(
            TextEntry("tool_use", ts, f"{name} {compact_json(args, TOOL_INPUT_CHARS)}".strip())
        )
    elif ptype == "local_shell_call":
        action = payload.get("action")
        command = action.get("command") if isinstance(action, dict) else None
        out.entries.append(
            TextEntry("tool_use", ts, f"shell {compact_json(command, TOOL_INPUT_CHARS)}".strip())
        )
    elif ptype in ("function_call_output", "custom_tool_call_output"):
        body = collect_strings(payload.get("output"), TOOL_OUTPUT_CHARS)
        if body:
            out.entries.append(TextEntry("tool_result", ts, body))
