"""The store actor as a real process: ops, events, flush on stop, recovery, disk full."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from support.actors import actor_env as store_env
from support.actors import running_store

from orca.contracts import store as contract
from orca.contracts import sys as sys_contract
from orca.model.layout import iter_terminal_leaf_ids
from orca.paths import resolve_paths
from orca.wire.errors import BadRequest, Conflict, Unavailable

U1, U2 = str(uuid.UUID(int=1)), str(uuid.UUID(int=2))


def state_file(home: Path) -> Path:
    return resolve_paths({"ORCA_HOME": str(home)}).state_file


async def test_repo_added_survives_a_graceful_restart(tmp_path: Path) -> None:
    """repo.add mints an id; SIGTERM flushes it; the next process serves it back."""
    with trio.fail_after(60):
        async with running_store(tmp_path) as store:
            repo = await store.invoke(contract.REPO_ADD, contract.RepoAddArgs(path="/src/app"))
            assert (repo.path, repo.display_name) == ("/src/app", "app")
            with pytest.raises(Conflict):
                await store.invoke(contract.REPO_ADD, contract.RepoAddArgs(path="/src/app"))
            with pytest.raises(BadRequest):
                await store.invoke(contract.REPO_ADD, contract.RepoAddArgs(path="relative"))
            with pytest.raises(BadRequest):  # the contract refuses an empty path
                await store.call(contract.REPO_ADD.name, {"path": ""})
            assert await store.stop() == 0
        on_disk = json.loads(state_file(tmp_path).read_bytes())
        assert [r["id"] for r in on_disk["repos"]] == [repo.id]
        async with running_store(tmp_path) as store:
            listed = await store.invoke(contract.REPO_LIST)
            assert listed == contract.RepoList(repos=[repo])
            stats = await store.call(sys_contract.STATS.name)
            assert stats["store"]["load"]["source"] == "primary"
            assert stats["store"]["save"]["writes"] == 0  # canonical file: nothing rewritten


async def test_truncated_primary_loads_from_backup_and_says_so(tmp_path: Path) -> None:
    """A torn orca-data.json is kept aside and the newest backup is served (seed 02 §13)."""
    with trio.fail_after(60):
        async with running_store(tmp_path) as store:
            await store.invoke(contract.REPO_ADD, contract.RepoAddArgs(path="/src/a"))
            await store.invoke(contract.SESSION_FLUSH, contract.SessionFlushArgs())
            await store.stop()
        primary = state_file(tmp_path)
        raw = primary.read_bytes()
        primary.write_bytes(raw[: len(raw) // 3])
        async with running_store(tmp_path) as store:
            load = (await store.call(sys_contract.STATS.name))["store"]["load"]
            assert load["source"] == "backup" and load["loadedFrom"] == "orca-data.json.bak.0"
            assert (primary.parent / load["corruptKeptAs"]).read_bytes() == raw[: len(raw) // 3]
            listed = await store.invoke(contract.REPO_LIST)
            assert [r.path for r in listed.repos] == ["/src/a"]
            flushed = await store.invoke(contract.SESSION_FLUSH, contract.SessionFlushArgs())
            assert flushed == contract.SessionFlushed(flushed=True)
            assert b"loaded" in store.log.text and b"from backup" in store.log.text
        assert json.loads(primary.read_bytes())["repos"][0]["path"] == "/src/a"


async def test_garbage_primary_loads_from_backup(tmp_path: Path) -> None:
    """Bytes that are not JSON at all are treated like a torn file."""
    with trio.fail_after(60):
        async with running_store(tmp_path) as store:
            await store.invoke(contract.SETTINGS_PATCH, contract.PatchArgs(patch={"marker": 42}))
            await store.invoke(contract.SESSION_FLUSH, contract.SessionFlushArgs())
            await store.stop()
        state_file(tmp_path).write_bytes(b"\x00\x01garbage\xff")
        async with running_store(tmp_path) as store:
            # An unknown setting travels as a top-level key of the record (raw reply).
            assert (await store.call(contract.SETTINGS_GET.name))["marker"] == 42
            stats = await store.call(sys_contract.STATS.name)
            assert stats["store"]["load"]["source"] == "backup"


async def test_stale_session_after_retirement_and_rename_alias_over_rpc(tmp_path: Path) -> None:
    """End to end: a retired pane stays retired; a renamed worktree resolves as an alias."""
    layout = {
        "t": {
            "root": {
                "type": "split",
                "direction": "vertical",
                "first": {"type": "leaf", "leafId": U1},
                "second": {"type": "leaf", "leafId": U2},
            }
        }
    }
    with trio.fail_after(60):
        async with running_store(tmp_path) as store:
            write = contract.SessionSetArgs(session={"terminalLayoutsByTabId": layout}, revision=0)
            written = await store.invoke(contract.SESSION_SET, write)
            assert written == contract.SessionWritten(applied="full", changed=True, revision=0)
            with pytest.raises(BadRequest):  # a tab id with ':' makes the pane key ambiguous
                await store.call(contract.SESSION_RETIRE_PANE.name, {"tabId": "t:x", "leafId": U2})
            retire = contract.RetirePaneArgs(tab_id="t", leaf_id=U2)
            retired = await store.invoke(contract.SESSION_RETIRE_PANE, retire)
            assert retired == contract.PaneRetiredResult(revision=1, durable=True)
            assert await store.call(
                contract.SESSION_RETIRE_PANE.name, {"tabId": "t", "leafId": U2}
            ) == {
                "revision": 2,
                "durable": True,
            }
            reply = await store.invoke(contract.SESSION_SET, write)
            assert reply.applied == "metadata_only"
            view = await store.invoke(contract.SESSION_GET, contract.SessionGetArgs())
            assert (view.host_id, view.revision) == ("local", 2)
            root = view.session.terminal_layouts_by_tab_id["t"].root
            assert root is not None and list(iter_terminal_leaf_ids(root)) == [U1]
            raw_view = await store.call(contract.SESSION_GET.name)
            assert raw_view["session"]["terminalLayoutsByTabId"]["t"]["root"] == {
                "type": "leaf",
                "leafId": U1,
            }
            since = await store.invoke(
                contract.SESSION_RETIRED_SINCE, contract.RetiredSinceArgs(revision=1)
            )
            assert (since.host_id, since.revision, since.truncated) == ("local", 2, False)
            assert [(p.tab_id, p.leaf_id, p.pane_key, p.revision) for p in since.panes] == [
                ("t", U2, f"t:{U2}", 2)
            ]
            assert since.panes[0].retired_at_ms > 0
            await store.invoke(
                contract.WORKTREE_META_PATCH,
                contract.MetaPatchArgs(worktree_id="r::/w/old", patch={}),
            )
            renamed = await store.invoke(
                contract.WORKTREE_MIGRATE_IDENTITY,
                contract.MigrateIdentityArgs(old_id="r::/w/old", new_id="r::/w/new"),
            )
            assert renamed == contract.IdentityMigrated(
                old_id="r::/w/old", new_id="r::/w/new", durable=True
            )
            resolved = await store.invoke(
                contract.IDENTITY_RESOLVE, contract.WorktreeIdArgs(worktree_id="r::/w/old")
            )
            assert resolved == contract.IdentityResolved(status="alias", worktree_id="r::/w/new")
            assert await store.call(
                contract.IDENTITY_RESOLVE.name, {"worktreeId": "r::/w/gone"}
            ) == {"status": "unknown", "worktreeId": None}
        # Both were flushed before their replies: the file has them without a stop flush.
        on_disk = json.loads(state_file(tmp_path).read_bytes())
        assert on_disk["topologyRevisionByHostId"] == {"local": 2}
        assert on_disk["worktreeMeta"]["r::/w/new"]["priorWorktreeIds"] == ["r::/w/old"]


async def test_second_store_on_the_same_home_refuses_to_start(tmp_path: Path) -> None:
    """Only one process may be the writer of orca-data.json."""
    with trio.fail_after(60):
        async with running_store(tmp_path):
            result = await trio.run_process(
                [sys.executable, "-m", "actors.store"],
                env=store_env(tmp_path),
                capture_stderr=True,
                check=False,
            )
            assert result.returncode != 0
            assert b"held by another store process" in result.stderr


@pytest.fixture
def tiny_data_dir(tmp_path: Path) -> Iterator[Path]:
    """ORCA_HOME whose data dir is a 256 KiB tmpfs (real ENOSPC), when mounting is allowed."""
    data = resolve_paths({"ORCA_HOME": str(tmp_path)}).data_dir
    data.mkdir(parents=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(data)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {mounted.stderr.decode().strip()}")
    try:
        yield tmp_path
    finally:
        subprocess.run(["umount", "-l", str(data)], check=True)


async def test_disk_full_keeps_the_old_file_and_reports(tiny_data_dir: Path) -> None:
    """ENOSPC: the change is refused as not durable, the last good file stays intact,
    the error is in sys.stats; once space is back the next change and save land."""
    no_session = contract.SessionFlushArgs()
    with trio.fail_after(60):
        async with running_store(tiny_data_dir) as store:
            await store.invoke(contract.REPO_ADD, contract.RepoAddArgs(path="/src/a"))
            assert (await store.invoke(contract.SESSION_FLUSH, no_session)).flushed is True
            good = state_file(tiny_data_dir).read_bytes()
            huge = contract.PatchArgs(patch={"huge": "x" * 300_000})
            with pytest.raises(Unavailable, match="could not be written to disk"):
                await store.invoke(contract.SETTINGS_PATCH, huge)  # the journal: ENOSPC
            journal = (await store.call(sys_contract.STATS.name))["store"]["journal"]
            assert journal["failures"] == 1 and journal["broken"] is False
            assert (await store.invoke(contract.SESSION_FLUSH, no_session)).flushed is False
            assert state_file(tiny_data_dir).read_bytes() == good
            save = (await store.call(sys_contract.STATS.name))["store"]["save"]
            assert save["lastError"]["errno"] == "ENOSPC"
            assert b"keeping the last good file" in store.log.text
            # Space comes back (the setting shrinks): the retry lands.
            small = contract.PatchArgs(patch={"huge": "small"})
            await store.invoke(contract.SETTINGS_PATCH, small)
            assert (await store.invoke(contract.SESSION_FLUSH, no_session)).flushed is True
            assert json.loads(state_file(tiny_data_dir).read_bytes())["settings"]["huge"] == "small"


async def test_a_mirror_follows_the_store_by_events_after_one_snapshot(tmp_path: Path) -> None:
    """Events carry epoch/seq and state.snapshot their position: the Clone pattern works."""
    from orca.actor import Mirror
    from orca.wire.envelope import Event

    def load(snap: contract.StateSnapshot) -> frozenset[str]:
        return frozenset(r["path"] for r in snap.state["repos"])

    def apply(paths: frozenset[str], event: Event, typed: Any) -> frozenset[str]:
        if isinstance(typed, contract.RepoAdded):
            return paths | {typed.repo.path}
        return paths

    pub = resolve_paths({"ORCA_HOME": str(tmp_path)}).ipc_endpoint("store", "pub")
    with trio.fail_after(60):
        async with running_store(tmp_path) as store:
            await store.invoke(contract.REPO_ADD, contract.RepoAddArgs(path="/before"))
            mirror = Mirror(
                client=store.client,
                pub_endpoint=pub,
                snapshot=contract.STATE_SNAPSHOT,
                events=[contract.REPO_ADDED],
                load=load,
                apply=apply,
                consumer="test<-store",
            )
            async with trio.open_nursery() as nursery:
                await nursery.start(mirror.run)
                # Once /warm shows up (by event, or by a resync that a received event
                # or heartbeat caused) the subscription is live: nothing more is lost.
                await store.invoke(contract.REPO_ADD, contract.RepoAddArgs(path="/warm"))
                await mirror.wait_until(lambda m: m.state is not None and "/warm" in m.state)
                applied, snapshots = mirror.applied, mirror.snapshots
                for i in range(5):
                    await store.invoke(contract.REPO_ADD, contract.RepoAddArgs(path=f"/after{i}"))
                await mirror.wait_until(lambda m: m.state is not None and len(m.state) == 7)
                nursery.cancel_scope.cancel()
            mirror.close()
            assert (mirror.applied - applied, mirror.snapshots) == (5, snapshots)


async def test_worktree_meta_gc_drops_only_dead_idle_local_entries(tmp_path: Path) -> None:
    """GC (at start and on request) removes a vanished, long-idle local checkout's notes."""
    alive = tmp_path / "alive"
    alive.mkdir()
    doc = {
        "repos": [{"id": "r", "path": str(tmp_path), "displayName": "r"}],
        "worktreeMeta": {
            f"r::{tmp_path / 'vanished'}": {"lastActivityAt": 1},
            f"r::{alive}": {"lastActivityAt": 1},
            f"r::{tmp_path / 'vanished-recently'}": {"lastActivityAt": 4_000_000_000_000},
        },
    }
    primary = state_file(tmp_path)
    primary.parent.mkdir(parents=True)
    primary.write_text(json.dumps(doc))
    with trio.fail_after(60):
        async with running_store(tmp_path) as store:
            kept = sorted([f"r::{alive}", f"r::{tmp_path / 'vanished-recently'}"])
            gc = await store.invoke(contract.WORKTREE_META_GC)
            # The start-up pass runs in the background: it or this one removed the entry.
            assert gc.removed in ([], [f"r::{tmp_path / 'vanished'}"])
            metas = (await store.invoke(contract.WORKTREE_META_LIST)).worktree_meta
            assert sorted(metas) == kept
            one = await store.invoke(
                contract.WORKTREE_META_GET, contract.WorktreeIdArgs(worktree_id=f"r::{alive}")
            )
            assert one == metas[f"r::{alive}"] and one.last_activity_at == 1


async def test_a_removed_worktrees_session_rows_go_with_it_over_rpc(tmp_path: Path) -> None:
    """worktreeMeta.remove (what ``orca worktree rm`` sends) drops the worktree's session
    rows, so identity.resolve answers unknown, also after a restart (review 01-15)."""
    gone, kept = "r::/w/gone", "r::/w/kept"
    tabs = {
        w: [{"id": t, "entityId": t, "groupId": "g", "worktreeId": w, "contentType": "terminal"}]
        for w, t in ((gone, "t-gone"), (kept, "t-kept"))
    }
    resolve = contract.IDENTITY_RESOLVE.name
    with trio.fail_after(60):
        async with running_store(tmp_path) as store:
            write = contract.SessionSetArgs(session={"unifiedTabs": tabs})
            await store.invoke(contract.SESSION_SET, write)
            patch = contract.MetaPatchArgs(worktree_id=gone, patch={})
            await store.invoke(contract.WORKTREE_META_PATCH, patch)
            assert (await store.call(resolve, {"worktreeId": gone}))["status"] == "current"
            remove = contract.WorktreeIdArgs(worktree_id=gone)
            removed = await store.invoke(contract.WORKTREE_META_REMOVE, remove)
            assert removed == contract.MetasRemoved(removed=[gone])
            assert (await store.call(resolve, {"worktreeId": gone}))["status"] == "unknown"
            assert (await store.call(resolve, {"worktreeId": kept}))["status"] == "current"
            assert await store.stop() == 0
        async with running_store(tmp_path) as store:
            view = await store.invoke(contract.SESSION_GET, contract.SessionGetArgs())
            assert list(view.session.unified_tabs or {}) == [kept]
            assert (await store.call(resolve, {"worktreeId": gone}))["status"] == "unknown"
