"""gitwatch's mirror of store: folding typed store events into the view.

The pure halves are fed what the mirror feeds them: an envelope and its data decoded by
store's contract. A malformed store event never reaches them: the shared decoder logs
it and drops it, and the mirror keeps following (the last tests run gitwatch's own
mirror against an in-process publisher that speaks store's contract: ``StandInStore``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from support.standin_store import StandInStore

from actors.gitwatch import storeview
from actors.gitwatch.errors import StoreCatchingUp
from actors.gitwatch.storeview import (
    FOLLOWED,
    MIRROR_CONSUMER,
    RpcStorePort,
    StoreView,
    apply_store_event,
    load_store_view,
    store_mirror,
)
from orca.actor import open_rpc_client
from orca.contracts import decode_event_data, specs_by_type, store
from orca.model.types_repo import Repo
from orca.model.worktree import WorktreeMeta
from orca.wire.envelope import Event

SPECS = specs_by_type(FOLLOWED)

SNAPSHOT = store.StateSnapshot(
    epoch="e",
    seq=0,
    revision=1,
    state={
        "repos": [{"id": "r1", "path": "/src/a", "displayName": "a"}],
        "settings": {"workspaceDir": "/ws", "nestWorkspaces": False},
        "worktreeMeta": {"r1::/ws/x": {"displayName": "X"}},
    },
)


def _event(kind: str, data: Any, seq: int = 1) -> Event:
    return Event(v=1, src="store", epoch="e", seq=seq, type=kind, data=data)


def _fold(view: StoreView, kind: str, data: Any) -> StoreView:
    """What the mirror does with one store event: decode it by the contract, then apply."""
    event = _event(kind, data)
    typed = decode_event_data(event, SPECS, consumer="test")
    return view if typed is None else apply_store_event(view, event, typed)


def test_snapshot_loads_repos_settings_and_meta() -> None:
    """The view holds the repos by id, the settings and the meta table."""
    view = load_store_view(SNAPSHOT)
    assert view.repos["r1"].path == "/src/a"
    assert (view.settings.workspace_dir, view.settings.nest_workspaces) == ("/ws", False)
    assert view.meta["r1::/ws/x"].display_name == "X"


def test_repo_events_add_update_and_remove() -> None:
    """repo.added/updated replace by id; repo.removed drops it."""
    view = load_store_view(SNAPSHOT)
    view = _fold(view, "repo.added", {"repo": {"id": "r2", "path": "/b", "displayName": "b"}})
    view = _fold(view, "repo.updated", {"repo": {"id": "r1", "path": "/moved", "displayName": "a"}})
    assert {k: r.path for k, r in view.repos.items()} == {"r1": "/moved", "r2": "/b"}
    view = _fold(view, "repo.removed", {"id": "r1", "worktreeIds": []})
    assert list(view.repos) == ["r2"]


def test_settings_event_replaces_the_settings() -> None:
    """settings.changed carries the whole settings record."""
    view = _fold(
        load_store_view(SNAPSHOT), "settings.changed", {"settings": {"workspaceDir": "/w2"}}
    )
    assert view.settings.workspace_dir == "/w2"


def test_renamed_event_moves_meta_and_records_the_old_id() -> None:
    """worktree.renamed re-keys the meta and adds the old id to priorWorktreeIds (§4.3)."""
    view = load_store_view(SNAPSHOT)
    view = _fold(view, "worktree.renamed", {"oldId": "r1::/ws/x", "newId": "r1::/ws/y"})
    assert "r1::/ws/x" not in view.meta
    assert view.meta["r1::/ws/y"].display_name == "X"
    assert view.meta["r1::/ws/y"].prior_worktree_ids == ("r1::/ws/x",)


def test_meta_events_set_and_remove() -> None:
    """worktreeMeta.changed sets one entry; worktreeMeta.removed drops the listed ids."""
    view = StoreView()
    view = _fold(view, "worktreeMeta.changed", {"worktreeId": "r::/p", "meta": {"comment": "c"}})
    assert view.meta["r::/p"].comment == "c"
    view = _fold(view, "worktreeMeta.removed", {"worktreeIds": ["r::/p"]})
    assert view.meta == {}


def test_events_gitwatch_does_not_follow_leave_the_view_alone() -> None:
    """A store event outside FOLLOWED is not decoded at all; a typed one of no interest
    to the view (none today) would fall through unchanged."""
    view = load_store_view(SNAPSHOT)
    assert _fold(view, "session.changed", {"hostId": "local"}) is view
    assert apply_store_event(view, _event("x", {}), object()) is view


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("worktree.renamed", {"newId": "r1::/ws/y"}),  # oldId missing
        ("worktree.renamed", {"oldId": None, "newId": "r1::/ws/y"}),
        ("worktree.renamed", {"oldId": "", "newId": "r1::/ws/y"}),
        ("repo.added", None),
        ("repo.added", {"repo": "not a record"}),
        ("worktreeMeta.changed", {"worktreeId": "r1::/ws/x"}),  # meta missing
        ("worktreeMeta.removed", {"worktreeIds": "r1::/ws/x"}),  # not a list
    ],
)
def test_malformed_store_events_are_logged_and_change_nothing(
    kind: str, data: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A malformed event is logged once and dropped: no meta is ever filed under "None"."""
    view = load_store_view(SNAPSHOT)
    assert _fold(view, kind, data) is view
    assert "None" not in view.meta
    warnings = [r for r in caplog.records if f"malformed {kind}" in r.getMessage()]
    assert len(warnings) == 1


async def test_store_mirror_logs_a_malformed_event_once_and_keeps_following(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """gitwatch's own mirror: a worktree.renamed without oldId is logged once, counted and
    skipped (its seq still counts: no resnapshot); the events after it apply."""
    stand_in = StandInStore(tmp_path)
    with trio.fail_after(10):
        async with (
            stand_in.running(),
            open_rpc_client(stand_in.rpc_endpoint) as client,
            trio.open_nursery() as nursery,
        ):
            mirror = store_mirror(client, stand_in.pub_endpoint)
            await nursery.start(mirror.run)
            meta = WorktreeMeta(display_name="kept")
            stand_in.events.emit(store.WorktreeMetaChanged(worktree_id="r1::/ws/x", meta=meta))
            await mirror.wait_until(lambda m: m.state is not None and "r1::/ws/x" in m.state.meta)
            stand_in.events.publish(store.WORKTREE_RENAMED.type, {"newId": "r1::/ws/y"})
            repo = Repo(id="r1", path="/src/a", display_name="a")
            stand_in.events.emit(store.RepoAdded(repo=repo))
            await mirror.wait_until(lambda m: m.state is not None and "r1" in m.state.repos)
            assert mirror.state is not None
            assert set(mirror.state.meta) == {"r1::/ws/x"}  # nothing filed under "None"
            assert mirror.decode_stats.malformed == 1 and mirror.snapshots == 1
            nursery.cancel_scope.cancel()
        mirror.close()
    warnings = [r for r in caplog.records if "malformed worktree.renamed" in r.getMessage()]
    assert len(warnings) == 1 and MIRROR_CONSUMER in warnings[0].getMessage()
    assert "oldId" in warnings[0].getMessage()


async def test_a_reader_never_gets_the_copy_a_restarted_store_is_replacing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While gitwatch's mirror re-snapshots a restarted store, ``whole_view`` (and every
    look-up through it) waits: past ``STORE_CATCH_UP_S`` it answers StoreCatchingUp, not
    the old copy (which lacks the worktree made just before the restart); once the new
    snapshot loads it answers that."""
    monkeypatch.setattr(storeview, "STORE_CATCH_UP_S", 0.3)
    made = "r1::/ws/made-just-before"
    before = {**SNAPSHOT.state, "worktreeMeta": {}}
    after = {**SNAPSHOT.state, "worktreeMeta": {made: {"displayName": "made"}}}
    with trio.fail_after(10):
        async with open_rpc_client(f"ipc://{tmp_path}/store.rpc") as client:
            async with trio.open_nursery() as nursery:
                mirror = store_mirror(client, f"ipc://{tmp_path}/store.pub")
                port = RpcStorePort(client, mirror)
                async with StandInStore(tmp_path, before).running():
                    await nursery.start(mirror.run)
                    assert made not in (await port.whole_view()).meta
                release = trio.Event()
                restarted = StandInStore(tmp_path, after, hold=release)
                async with restarted.running():
                    await restarted.snapshot_asked.wait()
                    with pytest.raises(StoreCatchingUp, match="store is catching up"):
                        await port.whole_view()
                    with pytest.raises(StoreCatchingUp):
                        await port.lookup_repo("r1")
                    answers: list[StoreView] = []

                    async def read() -> None:
                        answers.append(await port.whole_view())

                    nursery.start_soon(read)
                    await trio.testing.wait_all_tasks_blocked()
                    assert answers == []
                    release.set()
                    await mirror.wait_whole()
                    await trio.testing.wait_all_tasks_blocked()
                    assert [made in view.meta for view in answers] == [True]
                nursery.cancel_scope.cancel()
            mirror.close()
