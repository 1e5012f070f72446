"""Pane keys and PTY session ids (seed 01 §6.3; ARCHITECTURE §4)."""

from __future__ import annotations

import pytest
from hypothesis import given

from orca.model.panes import (
    BadPaneKey,
    BadPtySessionId,
    LegacyPaneKey,
    PaneKeyParts,
    PtySessionIdParts,
    is_terminal_leaf_id,
    make_pane_key,
    make_pty_session_id,
    parse_legacy_numeric_pane_key,
    parse_pane_key,
    parse_pty_session_id,
)

from .strategies import hex8, leaf_uuids, tab_ids, worktree_ids

LEAF = "0b8e4a52-7d1f-4c1e-9a39-2f0c6c1d5e77"


@given(tab_ids, leaf_uuids)
def test_pane_key_round_trips(tab_id: str, leaf: str) -> None:
    """``<tabId>:<leafUUID>`` parses back into its parts (seed 01 §6.3)."""
    assert parse_pane_key(make_pane_key(tab_id, leaf)) == PaneKeyParts(tab_id, leaf)


@pytest.mark.parametrize(("tab_id", "leaf"), [("", LEAF), ("a:b", LEAF), ("tab", "0"), ("tab", "not-a-uuid")])
def test_make_pane_key_refuses_bad_tab_or_non_uuid_leaf(tab_id: str, leaf: str) -> None:
    """tabId must be non-empty without ':' and the leaf must be a UUID (seed 01 §6.3)."""
    with pytest.raises(BadPaneKey):
        make_pane_key(tab_id, leaf)


@pytest.mark.parametrize("key", ["", "tab", f":{LEAF}", "tab:0", f"a:b:{LEAF}", f"tab:{LEAF}x"])
def test_parse_pane_key_rejects_malformed_keys(key: str) -> None:
    """Anything but ``<tabId>:<UUID>`` is not a pane key."""
    assert parse_pane_key(key) is None


def test_leaf_ids_must_be_uuids() -> None:
    """A renderer-local pane number is not a durable leaf id (seed 01 §6.3)."""
    assert is_terminal_leaf_id(LEAF)
    assert not is_terminal_leaf_id("1")


def test_legacy_numeric_pane_key_is_recognised_for_aliasing() -> None:
    """The old ``tabId:<n>`` form is still recognised so aliases can be built (seed 01 §6.3, seed 02 §8)."""
    assert parse_legacy_numeric_pane_key("tab-1:0") == LegacyPaneKey("tab-1", 0)
    assert parse_legacy_numeric_pane_key("tab-1:12") == LegacyPaneKey("tab-1", 12)
    for key in ("tab-1:01", "tab-1:-1", f"tab-1:{LEAF}", ":3", "tab-1:"):
        assert parse_legacy_numeric_pane_key(key) is None


@given(worktree_ids, hex8)
def test_pty_session_id_round_trips(worktree_id: str, suffix: str) -> None:
    """``<worktreeId>@@<8 hex>`` parses back into worktree id and suffix (ARCHITECTURE §4)."""
    sid = make_pty_session_id(worktree_id, suffix)
    assert parse_pty_session_id(sid) == PtySessionIdParts(worktree_id, suffix)


@given(worktree_ids)
def test_pty_session_id_gets_a_random_eight_hex_suffix(worktree_id: str) -> None:
    """Without a suffix a random 8-hex one is minted, so sessions of one worktree differ."""
    parts = parse_pty_session_id(make_pty_session_id(worktree_id))
    assert parts is not None and parts.worktree_id == worktree_id and len(parts.suffix) == 8


def test_pty_session_id_splits_at_the_last_separator() -> None:
    """A worktree path containing ``@@`` still parses (the suffix is after the last one)."""
    wid = "r::/w/a@@b"
    assert parse_pty_session_id(f"{wid}@@deadbeef") == PtySessionIdParts(wid, "deadbeef")


@pytest.mark.parametrize("sid", ["r::/p", "r::/p@@DEADBEEF", "r::/p@@dead", "junk@@deadbeef", "@@deadbeef"])
def test_parse_pty_session_id_rejects_malformed_ids(sid: str) -> None:
    """Only a valid worktree id plus exactly 8 lower-case hex digits is a session id."""
    assert parse_pty_session_id(sid) is None


def test_make_pty_session_id_refuses_bad_input() -> None:
    """A malformed worktree id or suffix is the caller's fault."""
    with pytest.raises(BadPtySessionId):
        make_pty_session_id("junk")
    with pytest.raises(BadPtySessionId):
        make_pty_session_id("r::/p", "xyz")
