"""Arbitrary bytes in paths, ref names and git admin files never break gitwatch (issue 16).

Three layers: the wire text rules (``wiretext``), the pure fact state withholding a
worktree whose path cannot be an id, and scans of real repositories whose admin files
hold arbitrary bytes: a scan returns facts or raises RepoUnavailable, and whatever it
returns encodes on the wire.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.gitwatch.errors import RepoUnavailable
from actors.gitwatch.factstate import RepoFacts, WorktreeAdded, apply_listing
from actors.gitwatch.gitfacts import scan_worktrees
from actors.gitwatch.porcelain import parse_worktree_list_z
from actors.gitwatch.records import WorktreeFacts
from actors.gitwatch.wirerows import (
    build_rows,
    fact_event_to_wire,
    snapshot_repo,
    unrepresentable_rows,
)
from actors.gitwatch.wiretext import display_text, representable_path
from orca.model.codec import for_wire
from orca.model.types_repo import Repo
from orca.wire.codec import encode

_FS_TEXT = st.binary(max_size=40).map(os.fsdecode)  # what a read of disk bytes yields


@given(_FS_TEXT)
def test_display_text_always_encodes_and_escapes_only_bad_bytes(text: str) -> None:
    """Any decoded bytes display as UTF-8; valid UTF-8 is shown unchanged."""
    shown = display_text(text)
    shown.encode("utf-8")
    if not any("\udc80" <= c <= "\udcff" for c in text):
        assert shown == text
    else:
        assert shown == os.fsencode(text).decode("utf-8", "backslashreplace")


@given(st.text())
def test_display_text_escapes_stray_surrogates(text: str) -> None:
    """Text with lone surrogates that came from no byte decode still encodes."""
    display_text(text).encode("utf-8")


def test_display_text_shows_undecodable_bytes_as_hex_escapes() -> None:
    assert display_text(os.fsdecode(b"wt-\xfe\xff")) == "wt-\\xfe\\xff"


def test_unrepresentable_worktree_is_withheld_from_rows_and_events() -> None:
    """A listing with a non-UTF-8 path adds only the other rows and reports that one."""
    repo = RepoFacts(repo_id="r", path="/repo")
    bad = os.fsdecode(b"/wt-\xfe")
    listing = [
        WorktreeFacts(path="/repo", head=None, branch=None, is_main=True, admin_dir="/repo/.git"),
        WorktreeFacts(path=bad, head=None, branch=None, is_main=False, admin_dir="/a"),
    ]
    update = apply_listing(repo, listing)
    assert [e.facts.path for e in update.events if isinstance(e, WorktreeAdded)] == ["/repo"]
    assert list(repo.rows) == ["/repo"]
    assert update.newly_unrepresentable == [bad]
    assert [(w.path, w.reason) for w in unrepresentable_rows(repo)] == [
        ("/wt-\\xfe", "path is not valid UTF-8")
    ]
    assert apply_listing(repo, listing).newly_unrepresentable == []  # warned once


def test_worktree_path_with_nul_is_unrepresentable() -> None:
    assert not representable_path("/a\0b")
    assert representable_path("/ok/路径")


@given(
    path=_FS_TEXT.map(lambda p: "/" + p),
    branch=_FS_TEXT,
    reason=st.none() | _FS_TEXT,
)
def test_any_fact_read_from_disk_encodes_as_events_rows_and_snapshot(
    path: str, branch: str, reason: str | None
) -> None:
    """Whatever bytes the facts hold, every wire shape gitwatch sends encodes."""
    repo = RepoFacts(repo_id="r", path="/repo")
    row = WorktreeFacts(
        path=path,
        head=None,
        branch="refs/heads/" + branch,
        is_main=False,
        admin_dir="/a",
        is_locked=reason is not None,
        lock_reason=reason,
    )
    update = apply_listing(repo, [row])
    for event in update.events:
        encode(for_wire(fact_event_to_wire(event)))
    encode(for_wire(snapshot_repo(repo)))
    rows = build_rows(repo, Repo(id="r", path="/repo", display_name="repo"), {}, [])
    encode(for_wire(rows))
    assert len(rows) + len(repo.unrepresentable) == 1


def test_porcelain_keeps_undecodable_bytes_of_paths_and_reasons() -> None:
    """``git worktree list -z`` bytes survive to the file system (surrogateescape)."""
    out = b"worktree /wt-\xfe\0HEAD " + b"a" * 40 + b"\0detached\0locked why \xff\0\0"
    [wt] = parse_worktree_list_z(out)
    assert os.fsencode(wt.path) == b"/wt-\xfe"
    assert wt.lock_reason is not None and os.fsencode(wt.lock_reason) == b"why \xff"


# -- real repositories --------------------------------------------------------------------


def _run(cwd: Path, *args: bytes) -> None:
    subprocess.run([b"git", *args], cwd=cwd, check=True, capture_output=True)


def test_scan_reads_a_non_utf8_worktree_path_and_branch(repo: Path, tmp_path: Path) -> None:
    """git's admin files naming a non-UTF-8 path and branch scan to exact facts."""
    _run(repo, b"worktree", b"add", b"-q", b"-b", b"b-\xfe", b"../wt-\xfe")
    by_path = {os.fsencode(w.path): w for w in scan_worktrees(str(repo))}
    linked = by_path[os.fsencode(str(tmp_path)) + b"/wt-\xfe"]
    assert linked.branch is not None and os.fsencode(linked.branch) == b"refs/heads/b-\xfe"
    assert linked.head is not None and not linked.is_prunable


@pytest.fixture
def admin_dir(repo: Path) -> Path:
    _run(repo, b"worktree", b"add", b"-q", b"../wt")
    return repo / ".git" / "worktrees" / "wt"


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    name=st.sampled_from(["gitdir", "HEAD", "locked"]),
    content=st.binary(max_size=300),
)
def test_admin_file_with_arbitrary_bytes_never_raises_out_of_a_scan(
    repo: Path, admin_dir: Path, name: str, content: bytes
) -> None:
    """Any bytes in gitdir, HEAD or locked: facts (that encode) or RepoUnavailable."""
    original = (admin_dir / name).read_bytes() if (admin_dir / name).exists() else None
    (admin_dir / name).write_bytes(content)
    try:
        try:
            facts = scan_worktrees(str(repo))
        except RepoUnavailable:
            return
        state = RepoFacts(repo_id="r", path=str(repo))
        for event in apply_listing(state, facts).events:
            encode(for_wire(fact_event_to_wire(event)))
        encode(for_wire(snapshot_repo(state)))
    finally:
        if original is None:
            (admin_dir / name).unlink()
        else:
            (admin_dir / name).write_bytes(original)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(content=st.binary(max_size=200))
def test_commondir_with_arbitrary_bytes_is_unavailable_not_a_crash(
    repo: Path, admin_dir: Path, content: bytes
) -> None:
    """A linked worktree's commondir holding garbage: facts or RepoUnavailable."""
    wt = admin_dir.parent.parent.parent.parent / "wt"
    (admin_dir / "commondir").write_bytes(content)
    try:
        try:
            facts = scan_worktrees(str(wt))
        except RepoUnavailable:
            return
        state = RepoFacts(repo_id="r", path=str(wt))
        for event in apply_listing(state, facts).events:
            encode(for_wire(fact_event_to_wire(event)))
    finally:
        (admin_dir / "commondir").write_bytes(b"../..\n")
