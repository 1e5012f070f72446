"""Gemini CLI chat files. Pure.

Where and what (read 2026-12 from google-gemini/gemini-cli:
packages/core/src/services/chatRecordingService.ts and chatRecordingTypes.ts):

``~/.gemini/tmp/<project hash>/chats/session-<time>-<id8>.jsonl`` (a subagent's in
``chats/<parent session id>/<session id>.jsonl``); older builds wrote one JSON
document per session, ``session-<time>-<id8>.json``, rewritten whole on every change
(a resumed one is migrated to ``.jsonl``). The project hash is the SHA-256 of the
project root (``getProjectHash``), which is how a chat finds its worktree without a cwd.

JSONL records, one per line: the session header {``sessionId``, ``projectHash``,
``startTime``, ``lastUpdated``, ``kind``}; a message {``id``, ``timestamp``,
``type``: ``user`` | ``gemini`` | ``info`` | ``error`` | ``warning``, ``content``
(a string or parts ``[{text}]``), and on ``gemini`` messages ``toolCalls`` [{name,
args, result}], ``thoughts``, ``model``, ``tokens`` {``input`` (promptTokenCount,
cached included), ``output`` (candidatesTokenCount), ``cached``
(cachedContentTokenCount), ``thoughts`` (thoughtsTokenCount), ``tool``
(toolUsePromptTokenCount), ``total``}}; ``{"$set": {...}}`` metadata updates (which
may carry a whole ``messages`` list); ``{"$rewindTo": id}``. A message is appended
again, whole, every time it changes (its tokens or tool results arrive later), so
rows are keyed by message id and the last copy wins. A rewind removes messages from
the conversation, not their cost: their tokens were spent, so they stay counted.

Billing: ``input`` includes ``cached`` (subtracted here); ``thoughts`` are billed as
output; ``tool`` (tool-use prompt tokens) as input.
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

# Messages one ``$set`` may carry that are read (a history rewrite of a long session);
# beyond it the rest of that list is skipped (the messages' own records have them).
MAX_MESSAGES_PER_SET = 10_000


def parse_gemini_record(doc: dict[str, Any], facts: SessionFacts, out: Parsed) -> None:
    """One JSONL record (or one message of a legacy document)."""
    if "$set" in doc:
        update = doc.get("$set")
        if isinstance(update, dict):
            _header(update, facts)
            messages = update.get("messages")
            if isinstance(messages, list):
                for message in messages[:MAX_MESSAGES_PER_SET]:
                    if isinstance(message, dict):
                        _message(message, facts, out)
        return
    if "$rewindTo" in doc:
        return
    if isinstance(doc.get("id"), str) and "type" in doc:
        _message(doc, facts, out)
        return
    _header(doc, facts)


def parse_gemini_document(doc: dict[str, Any], facts: SessionFacts, out: Parsed) -> None:
    """A legacy whole-session ``.json`` (ConversationRecord)."""
    _header(doc, facts)
    messages = doc.get("messages")
    if isinstance(messages, list):
        for message in messages:
            if isinstance(message, dict):
                _message(message, facts, out)


def _header(doc: dict[str, Any], facts: SessionFacts) -> None:
    facts.session_id = facts.session_id or text_str(doc.get("sessionId"))
    facts.project_hash = facts.project_hash or text_str(doc.get("projectHash"))


def _message(doc: dict[str, Any], facts: SessionFacts, out: Parsed) -> None:
    mid = text_str(doc.get("id"))
    mtype = doc.get("type")
    if not mid or mtype not in ("user", "gemini"):
        return
    ts = timestamp_ms(doc.get("timestamp"))
    text = collect_strings(doc.get("content"), TEXT_CHARS)
    rows: list[TextEntry] = []
    out.replace_message(mid, rows)
    if mtype == "user":
        if text:
            rows.append(TextEntry("user", ts, text, mid))
            facts.title = facts.title or cut(text, 1000)
        return
    if text:
        rows.append(TextEntry("assistant", ts, text, mid))
    calls = doc.get("toolCalls")
    if isinstance(calls, list):
        for call in calls:
            if not isinstance(call, dict):
                continue
            name = text_str(call.get("name"))
            args = compact_json(call.get("args"), TOOL_INPUT_CHARS)
            rows.append(TextEntry("tool_use", ts, f"{name} {args}".strip(), mid))
            result = collect_strings(call.get("result"), TOOL_OUTPUT_CHARS)
            if result:
                rows.append(TextEntry("tool_result", ts, result, mid))
    tokens = doc.get("tokens")
    if isinstance(tokens, dict):
        given = as_int(tokens.get("input"))
        cached = min(as_int(tokens.get("cached")), given) if given else 0
        thoughts = as_int(tokens.get("thoughts"))
        record = UsageRecord(
            ts_ms=ts,
            model=text_str(doc.get("model")),
            msg_key=mid,
            input=given - cached + as_int(tokens.get("tool")),
            cache_read=cached,
            output=as_int(tokens.get("output")) + thoughts,
            reasoning=thoughts,
        )
        if record.total > 0:
            out.usage.append(record)
