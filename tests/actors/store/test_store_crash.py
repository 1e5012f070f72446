"""kill -9 of the store at random moments during acknowledged mutations (seed 02 §4, §13;
issue 16 #10: an acknowledged mutation is durable)."""

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
# acknowledged mutations, compactions and journal rotations, short enough that 200
# cycles fit in about a minute.
KILL_WINDOW_S = 0.06
STREAMS = 3  # concurrent writers per cycle: their appends share fsyncs (group commit)
FLUSH_EVERY = 5  # a session.flush now and then: kills also land mid-compaction
REPO_EVERY = 7  # a repo.add now and then: a structural change (backup ring) mid-stream
FLUSH = contract.SessionFlushArgs()


async def test_kill_9_never_loses_an_acknowledged_mutation(tmp_path: Path) -> None:
    """200 kill -9 cycles at random instants: every acknowledged mutation is there after
    each restart (journal replay), and nothing that was never sent."""
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    sent: dict[str, int] = {}  # key -> highest value sent (maybe applied, maybe not)
    acked: dict[str, int] = {}  # key -> highest value whose reply arrived
    acked_repos: set[str] = set()
    replayed = 0  # restarts that had to replay the journal
    swept = 0  # temp files left by a kill in the middle of a save, swept at the next start
    torn_tails = 0  # journals that ended in a partial frame (a kill mid-append)
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
                        load = stats["store"]["load"]
                        assert load["source"] in ({"primary"} if cycle else {"missing"}), (
                            seed,
                            cycle,
                            stats,
                        )
                        assert load["journal"]["problems"] == [], (seed, cycle, load)
                        replayed += load["journal"]["applied"] > 0
                        swept += load["sweptTempFiles"]
                        torn_tails += load["journal"]["tornTail"]
                        snapshot = await client.invoke(contract.STATE_SNAPSHOT)
                        from_builtins(PersistedState, snapshot.state)  # a valid state
                        stored = snapshot.state["settings"]
                        for key, n in acked.items():
                            assert stored.get(key, 0) >= n, (seed, cycle, key, n, stored.get(key))
                        for key, n in sent.items():
                            assert stored.get(key, 0) <= n, (seed, cycle, key, n)
                        paths = {r["path"] for r in snapshot.state["repos"]}
                        assert acked_repos <= paths, (seed, cycle, acked_repos - paths)

                        async def stream(key: str, client: StoreClient = client) -> None:
                            n = 0
                            while True:
                                n += 1
                                sent[key] = n
                                patch = contract.PatchArgs(patch={key: n})
                                await client.invoke(contract.SETTINGS_PATCH, patch)
                                acked[key] = n
                                if n % REPO_EVERY == 0:
                                    repo = f"/src/{key}-{n}"
                                    await client.invoke(
                                        contract.REPO_ADD, contract.RepoAddArgs(path=repo)
                                    )
                                    acked_repos.add(repo)
                                if n % FLUSH_EVERY == 0:
                                    reply = await client.invoke(contract.SESSION_FLUSH, FLUSH)
                                    assert reply.flushed is True

                        for s in range(STREAMS):
                            nursery.start_soon(stream, f"c{cycle}s{s}")
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
    cycles_with_acks = sum(1 for key, n in acked.items() if n > 0 and key.endswith("s0"))
    assert cycles_with_acks >= CRASH_CYCLES // 2, (seed, cycles_with_acks)
    # Most restarts replay acknowledged changes the primary did not have yet (measured:
    # 182/200); some kills land while a compaction's temp file exists or mid-append
    # (measured: 7 swept temp files). None would mean this test no longer exercises the
    # journal or a torn write.
    assert replayed >= CRASH_CYCLES // 4, (seed, replayed)
    assert swept + torn_tails >= 1, (seed, swept, torn_tails)
