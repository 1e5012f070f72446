"""What the full-text index sees of a row, and of a query: one rule for both sides. Pure.

The index's tokenizer (:data:`TOKENIZER`) keeps ``_ . - /`` inside tokens, so
``src/app.py``, ``fix-login`` and ``TOKEN_LIMIT`` are one word each. That alone would
also glue a sentence's full stop to its last word (``walrus.``), which no search for
``walrus`` finds. So before text reaches the tokenizer, a run of full stops that ends a
token (followed by a space, other punctuation or the end: ``walrus.``, ``walrus.)``,
``so...``) is cut off; a full stop inside a token stays (``app.py``, ``v1.2.3``,
``.gitignore``, ``../x``). Other trailing punctuation (``, : ; ! ? ) "``) needs nothing:
the tokenizer already separates on it. Queries go through the same cut
(:func:`query_words`, :func:`cut_final_dots`), so ``walrus.`` finds ``walrus`` and
``app.py`` still finds ``app.py`` at the end of a sentence.

A row is indexed as it is shown (:func:`indexed_text`): hidden blocks the result view
removes (``preview.drop_hidden_blocks``) are not indexed, so a search never hits a row
whose shown text lacks the words. (What else ``preview.visible`` does, replace controls
and collapse whitespace, changes no token: the tokenizer separates on both.)

Invariant: FTS5 can remove a row from the index only with the very tokens it was
given, so :func:`indexed_text` must give the same answer for a row for as long as the
row is indexed. :data:`TEXT_RULES` fingerprints the rules; an index built under other
rules is emptied and read again (``schema.ensure_text_rules``). Bump
:data:`RULES_REVISION` when changing the *code* of these rules (the data they use,
the hidden tags and the patterns, is in the fingerprint already).
"""

from __future__ import annotations

import hashlib
import re

from actors.vault.preview import HIDDEN_TAGS, drop_hidden_blocks

# ``_ . - /`` are parts of words (paths, flags, identifiers), not separators.
TOKENIZER = "unicode61 tokenchars '_.-/'"
# The name under which :func:`indexed_text` is callable from the index's triggers.
INDEXED_TEXT_SQL = "vault_indexed_text"
# 2: rows are given to the full-text table after the scan (schema ``text_upto``).
RULES_REVISION = 2
# Full stops that end a token: not followed by a letter, digit or one of the token
# characters (Python's \w is the tokenizer's letters and digits, plus ``_``).
_FINAL_DOTS = re.compile(r"\.+(?![\w./-])")
_TOKEN_CHAR = re.compile(r"[\w./-]")


def _fingerprint() -> int:
    rules = repr((RULES_REVISION, TOKENIZER, HIDDEN_TAGS, _FINAL_DOTS.pattern))
    # 60 bits: fits the index's INTEGER meta column.
    return int(hashlib.sha256(rules.encode()).hexdigest()[:15], 16)


TEXT_RULES = _fingerprint()


def cut_final_dots(text: str) -> str:
    """``text`` with every run of full stops that ends a token replaced by a space."""
    return _FINAL_DOTS.sub(" ", text) if "." in text else text


def indexed_text(text: str) -> str:
    """What the index tokenizes of a row: its shown text, final full stops cut."""
    return cut_final_dots(drop_hidden_blocks(text))


def query_words(query: str) -> list[str]:
    """A query's words (split at spaces) cut by the rule the rows were; a word left with
    nothing the tokenizer keeps (``...``, ``!``) would match no row, and is dropped."""
    words = (cut_final_dots(word).strip() for word in query.split())
    return [word for word in words if _TOKEN_CHAR.search(word)]
