"""Ended sessions' history on disk (issue 13): archive, budget, config."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import trio

from actors.ptyd.archive import Candidate, HistoryArchive, HistoryBudget, plan_eviction
from actors.ptyd.config import load_budget
from actors.ptyd.history import RawJournal, history_bytes_on_disk, history_stem, save_info
from actors.ptyd.info import SessionInfo, info_record
from orca.wire.errors import BadRequest

DAY = 86400.0


def info(key: str, exit_code: int | None, argv: list[str] | None = None) -> SessionInfo:
    return SessionInfo(
        session_id=key,
        worktree_id=key.split("@@")[0],
        pane_key="tab-1:3f2504e0-4f89-41d3-9a0c-0305e82c3301",
        tab_id="tab-1",
        argv=argv or ["/bin/sh"],
        cwd="/",
        pid=4242,
        cols=40,
        rows=5,
        launch_token_sha256="0" * 64,
        exit_code=exit_code,
        history_key=key,
    )


def write_session(
    directory: Path, key: str, output: bytes, exit_code: int | None, ended_at: float | None
) -> None:
    """What a ptyd leaves on disk for one session: journal plus description."""
    journal = RawJournal(directory, key, resume=False)
    journal.append(output)
    journal.close()
    save_info(history_stem(directory, key), info_record(info(key, exit_code), ended_at, 0))


def test_oldest_end_is_evicted_first_until_the_rest_fit() -> None:
    """Size bound: the oldest ends go first, the newest are kept."""
    cands = [Candidate("b", 200.0, 10), Candidate("a", 100.0, 10), Candidate("c", 300.0, 10)]
    budget = HistoryBudget(max_bytes=15, max_age_s=1e9)
    assert plan_eviction(cands, budget, now=400.0) == ["a", "b"]
    assert plan_eviction(cands, HistoryBudget(30, 1e9), now=400.0) == []
    assert plan_eviction(cands, HistoryBudget(0, 1e9), now=400.0) == ["a", "b", "c"]


def test_age_bound_evicts_old_ends_even_with_room_to_spare() -> None:
    cands = [Candidate("old", 0.0, 1), Candidate("new", 9 * DAY, 1)]
    assert plan_eviction(cands, HistoryBudget(10**9, 5 * DAY), now=10 * DAY) == ["old"]


def test_archive_lists_exited_and_lost_sessions_and_reads_them(tmp_path: Path) -> None:
    """Journals not re-adopted become ended sessions: exited (code on disk) or lost."""
    write_session(tmp_path, "r::/w@@000000e1", b"done\r\nbye\r\n", 3, 1000.0)
    write_session(tmp_path, "r::/w@@000000c1", b"was running\r\n", None, None)
    write_session(tmp_path, "r::/w@@0000011e", b"still alive\r\n", None, None)
    archive = HistoryArchive(tmp_path, 1024 * 1024)
    assert archive.load(live_keys={"r::/w@@0000011e"}) == 2
    exited = archive.find("r::/w@@000000e1")
    lost = archive.find("r::/w@@000000c1")
    assert exited is not None and lost is not None
    assert archive.find("r::/w@@0000011e") is None  # live: the table's, not ours
    assert (exited.state, exited.info.exit_code) == ("exited", 3)
    assert (lost.state, lost.info.exit_code) == ("lost", -1)
    read = archive.read_reply(exited, None, None)
    assert read.data == b"done\r\nbye\r\n" and not read.running and read.output_ended
    assert archive.read_reply(exited, 6, None).data == b"bye\r\n"
    with pytest.raises(BadRequest):
        archive.read_reply(exited, 10_000, None)
    screen = archive.attach_reply(lost, "epoch", 7)
    assert b"was running" in screen.data and screen.exit_code == -1 and screen.topics == []
    row = archive.row(lost)
    assert row.archived and row.lost and not row.running and row.end_offset == 13
    assert archive.row(exited).argv == ["/bin/sh"] and not archive.row(exited).lost


def test_a_lost_sessions_end_is_bounded_at_once_and_exact_once_measured(tmp_path: Path) -> None:
    """Listing never replays a journal on ptyd's loop: a lost session's row shows an
    upper bound until ``measure_lost`` (a worker thread at start) counts it."""
    osc = b"\x1b]9999;{}\x07"
    write_session(tmp_path, "r::/w@@000000c2", b"before" + osc + b"after", None, None)
    archive = HistoryArchive(tmp_path, 4096)
    archive.load(set())
    (entry,) = archive.sessions()
    assert archive.row(entry).end_offset >= len(b"beforeafter")
    archive.measure_lost()
    assert archive.row(entry).end_offset == len(b"beforeafter")
    assert archive.read_reply(entry, None, None).data == b"beforeafter"


async def test_prepare_rebuilds_in_a_thread_and_replies_use_it(tmp_path: Path) -> None:
    write_session(tmp_path, "r::/w@@000000c3", b"screen text", 0, 1.0)
    archive = HistoryArchive(tmp_path, 4096)
    archive.load(set())
    (entry,) = archive.sessions()
    with trio.fail_after(10):
        await archive.prepare(entry)
    assert b"screen text" in archive.attach_reply(entry, "e", 1).data


def test_archive_remove_deletes_every_file_of_that_session_only(tmp_path: Path) -> None:
    write_session(tmp_path, "r::/w@@000000a1", b"a", 0, 1.0)
    write_session(tmp_path, "r::/w@@000000a2", b"b", 0, 2.0)
    archive = HistoryArchive(tmp_path, 4096)
    archive.load(set())
    archive.remove("r::/w@@000000a1")
    left = {p.name for p in tmp_path.iterdir()}
    assert left and all(n.startswith(history_stem(tmp_path, "r::/w@@000000a2").name) for n in left)
    assert archive.find("r::/w@@000000a1") is None and len(archive) == 1


def test_budget_over_real_files_evicts_oldest_and_never_a_live_session(tmp_path: Path) -> None:
    """The candidates are ended sessions only: a live journal, however old and large,
    is not offered, so no budget can evict it."""
    for n, ended in enumerate((100.0, 200.0, 300.0)):
        write_session(tmp_path, f"r::/w@@0000000{n}", b"x" * 5000, 0, ended)
    write_session(tmp_path, "r::/w@@11111111", b"live" * 5000, None, None)
    live_stem = history_stem(tmp_path, "r::/w@@11111111")
    os.utime(f"{live_stem}.0", (1.0, 1.0))  # the oldest files of all
    archive = HistoryArchive(tmp_path, 4096)
    archive.load(live_keys={"r::/w@@11111111"})
    cands = archive.candidates([])
    assert {c.key for c in cands} == {f"r::/w@@0000000{n}" for n in range(3)}
    newest = next(c for c in cands if c.key.endswith("2"))
    evict = plan_eviction(cands, HistoryBudget(newest.size, 1e9), now=400.0)
    assert evict == ["r::/w@@00000000", "r::/w@@00000001"]
    assert plan_eviction(cands, HistoryBudget(0, 0), now=400.0) == [
        c.key for c in sorted(cands, key=lambda c: c.ended_at)
    ]
    for key in evict:
        archive.remove(key)
    assert history_bytes_on_disk(live_stem) > 0
    assert RawJournal(tmp_path, "r::/w@@11111111", resume=True).replay().raw == b"live" * 5000


def test_damaged_descriptions_and_metas_never_crash_the_archive(tmp_path: Path) -> None:
    write_session(tmp_path, "r::/w@@0000dead", b"out", 1, 5.0)
    stem = history_stem(tmp_path, "r::/w@@0000dead")
    Path(f"{stem}.info.json").write_bytes(b'{"sessionId": 5, "argv": "x"}')
    damaged = tmp_path / ("0" * 32 + ".meta.json")
    damaged.write_bytes(b"\xff[")
    archive = HistoryArchive(tmp_path, 4096)
    assert archive.load(set()) == 1
    entry = archive.find("r::/w@@0000dead")
    assert entry is not None and entry.lost  # a description that is not one: unknown end
    assert archive.read_reply(entry, None, None).data == b"out"
    assert not damaged.exists()  # the unreadable journal is swept

    huge = history_stem(tmp_path, "r::/w@@0000b16b")
    write_session(tmp_path, "r::/w@@0000b16b", b"x", 0, 6.0)
    record = info_record(info("r::/w@@0000b16b", 0), 6.0, 1) | {"cols": 10**9}
    save_info(huge, record)
    archive = HistoryArchive(tmp_path, 4096)
    archive.load(set())
    sized = archive.find("r::/w@@0000b16b")
    assert sized is not None and sized.lost and (sized.info.cols, sized.info.rows) == (80, 24)


def test_budget_config_user_keys_override_and_bad_values_keep_defaults(tmp_path: Path) -> None:
    shipped = tmp_path / "shipped.toml"
    shipped.write_text("[history]\nmax_bytes = 1000\nmax_age_days = 2\n")
    config = tmp_path / "config"
    config.mkdir()
    assert load_budget(config, shipped) == HistoryBudget(1000, 2 * DAY)
    (config / "ptyd.toml").write_text("[history]\nmax_bytes = 50\n")
    assert load_budget(config, shipped) == HistoryBudget(50, 2 * DAY)
    (config / "ptyd.toml").write_text('[history]\nmax_bytes = -1\nmax_age_days = "x"\n')
    assert load_budget(config, shipped) == HistoryBudget(1000, 2 * DAY)
    (config / "ptyd.toml").write_bytes(b"[history\n\xff")
    assert load_budget(config, shipped) == HistoryBudget(1000, 2 * DAY)
