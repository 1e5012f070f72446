"""A host mirror's store labels and version, and ``orca watch``'s diff of mirrors (pure)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec
import pytest

from actors.gateway.hostmirror import HostMirrorState
from orca.contracts import gateway as gw
from orca.contracts import hooks
from orca.contracts.sys import HEARTBEAT_TYPE


def _ev(src: str, seq: int, type: str = "x", data: object = None, epoch: str = "e1") -> gw.RelayedEvent:
    return gw.RelayedEvent(src=src, epoch=epoch, seq=seq, type=type, data=data)


def _row(pane: str, state: str = "working", rev: int = 1) -> hooks.AgentStatusRow:
    raw = {
        "paneKey": pane,
        "tabId": pane.split(":")[0],
        "worktreeId": "r::/w",
        "agent": "claude",
        "state": state,
        "updatedAtMs": 1,
        "stateSinceMs": 1,
        "source": "terminal",
        "rev": rev,
    }
    return msgspec.convert(raw, hooks.AgentStatusRow)


def test_store_labels_are_relisted_on_any_relayed_store_event_and_a_new_epoch() -> None:
    mirror = HostMirrorState("box", "runtime:box", "tcp://x:1")
    version = mirror.version
    mirror.load_store([{"id": "r1", "displayName": "proj"}], {"r1::/w": {"displayName": "Släpp"}})
    assert mirror.version > version
    view = mirror.view()
    assert view.repos == [{"id": "r1", "displayName": "proj"}]
    assert view.worktree_meta["r1::/w"]["displayName"] == "Släpp"
    # repo.list has no epoch: the first relayed store event gives it; a heartbeat of
    # that epoch changes nothing (its seq counts events that are not relayed).
    assert mirror.apply([_ev("store", 40, HEARTBEAT_TYPE, epoch="s1")]) == set()
    assert mirror.apply([_ev("store", 90, HEARTBEAT_TYPE, epoch="s1")]) == set()
    assert mirror.apply([_ev("store", 91, "worktreeMeta.changed", {}, epoch="s1")]) == {"store"}
    assert mirror.apply([_ev("store", 1, HEARTBEAT_TYPE, epoch="s2")]) == {"store"}  # restarted
    mirror.load_store([], {})
    assert mirror.cursors["store"].epoch == "s1"  # kept until an event says otherwise


def test_store_labels_are_bounded() -> None:
    mirror = HostMirrorState("box", "runtime:box", "tcp://x:1")
    mirror.load_store([{"id": str(i)} for i in range(5000)], {str(i): {} for i in range(20_000)})
    assert len(mirror.repos) == 2000 and len(mirror.worktree_meta) == 10_000


def test_version_grows_on_every_visible_change_and_only_then() -> None:
    mirror = HostMirrorState("box", "runtime:box", "tcp://x:1")
    mirror.load_hooks(hooks.Snapshot(epoch="e1", seq=1, rev=0, rows=[]))
    v = mirror.version
    mirror.apply([_ev("hooks", 1, hooks.STATUS_SET.type, {})])  # already reflected
    assert mirror.version == v
    row = msgspec.to_builtins(_row("t:1"))
    mirror.apply([_ev("hooks", 2, hooks.STATUS_SET.type, {"row": row})])
    assert mirror.version == v + 1
    mirror.mark_contact(1.0)
    w = mirror.version
    mirror.mark_contact(2.0)  # still reachable: nothing changed
    assert mirror.version == w
    mirror.mark_unreachable(3.0, "timeout")
    mirror.mark_unreachable(4.0, "timeout")
    assert mirror.version == w + 1 and mirror.unverifiable_since == 3.0


# -- orca watch's diff (orca.cli.remote.watch) ----------------------------------------------
@pytest.fixture
def watch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("ORCA_HOME", str(tmp_path))
    from orca.cli.remote.watch import RemoteWatch

    remote = RemoteWatch()
    yield remote
    remote.close()


def _mirror(rows: list[hooks.AgentStatusRow], reachable: bool, since: float | None = None) -> gw.HostMirror:
    link = gw.HostLink(
        name="box",
        host_id="runtime:box",
        endpoint="tcp://x:1",
        reachable=reachable,
        unverifiable_since=since,
        last_contact=None,
        resyncs=0,
        error="",
    )
    return gw.HostMirror(link=link, rows=rows, fates=[], sessions=[], worktrees=[])


def test_watch_prints_changes_once_and_marks_rows_unverifiable_on_link_loss(watch: Any) -> None:
    lines: list[dict[str, Any]] = []
    a, b = _row("t:1"), _row("t:2", "blocked")
    watch._host(_mirror([a, b], True), 0, lines.append)
    assert [(x["event"], x["paneKey"], x["host"]) for x in lines] == [("set", "t:1", "box"), ("set", "t:2", "box")]
    lines.clear()
    watch._host(_mirror([a, b], True), 0, lines.append)  # a resync with the same rows
    assert lines == []
    watch._host(_mirror([_row("t:1", "done", rev=2)], True), 0, lines.append)
    assert [(x["event"], x["paneKey"]) for x in lines] == [("set", "t:1"), ("clear", "t:2")]
    assert lines[0]["state"] == "done"
    lines.clear()
    watch._host(_mirror([], False, since=100.0), 0, lines.append)  # link lost: rows kept
    assert lines[0]["event"] == "link" and lines[0]["verifiable"] is False and lines[0]["rows"] == 1
    assert lines[1]["displayState"] == "unverifiable" and lines[1]["lastSeen"] == "done"
    assert lines[1]["verifiable"] is False and lines[1]["unverifiableSince"] == 100.0
    lines.clear()
    watch._host(_mirror([], False, since=100.0), 0, lines.append)  # still down: nothing new
    assert lines == []
    watch._host(_mirror([_row("t:1", "done", rev=2)], True), 0, lines.append)
    assert [(x["event"], x.get("paneKey")) for x in lines] == [("link", None), ("set", "t:1")]
    assert lines[0]["verifiable"] is True and "lastSeen" not in lines[1]


def test_local_lines_are_labelled_local(watch: Any) -> None:
    line = watch.label_local({"event": "set", "paneKey": "t:1"})
    assert line["host"] == "local" and line["verifiable"] is True


def test_human_lines_name_the_host_and_never_show_a_stale_row_as_live(watch: Any) -> None:
    from orca.cli.watch import _human

    lines: list[dict[str, Any]] = []
    watch._host(_mirror([_row("t:1")], True), 0, lines.append)
    watch._host(_mirror([], False, since=100.0), 0, lines.append)
    text = [_human(x) for x in lines]
    # No terminal of the host runs the pane: the worktree's handle, as `worktree ps`.
    assert "  box  box:w  claude  working" in text[0]
    assert "  box  unverifiable since " in text[1] and text[1].endswith("(1 rows)")
    assert re.search(r"  box:w  claude  unverifiable since \d\d:\d\d:\d\d \(last seen working\)$", text[2])
    assert " working" not in text[2].replace("(last seen working)", "")


def test_status_events_print_every_transition_once_in_order(watch: Any) -> None:
    lines: list[dict[str, Any]] = []
    watch._host(_mirror([_row("t:1", rev=1)], True), 0, lines.append)
    lines.clear()
    done = _row("t:1", "done", rev=2)
    cleared = hooks.StatusCleared(pane_key="t:1", worktree_id="r::/w", reason="pty_exited", exit_code=0)
    # done then gone, both between two reads of the mirror: both are printed.
    watch.status(gw.HostStatus(host="box", host_id="runtime:box", row=done), lines.append)
    watch.status(gw.HostStatus(host="box", host_id="runtime:box", cleared=cleared), lines.append)
    watch._host(_mirror([], True), 0, lines.append)  # the read after: nothing new
    assert [(x["event"], x.get("state")) for x in lines] == [("set", "done"), ("clear", None)]
    assert lines[1]["exitCode"] == 0 and lines[1]["host"] == "box"
    lines.clear()
    # A read that is ahead of an in-flight event: the older event is not printed after it.
    watch._host(_mirror([_row("t:2", "blocked", rev=9)], True), 0, lines.append)
    watch.status(gw.HostStatus(host="box", host_id="runtime:box", row=_row("t:2", rev=8)), lines.append)
    assert [(x["paneKey"], x["state"]) for x in lines] == [("t:2", "blocked")]
    # A host not shown as reachable: its events wait for the next read.
    lines.clear()
    watch._host(_mirror([], False, since=5.0), 0, lines.append)
    lines.clear()
    watch.status(gw.HostStatus(host="box", host_id="runtime:box", row=_row("t:3", rev=20)), lines.append)
    assert lines == []


def test_the_mirror_hands_over_each_applied_status_change_once() -> None:
    mirror = HostMirrorState("box", "runtime:box", "tcp://x:1")
    mirror.load_hooks(hooks.Snapshot(epoch="e1", seq=1, rev=0, rows=[]))
    row = msgspec.to_builtins(_row("t:1"))
    cleared = {"paneKey": "t:1", "worktreeId": "r::/w", "reason": "cleared"}
    mirror.apply([_ev("hooks", 2, hooks.STATUS_SET.type, {"row": row}), _ev("hooks", 3, hooks.STATUS_CLEARED.type, cleared)])
    changes = mirror.take_changes()
    assert [(r.host_id if r else None, c.reason if c else None) for r, c in changes] == [("runtime:box", None), (None, "cleared")]
    assert mirror.take_changes() == []
    mirror.apply([_ev("hooks", 4, hooks.STATUS_SET.type, {"row": row})])
    mirror.load_hooks(hooks.Snapshot(epoch="e1", seq=9, rev=0, rows=[]))  # superseded: readers diff
    assert mirror.take_changes() == []


def test_a_remote_line_names_the_agent_by_its_terminal_handle_on_that_host(watch: Any) -> None:
    """The host's terminal running the pane names the line (`box:<handle>`, what
    `orca term read box:...` takes), never the pane key; a clear line too."""
    from orca.cli.watch import _human
    from orca.contracts import ptyd

    session = ptyd.SessionRow(
        session_id="r::/w@@3f2a9c01", host_id="runtime:box", worktree_id="r::/w", pane_key="t:1",
        tab_id="t", terminal_handle="h", argv=["claude"], cwd="/w", pid=7, cols=80, rows=24,
        created_at=1.0, exit_code=None, running=True, end_offset=0, subscribers=0,
    )  # fmt: skip
    lines: list[dict[str, Any]] = []
    mirror = _mirror([_row("t:1")], True)
    watch._host(msgspec.structs.replace(mirror, sessions=[session]), 0, lines.append)
    watch._host(msgspec.structs.replace(mirror, rows=[], sessions=[session]), 0, lines.append)
    assert [(x["event"], x["handle"]) for x in lines] == [("set", "box:w:3f2a"), ("clear", "box:w:3f2a")]
    assert "  box:w:3f2a  claude  working" in _human(lines[0]) and "t:1" not in _human(lines[0])

