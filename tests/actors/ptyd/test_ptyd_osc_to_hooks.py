"""OSC 9999 from a child reaches the real hooks actor with pane key and handle (seed 03)."""

from __future__ import annotations

import uuid
from pathlib import Path

import trio
from ptyd_harness import EventTap, start_actor_process, stop_actor_process

from orca.actor import open_rpc_client
from orca.paths import resolve_paths

WT = "repo1::/w/osc"


async def test_osc_status_from_child_lands_in_hooks_store(tmp_path: Path) -> None:
    """A status printed as OSC 9999 becomes a hooks row keyed by the pane, with the handle."""
    home = tmp_path / "home"
    await trio.Path(home).mkdir()
    paths = resolve_paths({"ORCA_HOME": str(home)})
    hooks = start_actor_process("hooks", home)
    ptyd = start_actor_process("ptyd", home)
    tap = EventTap(paths.ipc_endpoint("hooks", "pub"), ["agentStatus.set", "sys.heartbeat"])
    try:
        async with (
            open_rpc_client(paths.ipc_endpoint("ptyd", "rpc")) as pt,
            open_rpc_client(paths.ipc_endpoint("hooks", "rpc")) as hk,
            trio.open_nursery() as nursery,
        ):
            with trio.fail_after(30):
                await hk.call("agentStatus.snapshot", {}, timeout=15)
                await nursery.start(tap.run)
                pane_key = f"tab1:{uuid.uuid4()}"
                script = (
                    r"""printf 'x\033]9999;{"state":"working","agent":"claude"}\007y\n'; read z"""
                )
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
                    event = await tap.receive.receive()
                    if event.type == "agentStatus.set":
                        row = event.data["row"]
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
                nursery.cancel_scope.cancel()
    finally:
        tap.close()
        await stop_actor_process(ptyd)
        await stop_actor_process(hooks)
