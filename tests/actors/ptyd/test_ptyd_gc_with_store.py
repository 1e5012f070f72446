"""Session GC against the real store actor (ARCHITECTURE §3.1; seed 01 §4.3, §7.5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
from support.actors import RunningActor, actor_tap, running_actor

from orca.contracts import ptyd as contract

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
    gc_env = {"ORCA_PTYD_GC_GRACE_S": str(GRACE_S), "ORCA_PTYD_GC_INTERVAL_S": "0.2"}
    tap = actor_tap(home, contract.CONTRACT, topics=[contract.CLOSED.type, contract.REKEYED.type])
    try:
        async with (
            running_actor("store", home) as st,
            running_actor("ptyd", home, gc_env) as pt,
            trio.open_nursery() as nursery,
        ):
            with trio.fail_after(30):

                async def call(client: RunningActor, op: str, args: dict[str, Any]) -> Any:
                    return await client.call(op, args, timeout=15)

                for wt in (KNOWN, OLD):
                    await call(st, "worktreeMeta.patch", {"worktreeId": wt, "patch": {}})
                await tap.start(nursery)
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
                rekeyed = await tap.next_of(contract.REKEYED)
                assert rekeyed.old == sids[OLD]
                assert rekeyed.new == NEW + sids[OLD][-10:]
                closed = await tap.next_of(contract.CLOSED)
                reaped_after = trio.current_time() - spawned_at
                assert closed.session_id == sids[GONE]
                assert reaped_after >= GRACE_S
                # Another full grace later nothing else was reaped.
                with trio.move_on_after(GRACE_S + 0.5):
                    extra = await tap.next_of(contract.CLOSED)
                    raise AssertionError(f"unexpected reap {extra}")
                rows = (await call(pt, "term.list", {}))["sessions"]
                alive = sorted((r["worktreeId"], r["running"]) for r in rows)
                assert alive == [(KNOWN, True), (NEW, True)]
                for row in rows:
                    await call(pt, "term.signal", {"sessionId": row["sessionId"], "signal": "KILL"})
                nursery.cancel_scope.cancel()
    finally:
        tap.close()
