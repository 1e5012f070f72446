"""Session GC against the real store actor (ARCHITECTURE §3.1; seed 01 §4.3, §7.5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
from ptyd_harness import EventTap, start_actor_process, stop_actor_process

from orca.actor import open_rpc_client
from orca.paths import resolve_paths

KNOWN = "repo1::/w/known"
GONE = "repo1::/w/gone"
OLD = "repo1::/w/old-name"
NEW = "repo1::/w/new-name"
GRACE_S = 1.5


async def test_gc_reaps_unknown_worktree_after_grace_and_never_a_renamed_one(
    tmp_path: Path,
) -> None:
    """Only the unknown worktree's session is reaped, not before the grace; a rename re-keys."""
    home = tmp_path / "home"
    await trio.Path(home).mkdir()
    paths = resolve_paths({"ORCA_HOME": str(home)})
    store = start_actor_process("store", home)
    ptyd = start_actor_process(
        "ptyd", home, {"ORCA_PTYD_GC_GRACE_S": str(GRACE_S), "ORCA_PTYD_GC_INTERVAL_S": "0.2"}
    )
    tap = EventTap(paths.ipc_endpoint("ptyd", "pub"), ["term.closed", "term.rekeyed"])
    try:
        async with (
            open_rpc_client(paths.ipc_endpoint("store", "rpc")) as st,
            open_rpc_client(paths.ipc_endpoint("ptyd", "rpc")) as pt,
            trio.open_nursery() as nursery,
        ):
            with trio.fail_after(30):

                async def call(client: Any, op: str, args: dict[str, Any]) -> Any:
                    return await client.call(op, args, timeout=15)

                for wt in (KNOWN, OLD):
                    await call(st, "worktreeMeta.patch", {"worktreeId": wt, "patch": {}})
                await nursery.start(tap.run)
                sids = {}
                for wt in (KNOWN, GONE, OLD):
                    spawned = await call(
                        pt,
                        "term.spawn",
                        {"argv": ["/bin/sleep", "60"], "cwd": "/", "worktreeId": wt},
                    )
                    sids[wt] = spawned["sessionId"]
                spawned_at = trio.current_time()
                await call(st, "worktree.migrate_identity", {"oldId": OLD, "newId": NEW})
                rekeyed = await tap.next_of("term.rekeyed")
                assert rekeyed.data["old"] == sids[OLD]
                assert rekeyed.data["new"] == NEW + sids[OLD][-10:]
                closed = await tap.next_of("term.closed")
                reaped_after = trio.current_time() - spawned_at
                assert closed.data["sessionId"] == sids[GONE]
                assert reaped_after >= GRACE_S
                # Another full grace later nothing else was reaped.
                with trio.move_on_after(GRACE_S + 0.5):
                    extra = await tap.next_of("term.closed")
                    raise AssertionError(f"unexpected reap {extra.data}")
                rows = (await call(pt, "term.list", {}))["sessions"]
                alive = sorted((r["worktreeId"], r["running"]) for r in rows)
                assert alive == [(KNOWN, True), (NEW, True)]
                for row in rows:
                    await call(pt, "term.signal", {"sessionId": row["sessionId"], "signal": "KILL"})
                nursery.cancel_scope.cancel()
    finally:
        tap.close()
        await stop_actor_process(ptyd)
        await stop_actor_process(store)
