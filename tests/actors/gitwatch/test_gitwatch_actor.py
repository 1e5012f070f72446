"""The gitwatch actor process with a real store process and real git repositories."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio
from gitwatch_harness import Actors, EventTap, running_actors

from orca.wire.envelope import Event
from orca.wire.errors import BadRequest, Conflict, NotFound

# Covers actor start-up, the store mirror's first snapshot and git work on a loaded box.
TEST_TIMEOUT_S = 40


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "proj"
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    (path / "README").write_text("hi\n")
    _git(path, "add", "README")
    _git(path, "commit", "-q", "-m", "initial")
    return path


@pytest.fixture
async def actors(tmp_path: Path, repo: Path) -> AsyncIterator[tuple[Actors, str]]:
    """store + gitwatch running, the repo imported, the workspace root set."""
    async with running_actors(tmp_path / "home") as running:
        root = tmp_path / "workspaces"
        await running.store.call("settings.patch", {"patch": {"workspaceDir": str(root)}})
        added = await running.store.call("repo.add", {"path": str(repo), "displayName": "proj"})
        repo_id = added["id"]
        await running.events.next_matching(
            lambda e: e.type == "worktree.added" and e.data["git"]["path"] == str(repo)
        )
        yield running, repo_id


def _at(kind: str, path: Path) -> Any:
    def match(event: Event) -> bool:
        data = event.data
        return event.type == kind and (data.get("git") or data).get("path") == str(path)

    return match


async def test_repo_imported_into_store_is_listed(actors: tuple[Actors, str], repo: Path) -> None:
    """A repo added to store appears in worktree.list as its main worktree (seed 01 §5.2)."""
    running, repo_id = actors
    with trio.fail_after(TEST_TIMEOUT_S):
        listing = await running.git("worktree.list", {"repoId": repo_id})
    [row] = listing["worktrees"]
    assert row["id"] == f"{repo_id}::{repo}" and row["isMainWorktree"] is True
    assert row["branch"] == "refs/heads/main" and row["displayName"] == "main"
    assert row["ownership"] == "external" and row["visible"] is True
    assert listing["unavailableRepos"] == []


async def test_external_worktree_appears_and_disappears(
    actors: tuple[Actors, str], repo: Path, tmp_path: Path
) -> None:
    """`git worktree add/remove` by hand shows up in events and the listing, no registration."""
    running, _ = actors
    wt = tmp_path / "by-hand"
    with trio.fail_after(TEST_TIMEOUT_S):
        await trio.to_thread.run_sync(_git, repo, "worktree", "add", "-q", str(wt), "-b", "hand")
        await running.events.next_matching(_at("worktree.added", wt))
        paths = [r["path"] for r in (await running.git("worktree.list"))["worktrees"]]
        assert str(wt) in paths
        await trio.to_thread.run_sync(_git, repo, "worktree", "remove", str(wt))
        await running.events.next_matching(_at("worktree.removed", wt))
        paths = [r["path"] for r in (await running.git("worktree.list"))["worktrees"]]
        assert str(wt) not in paths


async def test_create_then_rename_keeps_meta(actors: tuple[Actors, str], tmp_path: Path) -> None:
    """After rename the meta (name, creation evidence) lives under the new id, old id recorded (§4.3)."""
    running, repo_id = actors
    with trio.fail_after(TEST_TIMEOUT_S):
        created = await running.git("worktree.create", {"repoId": repo_id, "name": "task one"})
        old_id = created["worktreeId"]
        await running.store.call(
            "worktreeMeta.patch", {"worktreeId": old_id, "patch": {"displayName": "My task"}}
        )
        renamed = await running.git(
            "worktree.rename", {"worktreeId": old_id, "newName": "task-two"}
        )
        new_id = renamed["newWorktreeId"]
        event = await running.events.next_matching(lambda e: e.type == "worktree.renamed")
        assert (event.data["oldWorktreeId"], event.data["newWorktreeId"]) == (old_id, new_id)
        assert event.data["identityMigrated"] is True
        meta = await running.store.call("worktreeMeta.get", {"worktreeId": new_id})
        assert meta["displayName"] == "My task" and meta["orcaCreatedAt"] > 0
        assert old_id in meta["priorWorktreeIds"]
        with pytest.raises(NotFound):
            await running.store.call("worktreeMeta.get", {"worktreeId": old_id})

        def listed(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
            return next((r for r in rows if r["id"] == new_id), None)

        row = listed((await running.git("worktree.list"))["worktrees"])
        assert row is not None and row["displayName"] == "My task"
        assert row["ownership"] == "orca-managed"
        assert row["path"] == str(tmp_path / "workspaces" / "proj" / "task-two")


async def test_recreated_path_does_not_inherit_old_meta(actors: tuple[Actors, str]) -> None:
    """Remove drops the meta; a new worktree at the same path starts with fresh notes (§4.4)."""
    running, repo_id = actors
    with trio.fail_after(TEST_TIMEOUT_S):
        first = await running.git("worktree.create", {"repoId": repo_id, "name": "reuse"})
        await running.store.call(
            "worktreeMeta.patch", {"worktreeId": first["worktreeId"], "patch": {"comment": "old"}}
        )
        first_meta = await running.store.call(
            "worktreeMeta.get", {"worktreeId": first["worktreeId"]}
        )
        await running.git("worktree.remove", {"worktreeId": first["worktreeId"]})
        with pytest.raises(NotFound):
            await running.store.call("worktreeMeta.get", {"worktreeId": first["worktreeId"]})
        second = await running.git("worktree.create", {"repoId": repo_id, "name": "reuse"})
        assert second["worktreeId"] == first["worktreeId"]
        meta = await running.store.call("worktreeMeta.get", {"worktreeId": second["worktreeId"]})
        assert meta.get("comment", "") == "" and meta["instanceId"] != first_meta["instanceId"]


async def test_repo_removed_from_store_drops_its_rows(
    actors: tuple[Actors, str], repo: Path
) -> None:
    """When store forgets a repo, gitwatch stops watching it and publishes its rows removed."""
    running, repo_id = actors
    with trio.fail_after(TEST_TIMEOUT_S):
        await running.store.call("repo.remove", {"id": repo_id})
        await running.events.next_matching(_at("worktree.removed", repo))
        snapshot = await running.git("gitwatch.snapshot")
        assert repo_id not in snapshot["repos"] and snapshot["watches"] == 0


async def test_repo_listed_right_after_it_is_added(
    actors: tuple[Actors, str], tmp_path: Path
) -> None:
    """Listing a repo added a moment ago answers with its rows (no mirror-lag NotFound)."""
    running, _ = actors
    other = tmp_path / "other"
    other.mkdir()
    _git(other, "init", "-q", "-b", "trunk")
    _git(other, "commit", "-q", "--allow-empty", "-m", "init")
    with trio.fail_after(TEST_TIMEOUT_S):
        added = await running.store.call("repo.add", {"path": str(other)})
        listing = await running.git("worktree.list", {"repoId": added["id"]})
    assert [r["branch"] for r in listing["worktrees"]] == ["refs/heads/trunk"], listing


async def test_errors_cross_the_wire_by_fault(actors: tuple[Actors, str], repo: Path) -> None:
    """Bad names are bad_request, a checked-out branch or dirty removal is conflict."""
    running, repo_id = actors
    with trio.fail_after(TEST_TIMEOUT_S):
        with pytest.raises(BadRequest):
            await running.git("worktree.create", {"repoId": repo_id, "name": ".."})
        with pytest.raises(Conflict, match="already checked out"):
            await running.git("worktree.create", {"repoId": repo_id, "name": "main"})
        created = await running.git("worktree.create", {"repoId": repo_id, "name": "dirty"})
        (Path(created["path"]) / "README").write_text("unsaved\n")
        with pytest.raises(Conflict, match="changed"):
            await running.git("worktree.remove", {"worktreeId": created["worktreeId"]})
        with pytest.raises(NotFound):
            await running.git("worktree.list", {"repoId": "no-such-repo"})


async def test_vanished_repo_is_reported_and_actor_keeps_serving(
    actors: tuple[Actors, str], repo: Path
) -> None:
    """Deleting the repo directory publishes repo.unavailable; listing reports it, no crash."""
    running, repo_id = actors
    with trio.fail_after(TEST_TIMEOUT_S):
        await trio.to_thread.run_sync(shutil.rmtree, repo)
        event = await running.events.next_matching(lambda e: e.type == "repo.unavailable")
        assert event.data["repoId"] == repo_id
        listing = await running.git("worktree.list")
        assert [u["repoId"] for u in listing["unavailableRepos"]] == [repo_id]
        assert listing["worktrees"] == []
        snapshot = await running.git("gitwatch.snapshot")
        assert snapshot["repos"][repo_id]["unavailable"]


async def test_rename_keeps_live_terminal_sessions(tmp_path: Path, repo: Path) -> None:
    """A session started in a worktree survives its rename, re-keyed to the new id (§4.3)."""
    async with running_actors(tmp_path / "home", with_ptyd=True) as running:
        assert running.ptyd is not None
        ptyd_events = EventTap(running.paths.ipc_endpoint("ptyd", "pub"))
        with trio.fail_after(TEST_TIMEOUT_S):
            async with trio.open_nursery() as nursery:
                await nursery.start(ptyd_events.run)
                root = tmp_path / "workspaces"
                await running.store.call("settings.patch", {"patch": {"workspaceDir": str(root)}})
                repo_id = (await running.store.call("repo.add", {"path": str(repo)}))["id"]
                created = await running.git("worktree.create", {"repoId": repo_id, "name": "a"})
                old_id = created["worktreeId"]
                spawned = await running.ptyd.call(
                    "term.spawn", {"argv": ["cat"], "cwd": created["path"], "worktreeId": old_id}
                )
                renamed = await running.git(
                    "worktree.rename", {"worktreeId": old_id, "newName": "a-renamed"}
                )
                new_id = renamed["newWorktreeId"]
                await ptyd_events.next_matching(lambda e: e.type == "term.rekeyed")
                listed = await running.ptyd.call("term.list", {"worktreeId": new_id})
                [session] = listed["sessions"]
                assert session["running"] is True and session["pid"] == spawned["pid"]
                assert session["worktreeId"] == new_id
                await running.ptyd.call("term.close", {"sessionId": session["sessionId"]})
                nursery.cancel_scope.cancel()
        ptyd_events.close()
