"""kill -9 of the store at random moments during acknowledged mutations (seed 02 §4, §13)."""

from __future__ import annotations

import os
import random
import signal
from pathlib import Path

import trio
from support.actors import wait_exited
from support.store_harness import StoreClient, store_zygote

from orca.contracts import store as contract
from orca.contracts import sys as sys_contract
from orca.model.codec import from_builtins
from orca.model.state import PersistedState

CRASH_CYCLES = 200
# Kill within this window after the store is ready: long enough for a few dozen
# acknowledged mutations and flushes, short enough that 200 cycles fit in a minute.
KILL_WINDOW_S = 0.06
FLUSH_EVERY = 2  # a session.flush after every second mutation: many kills land mid-save
FLUSH = contract.SessionFlushArgs()


async def test_kill_9_never_loses_a_mutation_acknowledged_after_a_flush(tmp_path: Path) -> None:
    """200 kill -9 cycles: each restart loads a valid primary holding every flushed mutation."""
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    sent: dict[int, int] = {}  # cycle -> highest value sent (maybe applied, maybe not)
    flushed: dict[int, int] = {}  # cycle -> highest value acknowledged before a flush reply
    swept = 0  # temp files left by a kill in the middle of a save, swept at the next start
    clients: list[StoreClient] = []  # closed even when an assertion fails mid-cycle
    try:
        with trio.fail_after(240):
            async with store_zygote(tmp_path) as zygote:
                for cycle in range(CRASH_CYCLES):
                    pid = await zygote.spawn()
                    async with trio.open_nursery() as nursery:
                        client = StoreClient(tmp_path, nursery)
                        clients.append(client)
                        await client.start()
                        stats = await client.call(sys_contract.STATS.name)
                        source = stats["store"]["load"]["source"]
                        # Nothing is on disk until a first save lands: while no flush has been
                        # acknowledged yet, a kill may have come first and "missing" is right.
                        expected = {"primary"} if flushed else {"missing", "primary"}
                        assert source in expected, (seed, cycle, stats)
                        swept += stats["store"]["load"]["sweptTempFiles"]
                        snapshot = await client.invoke(contract.STATE_SNAPSHOT)
                        from_builtins(PersistedState, snapshot.state)  # a valid state
                        stored = snapshot.state["settings"]
                        for c, n in flushed.items():
                            assert stored.get(f"c{c}", 0) >= n, (seed, c, n, stored.get(f"c{c}"))
                        for c, n in sent.items():
                            assert stored.get(f"c{c}", 0) <= n, (seed, c, n)

                        async def stream(cycle: int = cycle, client: StoreClient = client) -> None:
                            n = 0
                            while True:
                                n += 1
                                sent[cycle] = n
                                patch = contract.PatchArgs(patch={f"c{cycle}": n})
                                await client.invoke(contract.SETTINGS_PATCH, patch)
                                if n % FLUSH_EVERY == 0:
                                    reply = await client.invoke(contract.SESSION_FLUSH, FLUSH)
                                    assert reply.flushed is True
                                    flushed[cycle] = n

                        nursery.start_soon(stream)
                        await trio.sleep(rng.uniform(0, KILL_WINDOW_S))  # the random kill moment
                        os.kill(pid, signal.SIGKILL)
                        await wait_exited(pid)
                        nursery.cancel_scope.cancel()
                    client.close()
                # A graceful stop flushes everything acknowledged, flushed or not.
                pid = await zygote.spawn()
                async with trio.open_nursery() as nursery:
                    client = StoreClient(tmp_path, nursery)
                    clients.append(client)
                    await client.start()
                    last = contract.PatchArgs(patch={"last": 1})
                    await client.invoke(contract.SETTINGS_PATCH, last)
                    os.kill(pid, signal.SIGTERM)
                    await wait_exited(pid)
                    nursery.cancel_scope.cancel()
                client.close()
                pid = await zygote.spawn()
                async with trio.open_nursery() as nursery:
                    client = StoreClient(tmp_path, nursery)
                    clients.append(client)
                    await client.start()
                    # an unknown setting: a top-level key of the raw record
                    assert (await client.call(contract.SETTINGS_GET.name))["last"] == 1
                    os.kill(pid, signal.SIGKILL)
                    await wait_exited(pid)
                    nursery.cancel_scope.cancel()
                client.close()
    finally:
        for c in clients:
            c.close()
    cycles_with_flushes = sum(1 for n in flushed.values() if n > 0)
    assert cycles_with_flushes >= CRASH_CYCLES // 2, (seed, cycles_with_flushes)
    # About a fifth of the kills land while a save's temp file exists (measured: 44/200);
    # none at all would mean this test no longer exercises a torn save.
    assert swept >= 1, (seed, swept)
