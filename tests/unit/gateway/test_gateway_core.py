"""The gateway's pure cores: the event ring, per-peer bounds, ZAP decisions, host mirrors."""

from __future__ import annotations

from pathlib import Path

import msgspec
import zmq.utils.z85

from actors.gateway import zap
from actors.gateway.bounds import Budgets
from actors.gateway.hostmirror import HostMirrorState
from actors.gateway.ring import EventRing
from orca.contracts import gateway as gw
from orca.contracts import hooks, ptyd
from orca.contracts.sys import HEARTBEAT_TYPE
from orca.keys import KeyPair
from orca.paths import resolve_paths
from orca.remote import access


def _ev(src: str, seq: int, type: str = "x", data: object = None, epoch: str = "e1") -> gw.RelayedEvent:
    return gw.RelayedEvent(src=src, epoch=epoch, seq=seq, type=type, data=data)


def test_ring_resumes_from_next_and_reports_a_gap_when_overrun() -> None:
    ring = EventRing(max_events=3)
    head = ring.read(None, -1, 10)
    assert head.next == 0 and not head.gap
    for i in range(2):
        ring.append(_ev("hooks", i + 1), 10)
    got = ring.read(ring.epoch, head.next, 10)
    assert [e.seq for e in got.events] == [1, 2] and got.next == 2
    for i in range(2, 6):
        ring.append(_ev("hooks", i + 1), 10)
    assert ring.read(ring.epoch, got.next, 10).gap  # positions 2 fell off the end
    assert ring.read("another-epoch", ring.first, 10).gap  # the gateway restarted
    assert [e.seq for e in ring.read(ring.epoch, ring.first, 2).events] == [4, 5]


def test_ring_is_bounded_by_bytes() -> None:
    ring = EventRing(max_events=1000, max_bytes=100)
    for i in range(50):
        ring.append(_ev("ptyd", i + 1), 30)
    assert ring.bytes <= 100 and ring.dropped == 50 - len(ring.read(ring.epoch, ring.first, 100).events)


def test_bounds_refuse_past_rate_and_inflight_and_forget_nothing_in_flight() -> None:
    budgets = Budgets(rate=10, burst=5, max_inflight_per_peer=3)
    key = b"k" * 40
    assert [budgets.try_start(key, 0.0) for _ in range(3)] == [None, None, None]
    assert "in flight" in (budgets.try_start(key, 0.0) or "")
    for _ in range(3):
        budgets.finish(key)
    assert budgets.try_start(key, 0.0) is None and budgets.try_start(key, 0.0) is None
    budgets.finish(key)
    budgets.finish(key)
    assert "rate limit" in (budgets.try_start(key, 0.0) or "")  # 5 tokens spent at t=0
    assert budgets.try_start(key, 1.0) is None  # refilled
    assert budgets.inflight_total == 1


def _zap_request(public: bytes, mechanism: bytes = b"CURVE", domain: bytes = zap.ZAP_DOMAIN) -> list[bytes]:
    return [b"peer", b"", b"1.0", b"7", domain, b"10.0.0.1", b"", mechanism, zmq.utils.z85.decode(public)]


def test_zap_passes_authorized_keys_with_their_key_as_user_id(tmp_path: Path) -> None:
    paths = resolve_paths({"ORCA_HOME": str(tmp_path)}).ensure()
    full, stranger = KeyPair.generate(), KeyPair.generate()
    access.authorize(paths, full.public, "full", "full")
    table, stats = access.AccessTable(paths), zap.ZapStats()
    ok = zap.decide(_zap_request(full.public), table, stats)
    assert ok[:5] == [b"peer", b"", b"1.0", b"7", b"200"] and ok[6] == full.public
    for request in (
        _zap_request(stranger.public),
        _zap_request(full.public, mechanism=b"PLAIN"),
        _zap_request(full.public, domain=b"other"),
        [b"peer", b"", b"1.0"],
    ):
        assert zap.decide(request, table, stats)[4] == b"400"
    assert stats.allowed == 1 and stats.denied == 4


def test_access_table_sees_revocations_and_refuses_unsafe_dirs(tmp_path: Path) -> None:
    paths = resolve_paths({"ORCA_HOME": str(tmp_path)}).ensure()
    pair = KeyPair.generate()
    path = access.authorize(paths, pair.public, "ro", "read-only")
    assert path.stat().st_mode & 0o777 == 0o600
    assert access.clients_dir(paths).stat().st_mode & 0o777 == 0o700
    table = access.AccessTable(paths)
    client = table.lookup(pair.public)
    assert client is not None and client.access == "read-only"
    assert access.revoke(paths, "ro") == ["ro"]
    table._read_at = 0.0  # as if the re-read bound has passed
    assert table.lookup(pair.public) is None
    access.authorize(paths, pair.public, "ro", "full")
    access.clients_dir(paths).chmod(0o755)
    assert access.AccessTable(paths).lookup(pair.public) is None  # an open dir authorizes nobody


def test_access_file_with_an_unknown_level_authorizes_nobody() -> None:
    key = KeyPair.generate().public
    text = b'metadata\n    access = "root"\ncurve\n    public-key = "' + key + b'"\n'
    assert access.parse_client_file("x", text) is None


def _row(pane: str, state: str = "working") -> dict[str, object]:
    return {
        "paneKey": pane,
        "tabId": pane.split(":")[0],
        "worktreeId": "r::/w",
        "agent": "claude",
        "state": state,
        "updatedAtMs": 1,
        "stateSinceMs": 1,
        "source": "terminal",
    }


def test_host_mirror_applies_in_order_and_asks_for_snapshots_on_gaps() -> None:
    mirror = HostMirrorState("box", "runtime:box", "tcp://x:1")
    row = msgspec.convert(_row("t:1"), hooks.AgentStatusRow)
    mirror.load_hooks(hooks.Snapshot(epoch="e1", seq=5, rev=0, rows=[row]))
    assert mirror.rows["t:1"].host_id == "runtime:box"  # labelled with the remote host
    assert mirror.apply([_ev("hooks", 6, hooks.STATUS_SET.type, {"row": _row("t:2")})]) == set()
    assert mirror.rows["t:2"].host_id == "runtime:box"
    mirror.load_hooks(hooks.Snapshot(epoch="e1", seq=5, rev=0, rows=[row]))
    mirror.load_ptyd(ptyd.Snapshot(epoch="p1", seq=2, sessions=[]))
    cleared = {"paneKey": "t:1", "worktreeId": "r::/w", "reason": "cleared"}
    assert mirror.apply([_ev("hooks", 5, hooks.STATUS_CLEARED.type, cleared)]) == set()
    assert "t:1" in mirror.rows  # seq 5 is already in the snapshot: dropped
    assert mirror.apply([_ev("hooks", 6, hooks.STATUS_CLEARED.type, cleared)]) == set()
    assert "t:1" not in mirror.rows
    assert mirror.apply([_ev("hooks", 8, hooks.STATUS_CLEARED.type, cleared)]) == {"hooks"}
    assert mirror.apply([_ev("ptyd", 3, HEARTBEAT_TYPE, epoch="p1")]) == {"ptyd"}
    assert mirror.apply([_ev("ptyd", 1, HEARTBEAT_TYPE, epoch="p2")]) == {"ptyd"}
    assert mirror.apply([_ev("gitwatch", 1, "worktree.added", {})]) == {"gitwatch"}  # never loaded
    assert mirror.apply([_ev("store", 1, "repo.added", {})]) == {"store"}  # never loaded


def test_link_loss_keeps_rows_and_remembers_since_when() -> None:
    mirror = HostMirrorState("box", "runtime:box", "tcp://x:1")
    mirror.mark_contact(100.0)
    mirror.mark_unreachable(105.0, "timeout")
    mirror.mark_unreachable(110.0, "timeout")
    link = mirror.link()
    assert not link.reachable and link.unverifiable_since == 105.0
    mirror.mark_contact(120.0)
    assert mirror.link().reachable and mirror.link().unverifiable_since is None
