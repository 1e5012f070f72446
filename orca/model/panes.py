"""Pane keys and PTY session ids (seed 01 §6.3; seed 01 §4–§6).

Pane key ``<tabId>:<leafUUID>``: the global identity of one terminal pane. It
must survive UI reloads, travel in PTY environment variables and hook payloads,
and key persisted rows, so the leaf part is a durable UUID (never a renderer's
local pane number). ``tabId`` is non-empty and contains no ``:``, which makes
the split unambiguous. :func:`parse_legacy_numeric_pane_key` still recognises
the old ``<tabId>:<n>`` form so aliases can be built for it (seed 02 §8).

PTY session id ``<worktreeId>@@<8 lower-case hex>``: the worktree id is embedded
so the session GC can ask the store whether the owner still exists (or is a
``priorWorktreeIds`` entry); the random suffix separates several sessions of
one worktree. The worktree id may itself contain ``@@`` (it embeds a path), so
parsing splits at the *last* separator.

The owner is either shape a Worktree row carries (``orca.model.ids.is_terminal_owner_id``):
a git worktree ``<repoId>::<path>`` or a folder workspace's projected id
``folder:<uuid>`` (seed 01 §5.1 route A: the folder poses as a worktree, so its
terminals use the same id scheme: ``folder:<uuid>@@<8 hex>``). The store's
``identity.resolve`` answers for both, so the GC treats them alike.
"""

from __future__ import annotations

import re
from typing import Final

import msgspec

from orca.model.ids import is_terminal_owner_id

__all__ = [
    "PTY_SESSION_ID_SEPARATOR",
    "PTY_SESSION_SUFFIX_HEX_LEN",
    "BadPaneKey",
    "BadPtySessionId",
    "LegacyPaneKey",
    "PaneKeyParts",
    "PtySessionIdParts",
    "is_terminal_leaf_id",
    "make_pane_key",
    "make_pty_session_id",
    "parse_legacy_numeric_pane_key",
    "parse_pane_key",
    "parse_pty_session_id",
]

PTY_SESSION_ID_SEPARATOR: Final = "@@"
# 8 hex digits = 32 random bits: collisions need ~65k live sessions of one worktree.
PTY_SESSION_SUFFIX_HEX_LEN: Final = 8

_UUID_RE: Final = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
_LEGACY_LEAF_RE: Final = re.compile(r"0|[1-9][0-9]{0,8}")
_SUFFIX_RE: Final = re.compile(f"[0-9a-f]{{{PTY_SESSION_SUFFIX_HEX_LEN}}}")


class BadPaneKey(ValueError):
    """A pane key or its parts are malformed (the caller is at fault)."""


class BadPtySessionId(ValueError):
    """A PTY session id or its parts are malformed (the caller is at fault)."""


class PaneKeyParts(msgspec.Struct, frozen=True):
    tab_id: str
    leaf_id: str


class LegacyPaneKey(msgspec.Struct, frozen=True):
    tab_id: str
    pane_number: int


class PtySessionIdParts(msgspec.Struct, frozen=True):
    worktree_id: str
    suffix: str


def is_terminal_leaf_id(value: str) -> bool:
    """True when ``value`` is a UUID (the only durable leaf id form)."""
    return _UUID_RE.fullmatch(value) is not None


def _valid_tab_id(tab_id: str) -> bool:
    return bool(tab_id) and ":" not in tab_id


def make_pane_key(tab_id: str, leaf_id: str) -> str:
    """``<tabId>:<leafUUID>``; raises BadPaneKey for a bad tab id or a non-UUID leaf."""
    if not _valid_tab_id(tab_id):
        raise BadPaneKey(f"tab id must be non-empty and must not contain ':' (got {tab_id!r})")
    if not is_terminal_leaf_id(leaf_id):
        raise BadPaneKey(f"leaf id must be a UUID (got {leaf_id!r})")
    return f"{tab_id}:{leaf_id}"


def parse_pane_key(key: str) -> PaneKeyParts | None:
    """Split a pane key; None unless it is ``<tabId without ':'>:<UUID>``."""
    tab_id, sep, leaf_id = key.partition(":")
    if not sep or not _valid_tab_id(tab_id) or not is_terminal_leaf_id(leaf_id):
        return None
    return PaneKeyParts(tab_id, leaf_id)


def parse_legacy_numeric_pane_key(key: str) -> LegacyPaneKey | None:
    """Recognise the pre-UUID ``<tabId>:<n>`` form (n a non-negative decimal); else None."""
    tab_id, sep, leaf = key.partition(":")
    if not sep or not _valid_tab_id(tab_id) or _LEGACY_LEAF_RE.fullmatch(leaf) is None:
        return None
    return LegacyPaneKey(tab_id, int(leaf))


def make_pty_session_id(worktree_id: str, suffix: str | None = None) -> str:
    """``<worktreeId>@@<8 hex>``; a random suffix unless one is given (for replay/tests).

    ``worktree_id`` is a worktree id or a folder workspace's ``folder:<id>``."""
    if not is_terminal_owner_id(worktree_id):
        raise BadPtySessionId(
            f"not a worktree id ('<repoId>::<path>') or folder workspace id"
            f" ('folder:<id>'): {worktree_id!r}"
        )
    if suffix is None:
        import secrets  # here: `orca term ls` parses ids and must not pay for it

        suffix = secrets.token_hex(PTY_SESSION_SUFFIX_HEX_LEN // 2)
    elif _SUFFIX_RE.fullmatch(suffix) is None:
        raise BadPtySessionId(
            f"suffix must be {PTY_SESSION_SUFFIX_HEX_LEN} lower-case hex digits (got {suffix!r})"
        )
    return f"{worktree_id}{PTY_SESSION_ID_SEPARATOR}{suffix}"


def parse_pty_session_id(session_id: str) -> PtySessionIdParts | None:
    """Split at the last ``@@``; None unless the head is a worktree id (or a folder
    workspace's ``folder:<id>``) and the tail 8 lower-case hex."""
    worktree_id, sep, suffix = session_id.rpartition(PTY_SESSION_ID_SEPARATOR)
    if not sep or _SUFFIX_RE.fullmatch(suffix) is None or not is_terminal_owner_id(worktree_id):
        return None
    return PtySessionIdParts(worktree_id, suffix)
