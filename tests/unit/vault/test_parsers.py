"""Each agent's lines into rows (claude.py, codex.py, gemini.py): the fields they read."""

from __future__ import annotations

from support.vault import (
    claude_assistant,
    claude_tool_result,
    claude_usage,
    claude_user,
    codex_call,
    codex_meta,
    codex_tokens,
    codex_turn,
    codex_user,
    gemini_header,
    gemini_reply,
    gemini_tokens,
    gemini_user,
    project_hash,
)

from actors.vault.claude import parse_claude_line
from actors.vault.codex import parse_codex_line
from actors.vault.gemini import parse_gemini_document, parse_gemini_record
from actors.vault.records import Parsed, SessionFacts
from actors.vault.textparts import TOOL_OUTPUT_CHARS


def test_claude_lines_give_prompts_answers_tools_and_usage() -> None:
    facts, out = SessionFacts(), Parsed()
    for line in (
        claude_user("S", "/w", "<command-name>/clear</command-name>", isMeta=True),
        claude_user("S", "/w", "fix the parser"),
        claude_assistant("S", "/w", message_id="m", request_id="r", text="ok", tool=("Edit", {"file_path": "src/p.py"}),
                         usage=claude_usage(3, 4, cache_5m=5, cache_1h=6, cache_read=7)),
        claude_tool_result("S", "/w", "y" * 5000),
        {"type": "summary", "summary": "Parser fix", "leafUuid": "x"},
        {"type": "file-history-snapshot", "snapshot": {}},
    ):  # fmt: skip
        parse_claude_line(line, facts, out)
    assert (facts.session_id, facts.cwd, facts.title) == ("S", "/w", "fix the parser")
    kinds = [(e.kind, e.text[:20]) for e in out.entries]
    assert kinds == [
        ("user", "<command-name>/clear"),
        ("user", "fix the parser"),
        ("assistant", "ok"),
        ("tool_use", 'Edit {"file_path":"s'),
        ("tool_result", "y" * 20),
        ("summary", "Parser fix"),
    ]
    assert len(out.entries[4].text) == TOOL_OUTPUT_CHARS  # tool output cut per row
    [usage] = out.usage
    assert (usage.msg_key, usage.req_key, usage.sidechain) == ("m", "r", False)
    assert (
        usage.input,
        usage.output,
        usage.cache_write_5m,
        usage.cache_write_1h,
        usage.cache_read,
    ) == (3, 4, 5, 6, 7)


def test_claude_tolerates_foreign_shapes() -> None:
    """Wrong types in any field count nothing and raise nothing."""
    facts, out = SessionFacts(), Parsed()
    for line in (
        {"type": "assistant", "message": "not a dict"},
        {"type": "assistant", "message": {"usage": {"input_tokens": "12", "output_tokens": -3}}},
        {"type": "user", "message": {"content": [1, None, {"type": "text", "text": 5}]}},
        {"type": 7},
    ):
        parse_claude_line(line, facts, out)
    assert out.entries == [] and out.usage == []


def test_codex_deltas_from_cumulative_counts() -> None:
    """Each token_count adds what its totals grew by; repeats add nothing; totals that
    start again count from zero; the model is the current turn's."""
    facts, out = SessionFacts(), Parsed()
    for line in (
        codex_meta("X", "/w"),
        codex_turn("/w", "gpt-5"),
        codex_user("build it"),
        *codex_call("shell", '{"command":["make"]}', "make: ok"),
        codex_tokens(100, 10, 20, 5),
        codex_tokens(100, 10, 20, 5),
        codex_turn("/w", "gpt-5.1"),
        codex_tokens(300, 110, 50, 5),
        codex_tokens(40, 0, 4, 0),  # a new baseline
        {
            "timestamp": "2026-03-10T12:00:00Z",
            "type": "event_msg",
            "payload": {"type": "token_count", "info": None},
        },
    ):
        parse_codex_line(line, facts, out)
    deltas = [(u.model, u.input, u.cache_read, u.output, u.reasoning) for u in out.usage]
    assert deltas == [
        ("gpt-5", 90, 10, 20, 5),
        ("gpt-5.1", 100, 100, 30, 0),
        ("gpt-5.1", 40, 0, 4, 0),
    ]
    assert (facts.session_id, facts.title) == ("X", "build it")
    assert [e.kind for e in out.entries] == ["user", "tool_use", "tool_result"]


def test_gemini_rewritten_messages_replace_their_rows() -> None:
    facts, out = SessionFacts(), Parsed()
    for line in (
        gemini_header("G", "/w/p"),
        gemini_user("u1", "why"),
        gemini_reply("g1", "because", tokens=None),
        gemini_reply(
            "g1",
            "because",
            tokens=gemini_tokens(10, 2, cached=4),
            tool=("read_file", {"path": "a"}, "text"),
        ),
        {"$set": {"summary": "why"}},
        {"$rewindTo": "g1"},
        {"id": "i1", "type": "info", "content": "x", "timestamp": "2026-03-10T12:00:00Z"},
    ):
        parse_gemini_record(line, facts, out)
    assert (facts.session_id, facts.project_hash) == ("G", project_hash("/w/p"))
    assert list(out.keyed) == ["u1", "g1"]
    assert [e.kind for e in out.keyed["g1"]] == ["assistant", "tool_use", "tool_result"]
    [usage] = out.usage  # the first copy of g1 had no tokens
    assert (usage.input, usage.cache_read, usage.output) == (6, 4, 2)


def test_gemini_legacy_document() -> None:
    facts, out = SessionFacts(), Parsed()
    doc = {
        **gemini_header("L", "/w/q"),
        "messages": [
            gemini_user("u", "old format"),
            gemini_reply("g", "yes", tokens=gemini_tokens(5, 1)),
        ],
    }
    parse_gemini_document(doc, facts, out)
    assert facts.session_id == "L" and [u.input for u in out.usage] == [5]


def _codex_message(role: str, kind: str, text: str) -> dict[str, object]:
    return {
        "timestamp": "2026-03-10T12:00:00Z",
        "type": "response_item",
        "payload": {"type": "message", "role": role, "content": [{"type": kind, "text": text}]},
    }


def test_codex_response_item_messages_are_the_conversation_when_no_event_speaks() -> None:
    """Issue 40 item 8: Codex 0.171's rollouts carry the conversation only as
    response_item messages: they are indexed, the injected context left out."""
    facts, out = SessionFacts(), Parsed()
    for line in (
        codex_meta("X", "/w"),
        _codex_message(
            "user", "input_text", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"
        ),
        _codex_message("user", "input_text", "# AGENTS.md instructions for /w\n\nbe brief"),
        _codex_message("user", "input_text", "fix the flaky test"),
        _codex_message("assistant", "output_text", "fixed: the sleep is gone"),
    ):
        parse_codex_line(line, facts, out)
    assert [(e.kind, e.text) for e in out.entries] == [
        ("user", "fix the flaky test"),
        ("assistant", "fixed: the sleep is gone"),
    ]
    assert facts.title == "fix the flaky test"


def test_codex_event_text_makes_response_item_messages_repeats() -> None:
    facts, out = SessionFacts(), Parsed()
    for line in (
        codex_meta("X", "/w"),
        codex_user("build it"),
        _codex_message("user", "input_text", "build it"),
        _codex_message("assistant", "output_text", "built"),
    ):
        parse_codex_line(line, facts, out)
    assert [(e.kind, e.text) for e in out.entries] == [("user", "build it")]
