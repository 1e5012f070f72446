"""The gitwatch actor process with a real store process and real git repositories."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio
from support.actors import actor_tap
from support.gitwatch_harness import Actors, running_actors

from orca.contracts import NoArgs, ptyd, store
from orca.contracts import gitwatch as gw
from orca.contracts import sys as sys_contract
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
        await _set_root(running, root)
        added = await running.store.invoke(
            store.REPO_ADD, store.RepoAddArgs(path=str(repo), display_name="proj")
        )
        await running.events.next_of(gw.WORKTREE_ADDED, _at(repo))
        yield running, added.id


async def _set_root(running: Actors, root: Path) -> None:
    await running.store.invoke(
        store.SETTINGS_PATCH, store.PatchArgs(patch={"workspaceDir": str(root)})
    )


async def _list(running: Actors, repo_id: str | None = None) -> gw.WorktreeList:
    return await running.gitwatch.invoke(gw.WORKTREE_LIST, gw.ListArgs(repo_id=repo_id))


async def _create(running: Actors, repo_id: str, name: str) -> gw.Created:
    return await running.gitwatch.invoke(
        gw.WORKTREE_CREATE, gw.CreateArgs(repo_id=repo_id, name=name)
    )


async def _meta(running: Actors, worktree_id: str) -> Any:
    return await running.store.invoke(
        store.WORKTREE_META_GET, store.WorktreeIdArgs(worktree_id=worktree_id)
    )


def _at(path: Path) -> Any:
    def match(event: Any) -> bool:
        git = getattr(event, "git", None)
        return bool((git or event).path == str(path))

    return match


async def test_registered_ops_are_the_contract(actors: tuple[Actors, str]) -> None:
    """The running actor serves exactly gitwatch's contract plus the built-in sys ops."""
    running, _ = actors
    with trio.fail_after(TEST_TIMEOUT_S):
        hello = await running.gitwatch.invoke(sys_contract.HELLO, NoArgs())
    assert set(hello.capabilities) == set(gw.CONTRACT.ops) | set(sys_contract.CONTRACT.ops)


async def test_repo_imported_into_store_is_listed(actors: tuple[Actors, str], repo: Path) -> None:
    """A repo added to store appears in worktree.list as its main worktree (seed 01 §5.2)."""
    running, repo_id = actors
    with trio.fail_after(TEST_TIMEOUT_S):
        listing = await _list(running, repo_id)
    [row] = listing.worktrees
    assert row.id == f"{repo_id}::{repo}" and row.is_main_worktree is True
    assert row.branch == "refs/heads/main" and row.display_name == "main"
    assert row.ownership == "external" and row.visible is True
    assert listing.unavailable_repos == []


async def test_worktree_paths_are_the_listings_ids_and_paths(
    actors: tuple[Actors, str], repo: Path, tmp_path: Path
) -> None:
    """worktree.paths (what `orca term ls` computes handles from) names exactly the rows
    worktree.list has, hand-made worktrees included."""
    running, _ = actors
    wt = tmp_path / "by-hand"
    with trio.fail_after(TEST_TIMEOUT_S):
        await trio.to_thread.run_sync(_git, repo, "worktree", "add", "-q", str(wt), "-b", "hand")
        await running.events.next_of(gw.WORKTREE_ADDED, _at(wt))
        paths = await running.gitwatch.invoke(gw.WORKTREE_PATHS)
        listing = await _list(running)
    assert [(p.id, p.path) for p in paths.worktrees] == [(r.id, r.path) for r in listing.worktrees]
    assert {p.path for p in paths.worktrees} == {str(repo), str(wt)}


async def test_external_worktree_appears_and_disappears(
    actors: tuple[Actors, str], repo: Path, tmp_path: Path
) -> None:
    """`git worktree add/remove` by hand shows up in events and the listing, no registration."""
    running, _ = actors
    wt = tmp_path / "by-hand"
    with trio.fail_after(TEST_TIMEOUT_S):
        await trio.to_thread.run_sync(_git, repo, "worktree", "add", "-q", str(wt), "-b", "hand")
        await running.events.next_of(gw.WORKTREE_ADDED, _at(wt))
        assert str(wt) in [r.path for r in (await _list(running)).worktrees]
        await trio.to_thread.run_sync(_git, repo, "worktree", "remove", str(wt))
        await running.events.next_of(gw.WORKTREE_REMOVED, _at(wt))
        assert str(wt) not in [r.path for r in (await _list(running)).worktrees]


async def test_create_then_rename_keeps_meta(actors: tuple[Actors, str], tmp_path: Path) -> None:
    """After rename the meta (creation evidence) lives under the new id, old id recorded, and
    the display name is the new name (branch + display name + folder together, §4.3)."""
    running, repo_id = actors
    with trio.fail_after(TEST_TIMEOUT_S):
        created = await _create(running, repo_id, "task one")
        old_id = created.worktree_id
        await running.store.invoke(
            store.WORKTREE_META_PATCH,
            store.MetaPatchArgs(worktree_id=old_id, patch={"displayName": "My task"}),
        )
        renamed = await running.gitwatch.invoke(
            gw.WORKTREE_RENAME, gw.RenameArgs(worktree_id=old_id, new_name="task-two")
        )
        new_id = renamed.new_worktree_id
        event = await running.events.next_of(gw.WORKTREE_RENAMED)
        assert (event.old_worktree_id, event.new_worktree_id) == (old_id, new_id)
        assert event.identity_migrated is True
        meta = await _meta(running, new_id)
        assert meta.display_name == "task-two" and (meta.orca_created_at or 0) > 0
        assert old_id in meta.prior_worktree_ids
        with pytest.raises(NotFound):
            await _meta(running, old_id)

        rows = (await _list(running)).worktrees
        row = next((r for r in rows if r.id == new_id), None)
        assert row is not None and row.display_name == "task-two"
        assert row.branch == "refs/heads/task-two" and row.ownership == "orca-managed"
        assert row.path == str(tmp_path / "workspaces" / "proj" / "task-two")


async def test_a_worktree_the_user_renamed_is_not_renamed_by_a_first_message(
    actors: tuple[Actors, str],
) -> None:
    """01-23: `worktree mv` of a placeholder-named worktree clears its pending flag, so
    the agent's first message later names nothing (the user's name stays)."""
    running, repo_id = actors
    with trio.fail_after(TEST_TIMEOUT_S):
        created = await running.gitwatch.invoke(
            gw.WORKTREE_CREATE,
            gw.CreateArgs(
                repo_id=repo_id, name="untitled-1", setup="skip",
                pending_first_agent_message_rename=True,
            ),
        )  # fmt: skip
        assert (await _meta(running, created.worktree_id)).pending_first_agent_message_rename
        renamed = await running.gitwatch.invoke(
            gw.WORKTREE_RENAME, gw.RenameArgs(worktree_id=created.worktree_id, new_name="mine")
        )
        meta = await _meta(running, renamed.new_worktree_id)
        assert not meta.pending_first_agent_message_rename
        answer = await running.gitwatch.invoke(
            gw.WORKTREE_RENAME_FROM_FIRST_MESSAGE,
            gw.FirstMessageArgs(worktree_id=renamed.new_worktree_id, message="Fix the login"),
        )
        assert (answer.renamed, answer.skipped) == (False, "no rename pending")
        assert (await _meta(running, renamed.new_worktree_id)).display_name == "mine"


async def test_recreated_path_does_not_inherit_old_meta(actors: tuple[Actors, str]) -> None:
    """Remove drops the meta; a new worktree at the same path starts with fresh notes (§4.4)."""
    running, repo_id = actors
    with trio.fail_after(TEST_TIMEOUT_S):
        first = await _create(running, repo_id, "reuse")
        await running.store.invoke(
            store.WORKTREE_META_PATCH,
            store.MetaPatchArgs(worktree_id=first.worktree_id, patch={"comment": "old"}),
        )
        first_meta = await _meta(running, first.worktree_id)
        removed = await running.gitwatch.invoke(
            gw.WORKTREE_REMOVE, gw.RemoveArgs(worktree_id=first.worktree_id)
        )
        assert removed == gw.Removed(
            worktree_id=first.worktree_id, removed=True, branch_deleted=False
        )
        with pytest.raises(NotFound):
            await _meta(running, first.worktree_id)
        second = await _create(running, repo_id, "reuse")
        assert second.worktree_id == first.worktree_id
        meta = await _meta(running, second.worktree_id)
        assert meta.comment == "" and meta.instance_id != first_meta.instance_id


async def test_a_create_whose_setup_still_runs_holds_no_other_op(
    actors: tuple[Actors, str], repo: Path, tmp_path: Path
) -> None:
    """A repo's setup script may run for minutes (an install): while it does, another
    create, a listing and a merge preview are answered, and the slow create ends with its
    setup's outcome when the script does."""
    running, repo_id = actors
    go = tmp_path / "go"
    os.mkfifo(go, 0o600)
    (repo / "orca.yaml").write_text(f"setup: read line < '{go}'\n")
    _git(repo, "add", "orca.yaml")
    _git(repo, "commit", "-q", "-m", "a setup that waits")
    slow_path = tmp_path / "workspaces" / "proj" / "slow"
    outcome: list[gw.Created] = []

    async def slow() -> None:
        outcome.append(
            await running.gitwatch.invoke(
                gw.WORKTREE_CREATE, gw.CreateArgs(repo_id=repo_id, name="slow"),
                timeout=TEST_TIMEOUT_S,
            )
        )  # fmt: skip

    with trio.fail_after(TEST_TIMEOUT_S):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(slow)
            await running.events.next_of(gw.WORKTREE_ADDED, _at(slow_path))  # setup next
            quick = await running.gitwatch.invoke(
                gw.WORKTREE_CREATE, gw.CreateArgs(repo_id=repo_id, name="quick", setup="skip")
            )
            listed = {row.path for row in (await _list(running, repo_id)).worktrees}
            assert {quick.path, str(slow_path)} <= listed
            preview = await running.gitwatch.invoke(
                gw.WORKTREE_MERGE_PREVIEW, gw.MergePreviewArgs(worktree=quick.worktree_id)
            )
            assert preview.branch == "quick" and preview.ahead == 0
            assert not outcome  # the slow one's setup is still reading
            # (abandoned on a timeout: a setup that never opened the FIFO would hold it)
            await trio.to_thread.run_sync(lambda: go.write_text("go\n"), abandon_on_cancel=True)
    [created] = outcome
    assert created.path == str(slow_path)
    assert created.setup.ran and created.setup.exit_code == 0


async def test_repo_removed_from_store_drops_its_rows(
    actors: tuple[Actors, str], repo: Path
) -> None:
    """When store forgets a repo, gitwatch stops watching it and publishes its rows removed."""
    running, repo_id = actors
    with trio.fail_after(TEST_TIMEOUT_S):
        await running.store.invoke(store.REPO_REMOVE, store.IdArgs(id=repo_id))
        await running.events.next_of(gw.WORKTREE_REMOVED, _at(repo))
        snapshot = await running.gitwatch.invoke(gw.SNAPSHOT, NoArgs())
        assert repo_id not in snapshot.repos and snapshot.watches == 0


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
        added = await running.store.invoke(store.REPO_ADD, store.RepoAddArgs(path=str(other)))
        listing = await _list(running, added.id)
    assert [r.branch for r in listing.worktrees] == ["refs/heads/trunk"], listing


async def test_errors_cross_the_wire_by_fault(actors: tuple[Actors, str], repo: Path) -> None:
    """Bad names are bad_request, a checked-out branch or dirty removal is conflict."""
    running, repo_id = actors
    with trio.fail_after(TEST_TIMEOUT_S):
        with pytest.raises(BadRequest):
            await _create(running, repo_id, "..")
        with pytest.raises(Conflict, match="already checked out"):
            await _create(running, repo_id, "main")
        created = await _create(running, repo_id, "dirty")
        (Path(created.path) / "README").write_text("unsaved\n")
        with pytest.raises(Conflict, match="changed"):
            await running.gitwatch.invoke(
                gw.WORKTREE_REMOVE, gw.RemoveArgs(worktree_id=created.worktree_id)
            )
        with pytest.raises(NotFound):
            await _list(running, "no-such-repo")


async def test_vanished_repo_is_reported_and_actor_keeps_serving(
    actors: tuple[Actors, str], repo: Path
) -> None:
    """Deleting the repo directory publishes repo.unavailable; listing reports it, no crash."""
    running, repo_id = actors
    with trio.fail_after(TEST_TIMEOUT_S):
        await trio.to_thread.run_sync(shutil.rmtree, repo)
        event = await running.events.next_of(gw.REPO_UNAVAILABLE)
        assert event.repo_id == repo_id
        listing = await _list(running)
        assert [u.repo_id for u in listing.unavailable_repos] == [repo_id]
        assert listing.worktrees == []
        snapshot = await running.gitwatch.invoke(gw.SNAPSHOT, NoArgs())
        assert snapshot.repos[repo_id].unavailable


async def test_rename_keeps_live_terminal_sessions(tmp_path: Path, repo: Path) -> None:
    """A session started in a worktree survives its rename, re-keyed to the new id (§4.3)."""
    async with running_actors(tmp_path / "home", with_ptyd=True) as running:
        assert running.ptyd is not None
        ptyd_events = actor_tap(running.home, ptyd.CONTRACT)
        with trio.fail_after(TEST_TIMEOUT_S):
            async with trio.open_nursery() as nursery:
                await ptyd_events.start(nursery)
                root = tmp_path / "workspaces"
                await _set_root(running, root)
                added = await running.store.invoke(
                    store.REPO_ADD, store.RepoAddArgs(path=str(repo))
                )
                created = await _create(running, added.id, "a")
                old_id = created.worktree_id
                spawned = await running.ptyd.call(
                    "term.spawn", {"argv": ["cat"], "cwd": created.path, "worktreeId": old_id}
                )
                renamed = await running.gitwatch.invoke(
                    gw.WORKTREE_RENAME, gw.RenameArgs(worktree_id=old_id, new_name="a-renamed")
                )
                new_id = renamed.new_worktree_id
                await ptyd_events.next_of(ptyd.REKEYED)
                listed = await running.ptyd.call("term.list", {"worktreeId": new_id})
                [session] = listed["sessions"]
                assert session["running"] is True and session["pid"] == spawned["pid"]
                assert session["worktreeId"] == new_id
                await running.ptyd.call("term.close", {"sessionId": session["sessionId"]})
                nursery.cancel_scope.cancel()
        ptyd_events.close()


async def test_a_starting_gitwatch_snapshots_and_lists_every_repo_it_will_track(
    tmp_path: Path, repo: Path
) -> None:
    """gitwatch answers before the store it follows (`orca up`, a restart under load):
    a snapshot and a listing asked then wait until it tracks the store's repos, and hold
    every worktree. The snapshot held none: every face showed the worktrees gone for a
    moment, and `orca ui` lost its selection (test_outage)."""
    from support.actors import running_actor

    home = tmp_path / "home"
    side = tmp_path / "side"
    _git(repo, "worktree", "add", "-q", "-b", "side", str(side))
    asked: dict[str, Any] = {}
    answered = trio.Event()
    with trio.fail_after(TEST_TIMEOUT_S):
        async with running_actor("store", home) as st:
            added = await st.invoke(
                store.REPO_ADD, store.RepoAddArgs(path=str(repo), display_name="proj")
            )
        # its wait for the store made longer than a loaded machine's store start
        slow = {"ORCA_GITWATCH_FIRST_TRACK_WAIT_S": "20"}
        async with running_actor("gitwatch", home, slow) as gitwatch:

            async def ask() -> None:
                asked["snapshot"] = await gitwatch.invoke(gw.SNAPSHOT, NoArgs(), timeout=30)
                asked["listing"] = await gitwatch.invoke(
                    gw.WORKTREE_LIST, gw.ListArgs(), timeout=30
                )
                answered.set()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(ask)
                async with running_actor("store", home):
                    await answered.wait()
    snapshot, listing = asked["snapshot"], asked["listing"]
    assert list(snapshot.repos) == [added.id]
    assert sorted(snapshot.repos[added.id].worktrees) == sorted([str(repo), str(side)])
    assert sorted(w.path for w in listing.worktrees) == sorted([str(repo), str(side)])
