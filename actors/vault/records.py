"""What a transcript parser hands the index: searchable rows, token counts, session facts.

Pure shapes shared by the three parsers (``claude``, ``codex``, ``gemini``) and the
index writer. Token counts are normalised here, once, so that every agent's row means
the same thing to the cost rules (``pricing``):

* ``input``: input tokens billed at the model's base input rate - never the cached
  ones. Codex and Gemini report an input count that *includes* the cached tokens
  (Codex ``TokenUsage::non_cached_input`` = ``input_tokens - cached_input_tokens``,
  codex-rs/protocol/src/protocol.rs; Gemini ``promptTokenCount`` "includes the number
  of tokens in the cached content", ai.google.dev UsageMetadata): their parsers
  subtract, so nothing is counted twice. Claude's ``input_tokens`` already excludes
  the cache (Anthropic Messages API ``usage``).
* ``cache_write_5m`` / ``cache_write_1h``: prompt-cache writes by lifetime (Claude only).
* ``cache_read``: cache hits (Claude ``cache_read_input_tokens``, Codex
  ``cached_input_tokens``, Gemini ``cached``).
* ``output``: every token billed at the output rate, reasoning included (Codex's
  ``output_tokens`` already contains its ``reasoning_output_tokens``: its
  ``blended_total`` adds only ``non_cached_input + output_tokens``; Gemini bills
  ``thoughts`` as output, so its parser adds them).
* ``reasoning``: the reasoning part of ``output`` (shown, never billed twice).

``msg_key``/``req_key`` name one billed request so that copies of it (a resumed session
replaying its history, a streamed message written several times) are counted once:
the index keeps the largest copy (``queries``); ``msg_key`` None means "count as is".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Agent = Literal["claude", "codex", "gemini"]
AGENTS: tuple[Agent, ...] = ("claude", "codex", "gemini")
# What a searchable row is: a person's prompt, the agent's answer, a tool call the
# agent made, the output that came back, a session summary the agent wrote.
EntryKind = Literal["user", "assistant", "tool_use", "tool_result", "summary"]


@dataclass(frozen=True, slots=True)
class TextEntry:
    kind: EntryKind
    ts_ms: int
    text: str
    # Gemini rewrites a message under its id as it grows (tokens, tool results added):
    # a row with a key replaces the transcript's earlier rows with that key.
    msg_key: str = ""


@dataclass(frozen=True, slots=True)
class UsageRecord:
    ts_ms: int
    model: str
    msg_key: str | None
    req_key: str = ""
    sidechain: bool = False
    input: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0
    cache_read: int = 0
    output: int = 0
    reasoning: int = 0

    @property
    def total(self) -> int:
        """Every token of the request (the size "the larger copy" is judged by)."""
        return (
            self.input + self.cache_write_5m + self.cache_write_1h + self.cache_read + self.output
        )

    @property
    def prompt(self) -> int:
        """The request's whole prompt (what a long-prompt price tier is decided on)."""
        return self.input + self.cache_write_5m + self.cache_write_1h + self.cache_read


@dataclass(slots=True)
class SessionFacts:
    """What a transcript says about itself, carried across incremental reads (saved
    with the transcript's row, so a restart resumes in the middle of a file)."""

    session_id: str = ""
    cwd: str = ""
    project_hash: str = ""  # Gemini: sha256 of the project root
    title: str = ""  # the first prompt, raw (cut and filtered when shown)
    model: str = ""  # Codex: the model of the current turn (turn_context)
    # Codex: the last cumulative total_token_usage (input, cached, output, reasoning, total).
    totals: list[int] = field(default_factory=lambda: [0, 0, 0, 0, 0])
    forked_from: str = ""
    # Codex: this transcript has spoken through ``event_msg`` (older rollouts): its
    # ``response_item`` messages then repeat those words and are skipped.
    event_text: bool = False


@dataclass(slots=True)
class Parsed:
    """One batch of lines turned into rows; ``bad`` counts lines that were not JSON
    objects (damaged, cut, foreign): skipped and counted, never fatal."""

    entries: list[TextEntry] = field(default_factory=list)
    usage: list[UsageRecord] = field(default_factory=list)
    bad: int = 0
    # Rows of a message that replace the transcript's earlier rows of that message
    # (Gemini, by message id); the last copy in the batch wins.
    keyed: dict[str, list[TextEntry]] = field(default_factory=dict)

    def replace_message(self, key: str, rows: list[TextEntry]) -> None:
        self.keyed.pop(key, None)  # re-inserted last: rows keep the order messages came in
        self.keyed[key] = rows
