"""SaveScheduler (pure timing) and Saver (its trio shell) — seed 01 §7.4, seed 02 §4."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from pathlib import Path

import trio
from hypothesis import given
from hypothesis import strategies as st

from actors.store.durable_file import DurableFile, OsFileWriter, SaveFailed, SaveWritten
from actors.store.save_scheduler import SAVE_DEBOUNCE_S, SAVE_MAX_WAIT_S, SaveScheduler
from actors.store.saver import Saver


def test_clean_scheduler_has_no_deadline() -> None:
    """Nothing changed → nothing scheduled (idle means no writes)."""
    s = SaveScheduler()
    assert s.deadline() is None and not s.begin_save(1e9)


def test_trailing_debounce_moves_with_each_mutation() -> None:
    """The save waits for 1 s of quiet after the last mutation."""
    s = SaveScheduler()
    s.mark_dirty(10.0)
    s.mark_dirty(10.5)
    assert s.deadline() == 10.5 + SAVE_DEBOUNCE_S
    assert not s.begin_save(11.2)
    assert s.begin_save(11.5)
    assert s.deadline() is None


@given(st.lists(st.floats(min_value=0.0, max_value=0.99), min_size=1, max_size=200))
def test_max_wait_bounds_staleness_under_constant_mutation(gaps: list[float]) -> None:
    """However mutations keep coming, a save is due within 5 s of the first unsaved one."""
    s = SaveScheduler()
    now = 0.0
    s.mark_dirty(now)
    for gap in gaps:
        now += gap
        s.mark_dirty(now)
        deadline = s.deadline()
        assert deadline is not None and deadline <= SAVE_MAX_WAIT_S


def test_failed_save_is_retried_later_not_immediately() -> None:
    """After a failed save the state stays dirty with a retry pause."""
    s = SaveScheduler(retry_s=5.0)
    s.mark_dirty(0.0)
    assert s.begin_save(1.0)
    s.save_failed(1.0)
    assert s.dirty and s.deadline() == 6.0
    assert not s.begin_save(2.0)
    assert s.begin_save(6.0)
    s.save_succeeded()
    assert not s.dirty


def test_fence_stops_debounced_saves_but_flush_still_claims() -> None:
    """After stop's fence no debounced save starts; the flush is the last write."""
    s = SaveScheduler()
    s.mark_dirty(0.0)
    s.fence()
    assert s.deadline() is None and not s.begin_save(100.0)
    assert s.begin_flush()
    assert not s.begin_flush()


class StateBox:
    def __init__(self) -> None:
        self.n = 0

    def snapshot(self) -> tuple[Callable[[], bytes], int]:
        data = json.dumps({"n": self.n}).encode()
        return (lambda: data), self.n


async def test_saver_debounces_a_burst_into_one_write(tmp_path: Path) -> None:
    """A burst of mutations closer than the debounce becomes one write."""
    box = StateBox()
    f = DurableFile(tmp_path / "orca-data.json")
    saved = trio.Event()
    saver = Saver(
        f,
        box.snapshot,
        scheduler=SaveScheduler(debounce_s=0.5, max_wait_s=5.0),
        on_outcome=lambda outcome: saved.set(),
    )
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(saver.run)
            for n in range(1, 6):
                box.n = n
                saver.mark_dirty()
                await trio.sleep(0.02)
            await saved.wait()
            nursery.cancel_scope.cancel()
    assert f.statistics().writes == 1
    assert json.loads(f.path.read_bytes())["n"] == 5


async def test_flush_after_close_wins_over_pending_debounce(tmp_path: Path) -> None:
    """close() fences and flushes: the file holds the newest state and nothing follows."""
    box = StateBox()
    f = DurableFile(tmp_path / "orca-data.json")
    saver = Saver(f, box.snapshot)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(saver.run)
            box.n = 1
            saver.mark_dirty()
            box.n = 2
            saver.mark_dirty()
            outcome = await saver.close()
            assert isinstance(outcome, SaveWritten)
            await trio.sleep(SAVE_DEBOUNCE_S + 0.2)
            nursery.cancel_scope.cancel()
    assert json.loads(f.path.read_bytes())["n"] == 2
    assert f.statistics().writes == 1
    assert saver.scheduler.deadline() is None


async def test_failed_save_is_reported_and_retried(tmp_path: Path) -> None:
    """An EIO save is reported via on_outcome and a later retry lands the state."""

    class FailOnce:
        def __init__(self) -> None:
            self.failed = False

        def write_new_file(self, path: Path, data: bytes) -> None:
            if not self.failed:
                self.failed = True
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            OsFileWriter().write_new_file(path, data)

    box = StateBox()
    f = DurableFile(tmp_path / "orca-data.json", writer=FailOnce())
    outcomes: list[object] = []
    landed = trio.Event()

    def note(outcome: object) -> None:
        outcomes.append(outcome)
        if isinstance(outcome, SaveWritten):
            landed.set()

    saver = Saver(
        f,
        box.snapshot,
        scheduler=SaveScheduler(debounce_s=0.01, retry_s=0.05),
        on_outcome=note,
    )
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(saver.run)
            box.n = 7
            saver.mark_dirty()
            await landed.wait()
            nursery.cancel_scope.cancel()
    assert isinstance(outcomes[0], SaveFailed)
    assert json.loads(f.path.read_bytes())["n"] == 7
