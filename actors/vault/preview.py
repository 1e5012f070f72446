"""What a person is shown of a transcript row: hidden blocks removed, length bounded. Pure.

Seed 02 §11 (02-42): titles and previews are filtered and cut *when read* - the rows
keep the text as the agent wrote it. The full-text index, though, holds what
:func:`drop_hidden_blocks` leaves (``terms.indexed_text``), so a search never finds a
row for a word only its hidden blocks contain: a change to these rules changes what is
indexed, and an index built under other rules is read again (``terms.TEXT_RULES``
fingerprints :data:`HIDDEN_TAGS`; a change to the code of :func:`drop_hidden_blocks`
must bump ``terms.RULES_REVISION``).

Hidden blocks are the machinery the agents put into the conversation around the
person's words: Claude Code's ``<system-reminder>``, ``<command-name>``,
``<command-message>``, ``<command-args>``, ``<local-command-stdout>``/``stderr>``;
Codex's injected ``<user_instructions>``, ``<environment_context>``; Gemini's
``<session_context>``. A block is dropped with its content; an unterminated one
(cut by the row's length cap) is dropped to the end.
"""

from __future__ import annotations

import re

HIDDEN_TAGS = (
    "system-reminder",
    "command-name",
    "command-message",
    "command-args",
    "local-command-stdout",
    "local-command-stderr",
    "user_instructions",
    "environment_context",
    "session_context",
)
_HIDDEN = re.compile(
    r"<(" + "|".join(re.escape(t) for t in HIDDEN_TAGS) + r")(?:\s[^>]*)?>.*?(?:</\1\s*>|\Z)",
    re.DOTALL,
)
_SPACE = re.compile(r"\s+")
# Controls would rewrite the reader's terminal (an ESC in a tool output).
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
TITLE_CHARS = 80
SNIPPET_CHARS = 160


def drop_hidden_blocks(text: str) -> str:
    """``text`` with each hidden block replaced by a space."""
    return _HIDDEN.sub(" ", text) if "<" in text else text


def visible(text: str) -> str:
    """``text`` without hidden blocks and controls, its whitespace collapsed."""
    shown = _CONTROLS.sub(" ", drop_hidden_blocks(text))
    return _SPACE.sub(" ", shown).strip()


def title(text: str, limit: int = TITLE_CHARS) -> str:
    shown = visible(text)
    return shown if len(shown) <= limit else shown[: limit - 1].rstrip() + "…"


def snippet(text: str, words: list[str], limit: int = SNIPPET_CHARS) -> str:
    """A window of the visible text around the first of ``words`` found in it (case
    folded); its start if none is found as written (a prefix or an accent-folded match
    of a raw query)."""
    shown = visible(text)
    if len(shown) <= limit:
        return shown
    folded = shown.casefold()
    hits = [i for i in (folded.find(w.casefold()) for w in words if w) if i >= 0]
    at = min(hits) if hits else 0
    start = max(0, at - limit // 3)
    end = min(len(shown), start + limit)
    start = max(0, end - limit)
    piece = shown[start:end].strip()
    return ("…" if start > 0 else "") + piece + ("…" if end < len(shown) else "")
