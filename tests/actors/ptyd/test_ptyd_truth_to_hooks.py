"""hooks restarted alone learns ptyd's truth about the PTYs (docs/protocols.md §3
"Restored rows and ptyd's truth"): real ptyd and hooks processes, real PTYs."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import trio
from support.hooks_harness import running_hooks
from support.journey import hooks_mirror
from support.ptyd_harness import PtydProcess, running_ptyd

from orca.contracts import hooks, ptyd

WT = "repo1::/w/truth"
# Reports working as OSC 9999, then waits for input that never comes.
AGENT = r"""printf '\033]9999;{"state":"working","agent":"claude"}\007'; read z"""


async def _spawn(pt: PtydProcess, pane: str) -> dict[str, Any]:
    args = {"argv": ["/bin/sh", "-c", AGENT], "cwd": "/", "worktreeId": WT, "paneKey": pane}
    spawned: dict[str, Any] = await pt.call("term.spawn", args, timeout=15)
    return spawned


async def test_hooks_restarted_alone_ties_live_rows_and_ends_dead_ones(
    tmp_path: Path,
) -> None:
    """hooks stops while ptyd keeps running; one agent lives on, the other is killed
    meanwhile. The new hooks restores both rows unconfirmed; ptyd sees its new epoch and
    pushes its truth: the live one is tied to its terminal but stays restored (a live
    PTY proves the process, not its turn), the dead one leaves with its exit code -
    neither agent reports again."""
    home = tmp_path / "home"
    live_pane, dead_pane = f"tab1:{uuid.uuid4()}", f"tab2:{uuid.uuid4()}"
    with trio.fail_after(60):
        async with running_ptyd(home) as pt:
            async with running_hooks(home), hooks_mirror(home) as (rows, _):
                live = await _spawn(pt, live_pane)
                dead = await _spawn(pt, dead_pane)
                await rows.wait_until(lambda m: {live_pane, dead_pane} <= set(m.state))
            # hooks is down (it saved its rows on the way out); the agent dies now.
            exits = await pt.tap([ptyd.exit_topic(dead["sessionId"])])
            await pt.call("term.signal", {"sessionId": dead["sessionId"], "signal": "KILL"})
            await exits.next_of(ptyd.EXIT)
            async with running_hooks(home) as hk, hooks_mirror(home) as (rows, _):
                await rows.wait_until(
                    lambda m: dead_pane not in m.state
                    and live_pane in m.state
                    and m.state[live_pane].terminal_handle is not None
                )
                row = rows.state[live_pane]
                assert (row.state, row.terminal_handle, row.restored_unconfirmed) == (
                    "working",
                    live["terminalHandle"],
                    True,
                )
                snapshot = await hk.invoke(hooks.SNAPSHOT)
                (fate,) = [f for f in snapshot.fates if f.pane_key == dead_pane]
                assert fate.exit_code == 128 + 9
