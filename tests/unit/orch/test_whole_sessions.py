"""run.remove asks which terminals run only of a whole ptyd mirror (issue 33's rule).

A copy being reloaded after a ptyd restart may lack a terminal that runs, and run.remove
would remove its worktree under it; ``Orch.whole_sessions`` waits (bounded) for the new
snapshot, then answers unavailable. The mirror here is a stand-in with the two things
orch reads of one (``whole``, ``wait_whole``); the real one's are tested in
tests/actors/runtime/test_mirror.py.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import trio
import trio.testing

from actors.orch import actor as orch_actor
from actors.orch.follow import PtySession
from orca.wire.errors import Unavailable


class ReloadingMirror:
    """``state`` is the old copy until ``load`` swaps in the new one and makes it whole."""

    def __init__(self, state: dict[str, PtySession]) -> None:
        self.state = state
        self._whole = trio.Event()

    @property
    def whole(self) -> bool:
        return self._whole.is_set()

    async def wait_whole(self) -> None:
        await self._whole.wait()

    def load(self, state: dict[str, PtySession]) -> None:
        self.state = state
        self._whole.set()


def _orch(tmp_path: Path, mirror: Any) -> orch_actor.Orch:
    ctx: Any = SimpleNamespace(
        paths=SimpleNamespace(data_dir=tmp_path), connect=lambda *a, **k: None
    )
    orch = orch_actor.Orch(ctx, ledger=None)
    orch.ptyd_mirror = mirror
    return orch


def _session(session_id: str) -> PtySession:
    return PtySession(session_id, "pane", "r::/w", True, None)


async def test_no_ptyd_mirror_yet_is_unavailable(tmp_path: Path) -> None:
    """Before the mirror exists nothing is known: unavailable at once."""
    with pytest.raises(Unavailable, match="not known yet"):
        await _orch(tmp_path, None).whole_sessions()


async def test_a_mirror_still_reloading_after_the_bound_is_catching_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old copy is never answered: past the bound, ptyd is catching up."""
    monkeypatch.setattr(orch_actor, "PTYD_CATCH_UP_S", 0.05)
    orch = _orch(tmp_path, ReloadingMirror({}))
    with pytest.raises(Unavailable, match="ptyd is catching up"):
        await orch.whole_sessions()


async def test_a_reload_within_the_bound_is_waited_for(tmp_path: Path) -> None:
    """A caller that arrives while the copy reloads gets the new copy's sessions."""
    mirror = ReloadingMirror({})
    orch = _orch(tmp_path, mirror)
    answers: list[list[PtySession]] = []

    async def remove_asks() -> None:
        answers.append(await orch.whole_sessions())

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(remove_asks)
            await trio.testing.wait_all_tasks_blocked()
            assert answers == []
            mirror.load({"s1": _session("s1")})
    assert [[s.session_id for s in got] for got in answers] == [["s1"]]
