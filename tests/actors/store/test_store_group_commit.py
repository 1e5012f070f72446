"""Group commit is real: concurrent mutations share fsyncs, replies still in commit order."""

from __future__ import annotations

from pathlib import Path

import trio
from support.actors import running_store

from orca.contracts import store as contract
from orca.contracts import sys as builtin

MUTATIONS = 50


async def test_concurrent_mutations_share_journal_writes(orca_home: Path) -> None:
    """50 patches in flight at once take fewer than 50 journal batches, and each one's
    reply comes only after its record is on disk (every value is there afterwards)."""
    with trio.fail_after(60):
        async with running_store(orca_home) as store:
            acked: list[int] = []

            async def one(i: int) -> None:
                patch = contract.PatchArgs(patch={f"probe{i}": i})
                await store.client.invoke(contract.SETTINGS_PATCH, patch)
                acked.append(i)

            async with trio.open_nursery() as nursery:
                for i in range(MUTATIONS):
                    nursery.start_soon(one, i)
            stats = await store.client.invoke(builtin.STATS)
            journal = stats["store"]["journal"]
            settings = await store.client.invoke(contract.SETTINGS_GET)
        assert sorted(acked) == list(range(MUTATIONS))
        assert journal["largestBatch"] > 1 and journal["batches"] < MUTATIONS, journal
        kept = {k: v for k, v in settings.extra.items() if k.startswith("probe")}
        assert kept == {f"probe{i}": i for i in range(MUTATIONS)}
