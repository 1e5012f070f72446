"""Issue 16 item 10: the CLI printed success, then a store that died within its 1-5 s
debounce lost the mutation (after SIGSTOP, a crash).

Now a mutation replies only once it is in the fsync'd journal: ``kill -9`` right after
the CLI returns loses nothing. (The 200-kill loop at random instants is
``tests/actors/store/test_store_crash.py``.)
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import trio
from support.actors import actor_env, running_store, wait_exited

from orca.contracts import store as contract
from orca.contracts import sys as sys_contract


async def orca(home: Path, *argv: str) -> tuple[int, str, str]:
    env = {**actor_env(home), "COLUMNS": "250"}
    result = await trio.run_process(
        [sys.executable, "-m", "orca.cli.main", *argv],
        env=env,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


async def test_repo_added_by_the_cli_survives_kill_9_right_after_it_printed_success(
    tmp_path: Path,
) -> None:
    """`orca repo add` exits 0, the store is SIGSTOPped then killed at once: the repo is back."""
    home = tmp_path / "home"
    checkouts = [tmp_path / f"app{i}" for i in range(3)]
    for checkout in checkouts:
        (checkout / ".git").mkdir(parents=True)
    with trio.fail_after(60):
        async with running_store(home) as store:
            # The user has been running a while: the store saved its first state.
            await store.invoke(contract.SESSION_FLUSH, contract.SessionFlushArgs())
            for checkout in checkouts:
                code, out, err = await orca(home, "repo", "add", str(checkout))
                assert code == 0 and "added" in out, (out, err)
            os.kill(store.pid, signal.SIGSTOP)  # the "after SIGSTOP"...
            os.kill(store.pid, signal.SIGKILL)  # ...then a crash, inside the debounce
            await wait_exited(store.pid)
        async with running_store(home) as store:
            listed = await store.invoke(contract.REPO_LIST)
            assert sorted(r.path for r in listed.repos) == sorted(map(str, checkouts))
            load = (await store.call(sys_contract.STATS.name))["store"]["load"]
            assert load["journal"]["applied"] >= 1 and load["journal"]["problems"] == []


async def test_every_acknowledged_setting_of_concurrent_writers_survives_kill_9(
    tmp_path: Path,
) -> None:
    """40 concurrent patches, each acknowledged, then kill -9: all 40 are on disk."""
    with trio.fail_after(60):
        async with running_store(tmp_path) as store:
            async with trio.open_nursery() as nursery:
                for i in range(40):
                    patch = contract.PatchArgs(patch={f"k{i}": i})
                    nursery.start_soon(store.invoke, contract.SETTINGS_PATCH, patch)
            journal = (await store.call(sys_contract.STATS.name))["store"]["journal"]
            assert journal["appended"] >= 40 and journal["failures"] == 0
            os.kill(store.pid, signal.SIGKILL)
            await wait_exited(store.pid)
        async with running_store(tmp_path) as store:
            settings = await store.call(contract.SETTINGS_GET.name)
            assert all(settings[f"k{i}"] == i for i in range(40)), settings
