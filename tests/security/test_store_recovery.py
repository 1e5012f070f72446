"""Issue 16 item 9: backups rotated at most hourly, and in 9/9 damaged-primary variants
recovery loaded the empty first-start backup: every repo lost.

Now every structural change (a repo added, ...) makes the next compaction write the
backup ring, the journal is overlaid on the backup recovered from, and the newest backup
that parses always wins over an older one.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
import trio
from support.actors import running_store, wait_exited

from actors.store.core import new_uuid
from actors.store.durable_file import DurableFile
from actors.store.load import fresh_state
from actors.store.startup import load_store
from orca.contracts import store as contract
from orca.contracts import sys as sys_contract
from orca.model.codec import encode_json
from orca.model.state import PersistedState
from orca.paths import resolve_paths

DAMAGES: dict[str, Callable[[bytes], bytes]] = {
    "truncated": lambda raw: raw[: len(raw) // 2],
    "empty": lambda raw: b"",
    "garbage": lambda raw: b"\x00\x01garbage\xff" * 10,
    "array": lambda raw: b"[]",
    "null": lambda raw: b"null",
    "nested": lambda raw: b"[" * 100_000 + b"]" * 100_000,
    "bad-utf8": lambda raw: raw.replace(b'"repos"', b'"rep\xfe\xffos"', 1),
    "wrong-type": lambda raw: b'{"repos": 5}',
    "trailing": lambda raw: raw + b"}}garbage",
}


def state_file(home: Path) -> Path:
    return resolve_paths({"ORCA_HOME": str(home)}).state_file


@pytest.mark.parametrize("damage", sorted(DAMAGES))
async def test_damaged_primary_recovers_every_repo_from_the_newest_backup_and_journal(
    tmp_path: Path, damage: str
) -> None:
    """Repos added (two compacted, one only journaled), kill -9, primary damaged: all back."""
    with trio.fail_after(60):
        async with running_store(tmp_path) as store:
            # The user has been running a while: the store saved its first (empty) state.
            await store.invoke(contract.SESSION_FLUSH, contract.SessionFlushArgs())
            for path in ("/src/a", "/src/b"):
                await store.invoke(contract.REPO_ADD, contract.RepoAddArgs(path=path))
            await store.invoke(contract.SETTINGS_PATCH, contract.PatchArgs(patch={"m": 1}))
            await store.invoke(contract.SESSION_FLUSH, contract.SessionFlushArgs())
            await store.invoke(contract.REPO_ADD, contract.RepoAddArgs(path="/src/c"))
            os.kill(store.pid, signal.SIGKILL)
            await wait_exited(store.pid)
        primary = state_file(tmp_path)
        damaged = DAMAGES[damage](primary.read_bytes())
        primary.write_bytes(damaged)
        async with running_store(tmp_path) as store:
            listed = await store.invoke(contract.REPO_LIST)
            assert sorted(r.path for r in listed.repos) == ["/src/a", "/src/b", "/src/c"]
            assert (await store.call(contract.SETTINGS_GET.name))["m"] == 1
            load = (await store.call(sys_contract.STATS.name))["store"]["load"]
            assert load["source"] == "backup" and load["loadedFrom"] == "orca-data.json.bak.0"
            assert (primary.parent / load["corruptKeptAs"]).read_bytes() == damaged
            assert load["journal"]["applied"] >= 1


async def test_a_stop_writes_the_backup_ring(tmp_path: Path) -> None:
    """Settings changed (not structural), graceful stop, primary damaged: the setting is back."""
    with trio.fail_after(60):
        async with running_store(tmp_path) as store:
            await store.invoke(contract.SESSION_FLUSH, contract.SessionFlushArgs())
            await store.invoke(contract.SETTINGS_PATCH, contract.PatchArgs(patch={"m": 7}))
            await store.stop()
        state_file(tmp_path).write_bytes(b"{")
        async with running_store(tmp_path) as store:
            assert (await store.call(contract.SETTINGS_GET.name))["m"] == 7


def test_the_newest_backup_that_parses_wins_over_an_older_one(tmp_path: Path) -> None:
    """Primary and bak.0 damaged, bak.1 and bak.2 good: bak.1 (newer) is loaded, not bak.2."""
    path = tmp_path / "orca-data.json"
    durable = DurableFile(path)
    base = fresh_state(home_dir="/h")
    older = encode_json(PersistedState(schema_version=1, settings=base.settings, extra={"v": 2}))
    newer = encode_json(PersistedState(schema_version=1, settings=base.settings, extra={"v": 1}))
    path.write_bytes(b"\xff")
    durable.backup_path(0).write_bytes(b"[" * 5000)
    durable.backup_path(1).write_bytes(newer)
    durable.backup_path(2).write_bytes(older)
    loaded = load_store(path, "/h", new_uuid)
    assert loaded.report.loaded_from == "orca-data.json.bak.1"
    assert loaded.core.state.extra["v"] == 1
