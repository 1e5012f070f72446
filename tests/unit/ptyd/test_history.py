"""Durable bounded terminal history on disk (issue 6: durable bounded history)."""

from __future__ import annotations

from pathlib import Path

from actors.ptyd.history import HistoryRing


def test_history_keeps_newest_bytes_within_bound(tmp_path: Path) -> None:
    """After far more output than the bound, disk holds the newest bytes with offsets."""
    ring = HistoryRing(tmp_path, "r::/w@@0123abcd", max_bytes=1000)
    stream = b"".join(b"%06d\n" % i for i in range(2000))
    for i in range(0, len(stream), 70):
        ring.append(stream[i : i + 70])
    start, data = ring.read_all()
    assert data == stream[start:]
    assert 430 <= len(data) <= 1000
    assert ring.end == len(stream)
    disk = sum(p.stat().st_size for p in tmp_path.iterdir() if not p.name.endswith(".json"))
    assert disk <= 1000


def test_history_resumes_after_reopen(tmp_path: Path) -> None:
    """A restarted owner continues the same history at the same offsets."""
    ring = HistoryRing(tmp_path, "r::/w@@0123abcd", max_bytes=100)
    ring.append(b"a" * 80)
    ring.close()
    again = HistoryRing(tmp_path, "r::/w@@0123abcd", max_bytes=100, resume=True)
    assert again.end == 80
    again.append(b"b" * 30)
    start, data = again.read_all()
    assert (start + len(data), data[-30:]) == (110, b"b" * 30)
    assert data == (b"a" * 80 + b"b" * 30)[start:]


def test_fresh_history_replaces_old_one(tmp_path: Path) -> None:
    """Without resume, an old history of the same id is discarded."""
    HistoryRing(tmp_path, "s", max_bytes=100).append(b"old")
    ring = HistoryRing(tmp_path, "s", max_bytes=100)
    assert ring.read_all() == (0, b"")


def test_remove_deletes_every_file(tmp_path: Path) -> None:
    """Closing a session for good leaves no history files behind."""
    ring = HistoryRing(tmp_path, "s", max_bytes=100)
    ring.append(b"x" * 300)
    ring.remove()
    assert list(tmp_path.iterdir()) == []
