"""Issue 16 item 8 (store part): a deeply nested ``orca-data.json`` crash-looped the
store (an uncaught ``RecursionError``) without moving the file aside.

Now decoding a file is bounded (size, nesting depth) and a file past the bounds is like
any corrupt one: kept aside, reported in ``sys.stats``, and the store starts.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
import trio
from support.actors import running_store

from actors.store import journal_format as jf
from actors.store.bounded_json import MAX_STATE_DEPTH, decode_bounded, nesting_depth_exceeds
from actors.store.journal import journal_path
from orca.contracts import store as contract
from orca.contracts import sys as sys_contract
from orca.paths import resolve_paths


def deep(n: int, opener: bytes = b"[", closer: bytes = b"]") -> bytes:
    return opener * n + closer * n


HOSTILE = {
    "top-level-array": deep(100_000),
    "in-settings": b'{"settings":{"x":' + deep(5_000) + b"}}",
    "in-session": b'{"workspaceSession":{"tabGroups":' + deep(2_000, b'{"a":', b"}") + b"}}",
    "just-over-the-bound": b'{"settings":{"x":' + deep(MAX_STATE_DEPTH) + b"}}",
}


def state_file(home: Path) -> Path:
    return resolve_paths({"ORCA_HOME": str(home)}).state_file


@pytest.mark.parametrize("variant", sorted(HOSTILE))
async def test_deeply_nested_state_file_is_kept_aside_and_the_store_starts(
    tmp_path: Path, variant: str
) -> None:
    """The store starts on a fresh state, the file is aside byte for byte, and it says why."""
    primary = state_file(tmp_path)
    primary.parent.mkdir(parents=True)
    primary.write_bytes(HOSTILE[variant])
    with trio.fail_after(60):
        async with running_store(tmp_path) as store:
            load = (await store.call(sys_contract.STATS.name))["store"]["load"]
            assert load["source"] == "no_valid_copy", load
            assert (primary.parent / load["corruptKeptAs"]).read_bytes() == HOSTILE[variant]
            assert any("nests deeper" in p for p in load["problems"]), load
            # The store works: a mutation lands and is durable.
            await store.invoke(contract.REPO_ADD, contract.RepoAddArgs(path="/src/a"))
            assert [r.path for r in (await store.invoke(contract.REPO_LIST)).repos] == ["/src/a"]


async def test_hostile_journal_record_ends_the_journal_and_the_store_starts(tmp_path: Path) -> None:
    """A checksummed but deeply nested journal frame is not trusted: replay stops before it."""
    with trio.fail_after(60):
        async with running_store(tmp_path) as store:
            await store.invoke(contract.REPO_ADD, contract.RepoAddArgs(path="/src/a"))
            await store.stop()
        journal = journal_path(state_file(tmp_path))
        body = b'{"k":"put","seq":99,"ops":[[["settings","x"],' + deep(50_000) + b"]]}"
        frame = jf.FRAME_HEADER.pack(len(body), zlib.crc32(body)) + body
        journal.write_bytes(journal.read_bytes() + frame)
        async with running_store(tmp_path) as store:
            load = (await store.call(sys_contract.STATS.name))["store"]["load"]
            assert load["source"] == "primary" and load["journal"]["tornTail"] is True
            assert [r.path for r in (await store.invoke(contract.REPO_LIST)).repos] == ["/src/a"]


def test_a_normal_depth_passes_and_strings_do_not_count() -> None:
    """Brackets inside strings are text; nesting up to the bound decodes."""
    assert not nesting_depth_exceeds(b'{"a":"' + b"[" * 10_000 + b'"}')
    assert decode_bounded(deep(MAX_STATE_DEPTH - 1)) is not None
    with pytest.raises(ValueError, match="nests deeper"):
        decode_bounded(deep(MAX_STATE_DEPTH + 1))
    assert jf.read_journal(b"").records == ()
