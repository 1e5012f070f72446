"""Deciding a scan step from a file's identity (actors/vault/fileplan.py)."""

from __future__ import annotations

from actors.vault.fileplan import FileIdentity, ReadMark, head_digest, head_still_same, plan_step

SEEN = FileIdentity(dev=1, ino=10, size=500, mtime_ns=7)
MARK = ReadMark(SEEN, offset=480, head_len=4, head_hash=head_digest(b"{\"a\""))


def test_the_plan_table() -> None:
    assert plan_step(SEEN, None, whole=False) == "read"
    assert plan_step(SEEN, MARK, whole=False) == "skip"
    assert plan_step(FileIdentity(1, 11, 500, 7), MARK, whole=False) == "restart"  # new inode
    assert plan_step(FileIdentity(1, 10, 400, 8), MARK, whole=False) == "restart"  # truncated
    assert plan_step(FileIdentity(1, 10, 900, 8), MARK, whole=False) == "read"  # grown
    assert plan_step(FileIdentity(1, 10, 480, 9), ReadMark(SEEN, 480, 4, ""), whole=False) == "skip"
    assert plan_step(FileIdentity(1, 10, 900, 8), MARK, whole=True) == "restart"  # rewritten whole


def test_a_rewritten_start_is_noticed() -> None:
    assert head_still_same(MARK, b'{"a"')
    assert not head_still_same(MARK, b'{"b"')
    assert not head_still_same(MARK, b'{"')
