"""PTY session ids of folder workspaces: ``folder:<id>@@<8 hex>`` (seed 01 §5.1 route A).

A folder workspace poses as a worktree ``folder:<id>``; its terminals use the same id
scheme as a git worktree's. Both owner shapes must round-trip, never be confused with
each other, and everything else must be rejected (orca.model.ids, orca.model.panes).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orca.model.ids import (
    folder_workspace_id_of_worktree_id,
    folder_workspace_key,
    is_terminal_owner_id,
    split_worktree_id,
)
from orca.model.panes import (
    BadPtySessionId,
    PtySessionIdParts,
    make_pty_session_id,
    parse_pty_session_id,
)

from .strategies import hex8, tokens, worktree_ids

# What a store may hold as a folder workspace id that owns terminals: no ':' or '/'
# (the store refuses those) and no '@@' (the session separator).
folder_ids = st.one_of(st.uuids().map(str), tokens.filter(lambda t: "@@" not in t))
folder_owners = folder_ids.map(folder_workspace_key)
owners = st.one_of(worktree_ids, folder_owners)
# Strings dense in the characters the formats use, so near-misses are drawn often.
near_misses = st.text(alphabet=st.sampled_from(list(":@/folder-a0f|")), max_size=24) | st.text()
# Session-id-shaped near misses: a near-miss head, the separator, a near-8-hex tail.
near_session_ids = st.builds(
    lambda head, tail: f"{head}@@{tail}",
    st.one_of(near_misses, owners),
    st.text(alphabet="0123456789abcdefA", min_size=7, max_size=9),
)


@given(folder_ids, hex8)
def test_a_folder_session_id_round_trips(folder_id: str, suffix: str) -> None:
    """``folder:<id>@@<hex>`` parses back to its owner and suffix; the owner to the id."""
    owner = folder_workspace_key(folder_id)
    sid = make_pty_session_id(owner, suffix)
    assert sid == f"folder:{folder_id}@@{suffix}"
    assert parse_pty_session_id(sid) == PtySessionIdParts(owner, suffix)
    assert folder_workspace_id_of_worktree_id(owner) == folder_id


@given(folder_owners)
def test_a_folder_session_gets_a_random_suffix(owner: str) -> None:
    parts = parse_pty_session_id(make_pty_session_id(owner))
    assert parts is not None and parts.worktree_id == owner and len(parts.suffix) == 8


@given(near_misses)
def test_the_two_owner_shapes_never_overlap(value: str) -> None:
    """No string is both a worktree id and a folder workspace's id: ``::`` vs no ``:``."""
    assert not (
        split_worktree_id(value) is not None
        and folder_workspace_id_of_worktree_id(value) is not None
    )


@given(st.one_of(near_misses, near_session_ids))
def test_parse_accepts_exactly_what_make_builds(value: str) -> None:
    """Whatever parses is rebuilt byte for byte from its parts, so a parsed id is
    canonical; nothing raises on arbitrary input."""
    parts = parse_pty_session_id(value)
    if parts is not None:
        assert make_pty_session_id(parts.worktree_id, parts.suffix) == value
        assert is_terminal_owner_id(parts.worktree_id)


@given(owners, hex8, hex8)
def test_the_split_is_at_the_last_separator(owner: str, inner: str, suffix: str) -> None:
    """An owner ending in something session-id-like still parses at the last ``@@``."""
    if owner.startswith("folder:"):
        return  # a folder id holds no '@@' (see folder_ids)
    nested = f"{owner}@@{inner}"
    assert parse_pty_session_id(make_pty_session_id(nested, suffix)) == PtySessionIdParts(
        nested, suffix
    )


@pytest.mark.parametrize(
    "owner",
    ["folder:", "folder:a:b", "folder:a/b", "folder:a@@b", "Folder:abc", "folder-workspace:g", ""],
)
def test_a_malformed_folder_owner_is_refused(owner: str) -> None:
    """Only ``folder:<token>`` names a folder workspace that may hold terminals."""
    assert not is_terminal_owner_id(owner)
    with pytest.raises(BadPtySessionId):
        make_pty_session_id(owner)


@pytest.mark.parametrize(
    "sid",
    [
        "folder:abc",
        "folder:@@deadbeef",
        "folder:a/b@@deadbeef",
        "folder:a:b@@deadbeef",
        "folder:abc@@DEADBEEF",
        "folder:abc@@deadbee",
        "folder:abc@@deadbeef0",
        "folder:abc@@deadbeef\n",
        "folder:abc@deadbeef",
        "folder-workspace:g1@@deadbeef",
        "worktree:r::/p@@deadbeef",
    ],
)
def test_a_malformed_folder_session_id_is_rejected(sid: str) -> None:
    assert parse_pty_session_id(sid) is None


def test_a_folder_id_ending_like_a_session_reads_as_that_session() -> None:
    """``folder:x@@<hex>`` is the session of ``folder:x``; ``x@@<hex>`` is no folder id
    that may hold terminals, so the reading is the only one."""
    assert parse_pty_session_id("folder:x@@deadbeef") == PtySessionIdParts("folder:x", "deadbeef")
    assert folder_workspace_id_of_worktree_id("folder:x@@deadbeef") is None
