"""OSC 9999 from a child reaches the real hooks actor with pane key and handle (seed 03)."""

from __future__ import annotations

import uuid
from pathlib import Path

import trio
from support.actors import event_tap, running_actors

from orca.contracts import hooks

WT = "repo1::/w/osc"


async def test_osc_status_from_child_lands_in_hooks_store(tmp_path: Path) -> None:
    """A status printed as OSC 9999 becomes a hooks row keyed by the pane, with the handle."""
    home = tmp_path / "home"
    with trio.fail_after(30):
        async with (
            running_actors(home, "hooks", "ptyd") as running,
            event_tap(home, hooks.CONTRACT, topics=[hooks.STATUS_SET.type]) as tap,
        ):
            pt, hk = running["ptyd"], running["hooks"]
            pane_key = f"tab1:{uuid.uuid4()}"
            script = r"""printf 'x\033]9999;{"state":"working","agent":"claude"}\007y\n'; read z"""
            spawned = await pt.call(
                "term.spawn",
                {
                    "argv": ["/bin/sh", "-c", script],
                    "cwd": "/",
                    "worktreeId": WT,
                    "paneKey": pane_key,
                },
                timeout=15,
            )
            row = None
            while row is None:  # the event, or a snapshot if it beat our subscription
                got = await tap.receive()
                if isinstance(got.data, hooks.StatusSet):
                    row = got.envelope.data["row"]
                else:
                    rows = (await hk.call("agentStatus.snapshot", {}, timeout=15))["rows"]
                    row = next((r for r in rows if r["paneKey"] == pane_key), None)
            assert row["paneKey"] == pane_key
            assert row["state"] == "working"
            assert row["terminalHandle"] == spawned["terminalHandle"]
            assert row["worktreeId"] == WT
            out = await pt.call("term.read", {"sessionId": spawned["sessionId"]}, timeout=15)
            assert b"9999" not in out["data"]
            await pt.call(
                "term.signal", {"sessionId": spawned["sessionId"], "signal": "KILL"}, timeout=15
            )
