"""Bounded JSON decoding for the store's files (``orca-data.json``, backups, journal).

A file is input from outside like a peer's frame: hand-edited, torn by a disk fault, or
planted. msgspec recurses once per nesting level and raises ``RecursionError`` (not a
``ValueError``) past the interpreter's limit, which used to escape the load and
crash-loop the store without moving the file aside. Here every file is checked before
it is decoded:

- its size is at most ``MAX_STATE_FILE_BYTES``;
- its nesting depth is at most ``MAX_STATE_DEPTH`` (a real state is about 10 deep; a
  pane split tree adds one level per split);
- any ``RecursionError`` left is mapped to ``ValueError``.

So ``decode_bounded`` raises only ``ValueError`` for bad bytes, and the loader keeps the
file aside and reports it. The depth check runs in C (regex + ``bytes.translate``): strings
are removed, only brackets are kept, and one pass deletes every innermost ``[]``/``{}``
pair; ``MAX_STATE_DEPTH`` passes must leave nothing.
"""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec

MAX_STATE_FILE_BYTES: Final = 256 * 1024 * 1024  # far above any real state (MBs), bounds memory
MAX_STATE_DEPTH: Final = 100  # real states nest ~10 deep; msgspec/Python recursion is ~1,000

_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_NOT_A_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_INNERMOST_PAIR = re.compile(rb"\[\]|\{\}")


def nesting_depth_exceeds(raw: bytes, limit: int = MAX_STATE_DEPTH) -> bool:
    """True when the JSON text ``raw`` nests containers deeper than ``limit``.

    Malformed text (unbalanced brackets) answers False: the decoder reports it.
    """
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_A_BRACKET)
    for _ in range(limit):
        if not brackets:
            return False
        brackets, removed = _INNERMOST_PAIR.subn(b"", brackets)
        if removed == 0:
            return False  # unbalanced: not a depth problem
    return bool(brackets) and _INNERMOST_PAIR.search(brackets) is not None


def decode_bounded(raw: bytes, *, what: str = "file") -> Any:
    """JSON bytes → builtins; raises ``ValueError`` for anything unusable."""
    if len(raw) > MAX_STATE_FILE_BYTES:
        raise ValueError(f"{what} is {len(raw)} bytes, over the {MAX_STATE_FILE_BYTES} limit")
    if nesting_depth_exceeds(raw):
        raise ValueError(f"{what} nests deeper than {MAX_STATE_DEPTH} levels")
    try:
        return msgspec.json.decode(raw)
    except RecursionError as exc:  # belt and braces: the depth check should catch it
        raise ValueError(f"{what} nests too deeply to decode") from exc
