"""Claude Code transcripts: one JSON object per line. Pure.

Where and what (read 2026-12 from Claude Code transcripts as public parsers document
them: ccusage's data loader, github.com/ryoppippi/ccusage; the field tables in
23min/copilot-lens docs/research/claude-code-sessions.md):

``~/.claude/projects/<cwd with / as ->/<sessionId>.jsonl`` (``CLAUDE_CONFIG_DIR``
moves ``~/.claude``); a subagent's own conversation in
``<sessionId>/subagents/agent-<id>.jsonl``. Each line has ``type`` (``user``,
``assistant``, ``summary``, ``system``, ``progress``, ``file-history-snapshot``, ...),
``sessionId``, ``cwd``, ``timestamp`` (ISO 8601), ``isSidechain`` (a subagent's
line), ``uuid``/``parentUuid``; ``user``/``assistant`` lines carry ``message``
{``id``, ``role``, ``model``, ``content`` (a string or blocks: ``text``, ``thinking``,
``tool_use`` {name, input}, ``tool_result`` {content}, ``image``), ``usage``}; an
assistant line also carries ``requestId``. ``message.usage`` is the Messages API's:
``input_tokens`` (the uncached input), ``output_tokens``,
``cache_creation_input_tokens`` with its split by lifetime ``cache_creation``
{``ephemeral_5m_input_tokens``, ``ephemeral_1h_input_tokens``} (older lines have no
split: their writes are the default 5-minute ones), ``cache_read_input_tokens``.

One API response is written as several lines (one per content block) that repeat its
``message.id``, ``requestId`` and usage, the early ones sometimes with partial
counts: each is a copy of one request (the index keeps the largest, ``queries``). A
sidechain line that repeats a main-chain message id is a replay of the parent's
history (ccusage pull 1155: ``/btw`` sidechains): dropped when counting. ``thinking``
blocks are not indexed (the model's hidden reasoning, often redacted).
"""

from __future__ import annotations

from typing import Any

from actors.vault.records import EntryKind, Parsed, SessionFacts, TextEntry, UsageRecord
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

# Claude Code's own marker for a message it made up locally (no API call, zero usage).
SYNTHETIC_MODEL = "<synthetic>"


def parse_claude_line(doc: dict[str, Any], facts: SessionFacts, out: Parsed) -> None:
    """Fold one decoded line into ``out`` and ``facts``."""
    kind = doc.get("type")
    ts = timestamp_ms(doc.get("timestamp"))
    session = text_str(doc.get("sessionId"))
    if session and not facts.session_id:
        facts.session_id = session
    cwd = text_str(doc.get("cwd"))
    if cwd and not facts.cwd:
        facts.cwd = cwd
    if kind == "summary":
        summary = text_str(doc.get("summary"))
        if summary:
            out.entries.append(TextEntry("summary", ts, cut(summary, TEXT_CHARS)))
        return
    if kind not in ("user", "assistant"):
        return
    message = doc.get("message")
    if not isinstance(message, dict):
        return
    role: EntryKind = "assistant" if kind == "assistant" else "user"
    _content_entries(message.get("content"), role, ts, facts, out, meta=bool(doc.get("isMeta")))
    if kind == "assistant":
        usage = _usage(doc, message, ts)
        if usage is not None:
            out.usage.append(usage)


def _content_entries(
    content: Any, role: EntryKind, ts: int, facts: SessionFacts, out: Parsed, *, meta: bool
) -> None:
    if isinstance(content, str):
        _text(content, role, ts, facts, out, meta=meta)
        return
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "text":
            _text(text_str(block.get("text")), role, ts, facts, out, meta=meta)
        elif btype == "tool_use":
            name = text_str(block.get("name"))
            args = compact_json(block.get("input"), TOOL_INPUT_CHARS)
            out.entries.append(TextEntry("tool_use", ts, f"{name} {args}".strip()))
        elif btype == "tool_result":
            body = collect_strings(block.get("content"), TOOL_OUTPUT_CHARS)
            if body:
                out.entries.append(TextEntry("tool_result", ts, body))


def _text(
    text: str, role: EntryKind, ts: int, facts: SessionFacts, out: Parsed, *, meta: bool
) -> None:
    if not text:
        return
    out.entries.append(TextEntry(role, ts, cut(text, TEXT_CHARS)))
    if role == "user" and not meta and not facts.title:
        facts.title = cut(text, 1000)


def _usage(doc: dict[str, Any], message: dict[str, Any], ts: int) -> UsageRecord | None:
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return None
    model = text_str(message.get("model"))
    written = as_int(usage.get("cache_creation_input_tokens"))
    split = usage.get("cache_creation")
    five = one = 0
    if isinstance(split, dict):
        five = as_int(split.get("ephemeral_5m_input_tokens"))
        one = as_int(split.get("ephemeral_1h_input_tokens"))
    # Writes the split does not account for (a line without one) are 5-minute writes,
    # the API's default lifetime.
    five += max(0, written - five - one)
    record = UsageRecord(
        ts_ms=ts,
        model=model,
        msg_key=text_str(message.get("id")) or None,
        req_key=text_str(doc.get("requestId")),
        sidechain=doc.get("isSidechain") is True,
        input=as_int(usage.get("input_tokens")),
        cache_write_5m=five,
        cache_write_1h=one,
        cache_read=as_int(usage.get("cache_read_input_tokens")),
        output=as_int(usage.get("output_tokens")),
    )
    if record.total == 0 and model == SYNTHETIC_MODEL:
        return None
    return record if record.total > 0 else None
