"""last-status.json: codec, atomic private files and the debounced saver (seed 02 §10)."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import msgspec
import trio

from actors.hooks.endpoint_file import (
    EndpointPublisher,
    read_endpoint_env,
    write_endpoint_env,
)
from actors.hooks.persistence import (
    DAMAGED_INFIX,
    MAX_DAMAGED_KEPT,
    DebouncedSaver,
    load_status_file,
)
from actors.hooks.status_file import HYDRATE_WINDOW_MS, decode_status_file, encode_status_file
from actors.hooks.status_table import AgentStatusTable, StatusEvent
from orca.fsio import write_atomic
from orca.model.agent_status import AgentStatusRow, is_fresh

PANE = "tab-1:3f1c2a9e-0000-4000-8000-000000000001"
WT = "repo1::/src/wt-a"
T0 = 1_800_000_000_000
SHA = "ab" * 32


def _row(state: str, pane: str = PANE, age_ms: int = 0, **kw: object) -> AgentStatusRow:
    return AgentStatusRow(
        pane_key=pane,
        worktree_id=WT,
        state=state,  # type: ignore[arg-type]
        source="hook",
        updated_at_ms=T0 - age_ms,
        state_since_ms=T0 - age_ms,
        **kw,  # type: ignore[arg-type]
    )


def test_hydrated_working_row_is_restored_unconfirmed_and_not_fresh() -> None:
    """A working row read back is stamped restoredUnconfirmed and never fresh (seed 03)."""
    data = encode_status_file(
        [_row("working"), _row("done", pane="tab-1:3f1c2a9e-0000-4000-8000-00000000d0e0")], {}
    )
    loaded = decode_status_file(data, T0 + 1)
    by_pane = {r.pane_key: r for r in loaded.rows}
    assert by_pane[PANE].restored_unconfirmed and not is_fresh(by_pane[PANE], T0 + 1)
    assert not by_pane["tab-1:3f1c2a9e-0000-4000-8000-00000000d0e0"].restored_unconfirmed


def test_rows_older_than_seven_days_are_dropped_on_load() -> None:
    """Only records from the last seven days survive a restart (seed 02 §10)."""
    data = encode_status_file(
        [
            _row("done", age_ms=HYDRATE_WINDOW_MS + 1),
            _row("working", pane="tab-1:3f1c2a9e-0000-4000-8000-0000000000aa"),
        ],
        {},
    )
    loaded = decode_status_file(data, T0)
    assert [r.pane_key for r in loaded.rows] == ["tab-1:3f1c2a9e-0000-4000-8000-0000000000aa"]
    assert loaded.dropped == 1


def test_structured_row_never_reaches_disk() -> None:
    """The serializer skips structured rows; the file has no trace of them (seed 03 PR 1a)."""
    data = encode_status_file([_row("working", structured_host="local")], {PANE: SHA})
    assert json.loads(data)["rows"] == []
    assert PANE.encode() not in data


def test_hydrated_file_with_a_structured_row_drops_it() -> None:
    """A structured row found on disk is dropped at hydrate (seed 03 验证)."""
    wire = {
        "paneKey": PANE,
        "worktreeId": WT,
        "state": "working",
        "source": "structured",
        "updatedAtMs": T0,
        "stateSinceMs": T0,
        "structuredHost": "local",
    }
    data = json.dumps({"version": 1, "rows": [wire], "launchTokenSha256": {}}).encode()
    assert decode_status_file(data, T0).rows == []


def test_hydrate_drops_rows_whose_worktree_or_host_cannot_be_theirs() -> None:
    """Strict hydrate (seed 02 §10; review 02-36): a row whose worktreeId is not one, or
    whose hostId is not a host id, is dropped; the well-formed row is restored."""
    good = {
        "paneKey": PANE,
        "worktreeId": WT,
        "tabId": "tab-1",
        "state": "working",
        "source": "hook",
        "updatedAtMs": T0,
        "stateSinceMs": T0,
    }
    bad = [
        {**good, "worktreeId": "not-a-worktree-id"},
        {**good, "hostId": "ssh:%zz"},
    ]
    for row in [good, *bad]:
        data = json.dumps({"version": 1, "rows": [row], "launchTokenSha256": {}}).encode()
        restored = [r.pane_key for r in decode_status_file(data, T0).rows]
        assert restored == ([PANE] if row is good else []), row


def test_hydrate_drops_rows_of_another_tab_or_another_host() -> None:
    """Strict hydrate (seed 02 §10; review 02-36): a row whose tabId is not its pane
    key's tab, or whose hostId is not the reading table's host, was never that table's
    and is dropped; the same row under its own tab and host is restored."""
    good = {
        "paneKey": PANE,
        "worktreeId": WT,
        "tabId": "tab-1",
        "state": "working",
        "source": "hook",
        "updatedAtMs": T0,
        "stateSinceMs": T0,
    }
    other_host = {**good, "hostId": "ssh:other"}
    bad = [{**good, "tabId": "OTHER-TAB"}, other_host]
    for row in [good, *bad]:
        data = json.dumps({"version": 1, "rows": [row], "launchTokenSha256": {}}).encode()
        restored = [r.pane_key for r in decode_status_file(data, T0).rows]
        assert restored == ([PANE] if row is good else []), row
    data = json.dumps({"version": 1, "rows": [other_host], "launchTokenSha256": {}}).encode()
    assert [r.host_id for r in decode_status_file(data, T0, "ssh:other").rows] == ["ssh:other"]
    data = json.dumps({"version": 1, "rows": [good], "launchTokenSha256": {}}).encode()
    assert decode_status_file(data, T0, "ssh:other").rows == []


def test_a_hook_stating_another_tab_is_filed_under_its_keys_tab_and_survives_restart() -> None:
    """Live ingest files the pane key's tab, whatever tabId the hook states, so the row it
    writes passes the strict hydrate's tab check after a restart."""
    table = AgentStatusTable()
    event = StatusEvent(
        pane_key=PANE, state="working", source="hook", worktree_id=WT, tab_id="OTHER-TAB"
    )
    assert table.apply_normalized_status(event, T0).outcome == "applied"
    assert [r.tab_id for r in table.rows()] == ["tab-1"]
    loaded = decode_status_file(encode_status_file(table.rows(), {}), T0 + 1)
    assert [(r.pane_key, r.tab_id) for r in loaded.rows] == [(PANE, "tab-1")]


def test_terminal_handle_and_raw_token_are_never_written() -> None:
    """Only the token hash is persisted; the terminal handle is live-only (seed 03)."""
    store = AgentStatusTable()
    store.apply_normalized_status(
        StatusEvent(
            pane_key=PANE,
            state="working",
            source="hook",
            worktree_id=WT,
            terminal_handle="term_secret",
            launch_token_sha256=SHA,
        ),
        T0,
    )
    data = encode_status_file(store.rows(), store.authority.commitments)
    assert b"term_secret" not in data
    loaded = decode_status_file(data, T0)
    assert loaded.commitments == {PANE: SHA}
    assert loaded.rows[0].terminal_handle is None


def test_malformed_files_hydrate_nothing() -> None:
    """Garbage, wrong versions and bad rows cost rows, never a crash."""
    for data in (
        b"",
        b"{",
        b"[]",
        b'{"version": 99, "rows": []}',
        b"[" * 100_000,
        b'{"version": 1, "rows": [1, {"paneKey": 3}]}',
    ):
        assert decode_status_file(data, T0).rows == []


def test_atomic_write_is_private(tmp_path: Path) -> None:
    """Files are 0600 inside a 0700 directory, replaced atomically."""
    target = tmp_path / "agent-hooks" / "last-status.json"
    write_atomic(target, b"one", private_parent=True)
    write_atomic(target, b"two", private_parent=True)
    assert target.read_bytes() == b"two"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE(target.parent.stat().st_mode) == 0o700
    assert [p.name for p in target.parent.iterdir()] == ["last-status.json"]


async def test_saver_coalesces_a_burst_into_one_trailing_write(tmp_path: Path) -> None:
    """A burst of changes is written once, a debounce after it settles (seed 02 §10)."""
    target = tmp_path / "agent-hooks" / "last-status.json"
    content = {"n": 0}
    saver = DebouncedSaver(target, lambda: str(content["n"]).encode(), debounce_s=0.1)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(saver.run)
            for i in range(10):
                content["n"] = i
                saver.schedule()
                settled = trio.current_time()  # the debounce runs from the last change
                await trio.sleep(0.01)
            await saver.wait_for_write()
            assert trio.current_time() - settled >= 0.1 - 0.01
            nursery.cancel_scope.cancel()
    assert saver.writes == 1 and target.read_bytes() == b"9"


async def test_saver_bounds_the_delay_under_a_continuous_stream(tmp_path: Path) -> None:
    """A stream that never settles is still saved within the max wait."""
    target = tmp_path / "last-status.json"
    content = {"n": 0}
    saver = DebouncedSaver(
        target, lambda: str(content["n"]).encode(), debounce_s=0.1, max_wait_s=0.3
    )
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(saver.run)

            async def stream() -> None:
                while True:
                    content["n"] += 1
                    saver.schedule()
                    await trio.sleep(0.01)

            nursery.start_soon(stream)
            await saver.wait_for_write()
            # Without max-wait the write would wait for a pause that never comes; with it,
            # about max_wait_s / 10 ms = 30 changes precede it (a loaded machine fits in
            # fewer sleeps, never more, so twice that bounds it without a clock).
            assert 0 < content["n"] <= 60
            nursery.cancel_scope.cancel()


async def test_saver_skips_unchanged_content(tmp_path: Path) -> None:
    """A save whose bytes equal the last written ones does not touch the file."""
    target = tmp_path / "last-status.json"
    saver = DebouncedSaver(target, lambda: b"same")
    assert saver.flush_now() is True
    mtime = target.stat().st_mtime_ns
    assert saver.flush_now() is False
    assert target.stat().st_mtime_ns == mtime and saver.writes == 1


class _Disk:
    """A write seam that refuses with ``code`` (an injected OSError) while ``full``, or
    for its first ``failures`` attempts."""

    def __init__(self, code: int = errno.ENOSPC, failures: int | None = None) -> None:
        self.full = True
        self.code = code
        self.failures = failures
        self.attempts = 0

    def write(self, path: Path, data: bytes) -> None:
        self.attempts += 1
        if self.failures is not None:
            self.full = self.attempts <= self.failures
        if self.full:
            raise OSError(self.code, os.strerror(self.code))
        write_atomic(path, data, private_parent=True)


async def test_refused_save_degrades_then_retries_once_per_period(tmp_path: Path) -> None:
    """ENOSPC never leaves the saver: it reports, stops writing on every change, and
    retries once per retry period until the disk takes the newest content (issue 16
    item 5). Undegraded, this cadence (20 ms max wait) would try ~10x as often."""
    target = tmp_path / "last-status.json"
    disk = _Disk()
    content = {"n": 0}
    retry_s = 0.2
    saver = DebouncedSaver(
        target,
        lambda: str(content["n"]).encode(),
        debounce_s=0.01,
        max_wait_s=0.02,
        retry_s=retry_s,
        write=disk.write,
    )
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(saver.run)
            saver.schedule()
            await saver.wait_for_write()
            assert saver.health.degraded and saver.health.last_error is not None
            assert saver.health.last_error.startswith("ENOSPC")
            first_failure = trio.current_time()
            attempts = disk.attempts
            for _ in range(100):  # a stream of changes while the disk is full
                content["n"] += 1
                saver.schedule()
                await trio.sleep(0.01)
            elapsed = trio.current_time() - first_failure
            assert 1 <= disk.attempts - attempts <= elapsed // retry_s + 1
            assert not target.exists()
            disk.full = False
            while saver.health.degraded:
                await saver.wait_for_write()
            nursery.cancel_scope.cancel()
    assert target.read_bytes() == b"100"
    assert saver.health.to_dict()["degraded"] is False and saver.health.failures >= 2


def test_flush_now_on_a_refused_disk_returns_false_and_keeps_the_old_file(tmp_path: Path) -> None:
    """A synchronous flush (retirement, stop) on EIO answers False, never raises."""
    target = tmp_path / "last-status.json"
    write_atomic(target, b"old")
    disk = _Disk(errno.EIO)
    saver = DebouncedSaver(target, lambda: b"new", write=disk.write)
    assert saver.flush_now() is False and saver.flush_now() is False  # retried: degraded
    assert target.read_bytes() == b"old" and disk.attempts == 2
    assert saver.health.last_error is not None and saver.health.last_error.startswith("EIO")
    disk.full = False
    assert saver.flush_now() is True and target.read_bytes() == b"new"
    assert not saver.health.degraded


async def test_endpoint_file_is_retried_and_a_stale_one_removed(tmp_path: Path) -> None:
    """endpoint.env refused at start: the old file goes, retries write this start's."""
    hooks_dir = tmp_path / "agent-hooks"
    write_endpoint_env(hooks_dir, 1, "old-secret")
    disk = _Disk(failures=3)
    publisher = EndpointPublisher(hooks_dir, 4242, "s" * 64, retry_s=0.01, write=disk.write)
    assert publisher.publish() is False and not publisher.path.exists()
    assert publisher.health.to_dict()["degraded"] is True
    with trio.fail_after(10):
        await publisher.run()  # returns once written
    assert publisher.published and disk.attempts == 4
    fields = read_endpoint_env(publisher.path)
    assert (fields["ORCA_HOOK_PORT"], fields["ORCA_HOOK_SECRET"]) == ("4242", "s" * 64)
    assert publisher.health.to_dict()["degraded"] is False


def test_damaged_file_is_kept_aside_and_old_copies_are_pruned(tmp_path: Path) -> None:
    """Each damaged load moves the bytes aside (0600); only the newest few are kept."""
    path = tmp_path / "last-status.json"
    for i in range(MAX_DAMAGED_KEPT + 3):
        (tmp_path / f"last-status.json{DAMAGED_INFIX}20000101T0000{i:02d}Z-1").write_bytes(b"x")
    path.write_bytes(b"{not json")
    path.chmod(0o644)
    load = load_status_file(path, T0)
    assert load.damage == "bad_json" and load.kept_aside is not None
    assert load.kept_aside.read_bytes() == b"{not json"
    assert stat.S_IMODE(load.kept_aside.stat().st_mode) == 0o600
    assert not path.exists()
    kept = sorted(tmp_path.glob(f"last-status.json{DAMAGED_INFIX}*"))
    assert len(kept) == MAX_DAMAGED_KEPT and load.kept_aside in kept
    assert load_status_file(path, T0).damage is None  # missing: empty, not damaged


def test_lone_surrogates_never_reach_or_leave_the_file() -> None:
    """A row holding a lone surrogate is written as U+FFFD; an old file's escape too."""
    data = encode_status_file([_row("working", detail="a\ud800b")], {})
    assert "a\ufffdb" in data.decode("utf-8")
    old = json.dumps({"version": 1, "rows": [msgspec.to_builtins(_row("done", detail="\udfff"))]})
    loaded = decode_status_file(old.encode(), T0)
    assert [r.detail for r in loaded.rows] == ["\ufffd"] and loaded.damage is None
