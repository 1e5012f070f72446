"""Text read from git or the disk, on its way to the wire (pure).

Paths, ref names and lock reasons are bytes on disk. gitwatch keeps them as ``str``
decoded with ``surrogateescape`` (``os.fsdecode``), so every undecodable byte survives
the round trip back to the file system (``os.fsencode``) and to git. The wire is
msgpack with UTF-8 strings: a lone surrogate cannot cross it, and one that reaches the
encoder used to raise out of the publisher and crash-loop the actor (issue 16 item 8).

Two rules, applied where facts become wire Structs (``wirerows``) and nowhere else:

* an **identity** (a worktree path: the id embeds it, ptyd spawns in it, store keys
  notes by it) is published only when it is :func:`representable_path`; a worktree
  whose path is not is withheld from rows and events and reported instead
  (``worktree.list``'s ``unrepresentable``, ``sys.stats`` ``gitwatch.unrepresentable``);
* **free text** (a branch shown in a table, a lock reason, an error) goes out through
  :func:`display_text`: undecodable bytes become ``\\xNN`` escapes, readable and safe.
"""

from __future__ import annotations

__all__ = ["display_text", "representable_path", "unrepresentable_reason"]


def unrepresentable_reason(path: str) -> str | None:
    """Why ``path`` cannot be published as an identity, or None when it can."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "path is not valid UTF-8"
    if "\0" in path:
        return "path contains a NUL byte"
    return None


def representable_path(path: str) -> bool:
    return unrepresentable_reason(path) is None


def display_text(text: str) -> str:
    """``text`` with every undecodable byte (a surrogate escape) shown as ``\\xNN``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", "surrogateescape") if _only_escapes(text) else None
        if raw is None:
            # Not from a byte decode (a stray surrogate): escape the code points instead.
            return text.encode("utf-8", "backslashreplace").decode("utf-8")
        return raw.decode("utf-8", "backslashreplace")
    return text


def _only_escapes(text: str) -> bool:
    """Every surrogate in ``text`` is a ``surrogateescape`` byte (U+DC80..U+DCFF)."""
    return all(not 0xD800 <= ord(ch) <= 0xDFFF or 0xDC80 <= ord(ch) <= 0xDCFF for ch in text)
