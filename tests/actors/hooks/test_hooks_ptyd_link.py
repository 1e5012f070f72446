"""ptyd's line to hooks feeds seed 03's per-connection watermark and its lifecycle
messages (issue 12), against a real hooks actor."""

from __future__ import annotations

import uuid
from pathlib import Path

import trio
from support.actors import running_actors

from actors.ptyd.hooks_link import HooksLink
from orca.contracts import hooks

WT = "repo1::/w/link"


async def test_ptyd_osc_carries_a_watermark_so_a_replay_is_dropped(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with running_actors(tmp_path / "home", "hooks") as running:
            hk = running["hooks"]
            link = HooksLink(lambda: hk.client)
            pane = f"tab1:{uuid.uuid4()}"
            async with trio.open_nursery() as nursery:
                nursery.start_soon(link.run)
                link.restart_pane(pane, "0" * 64, WT, "term_1")
                link.ingest_osc(pane, "term_1", WT, b'{"state":"working","agent":"claude"}')
                link.ingest_osc(pane, "term_1", WT, b'{"state":"blocked","agent":"claude"}')
                assert await link.retire_pane(f"tab9:{uuid.uuid4()}")  # a barrier
                nursery.cancel_scope.cancel()
            snapshot = await hk.invoke(hooks.SNAPSHOT)
            (row,) = [r for r in snapshot.rows if r.pane_key == pane]
            assert row.state == "blocked" and row.terminal_handle == "term_1"
            replay = hooks.IngestOscArgs(
                pane_key=pane,
                worktree_id=WT,
                payload='{"state":"working"}',
                connection_id=link.connection_id,
                connection_seq=1,
            )
            answer = await hk.invoke(hooks.INGEST_OSC, replay)
            assert (answer.outcome, answer.reason) == ("rejected", "replayed")


async def test_ptyd_exit_input_and_attach_reach_the_row(tmp_path: Path) -> None:
    """Input answers a prompt, attach marks it read, the PTY exit removes it (one fate)."""
    with trio.fail_after(30):
        async with running_actors(tmp_path / "home", "hooks") as running:
            hk = running["hooks"]
            link = HooksLink(lambda: hk.client)
            pane = f"tab1:{uuid.uuid4()}"

            async def barrier() -> None:
                assert await link.retire_pane(f"tab9:{uuid.uuid4()}")

            async def row() -> object:
                rows = (await hk.invoke(hooks.SNAPSHOT)).rows
                return next((r for r in rows if r.pane_key == pane), None)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(link.run)
                link.restart_pane(pane, "0" * 64, WT, "term_1")
                link.ingest_osc(pane, "term_1", WT, b'{"state":"blocked","agent":"codex"}')
                await barrier()
                blocked = await row()
                assert blocked.state == "blocked" and blocked.unread  # type: ignore[attr-defined]
                link.pane_attached(pane)
                await barrier()
                assert not (await row()).unread  # type: ignore[attr-defined]
                link.pane_input(pane, "term_1")
                link.pane_input(pane, "term_1")  # a burst is one message
                await barrier()
                assert (await row()).state == "working"  # type: ignore[attr-defined]
                link.pty_exited(pane, "term_1", 1)
                await barrier()
                nursery.cancel_scope.cancel()
            snapshot = await hk.invoke(hooks.SNAPSHOT)
            assert pane not in {r.pane_key for r in snapshot.rows}
            (fate,) = [f for f in snapshot.fates if f.pane_key == pane]
            assert (fate.exit_code, fate.agent, fate.worktree_id) == (1, "codex", WT)
