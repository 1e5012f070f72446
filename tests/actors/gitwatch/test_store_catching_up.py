"""Issue 33: the gitwatch process never answers from a store mirror being reloaded.

store is a stand-in in this process (``support.standin_store``) on the home's endpoints,
so the test decides what each epoch's snapshot holds and when it is answered; gitwatch
and git are real.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio
from support.actors import running_actor
from support.standin_store import StandInStore

from actors.gitwatch.storeview import STORE_CATCH_UP_S
from orca.contracts import gitwatch as gw
from orca.paths import resolve_paths
from orca.wire.errors import Unavailable

REPO_ID = "r1"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _state(repo: Path, meta: dict[str, Any]) -> dict[str, Any]:
    return {
        "repos": [{"id": REPO_ID, "path": str(repo), "displayName": "proj"}],
        "worktreeMeta": meta,
    }


def _row(listing: gw.WorktreeList, path: Path) -> gw.WorktreeRow:
    return next(r for r in listing.worktrees if r.path == str(path))


@pytest.mark.timeout(60)
async def test_listing_waits_for_a_restarted_stores_snapshot_or_says_it_is_catching_up(
    tmp_path: Path,
) -> None:
    """The mirror's old copy lacks the meta of a worktree made just before store
    restarted (its event was lost with the old store), so it would list that worktree
    as someone else's and hide it. While the new snapshot is held, ``worktree.list``
    answers unavailable ("store is catching up") after the bound; a listing asked while
    it is held and answered once it loads shows the worktree as Orca's."""
    repo = tmp_path / "proj"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("hi\n")
    _git(repo, "add", "README")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@e.invalid", "commit", "-q", "-m", "i")
    made = tmp_path / "elsewhere" / "made"
    _git(repo, "worktree", "add", "-q", "-b", "made", str(made))
    meta = {f"{REPO_ID}::{made}": {"orcaCreatedAt": 1, "displayName": "made"}}
    home = tmp_path / "home"
    runtime = resolve_paths({"ORCA_HOME": str(home)}).ensure().runtime_dir

    with trio.fail_after(45):
        async with trio.open_nursery() as stores:
            old_store = StandInStore(runtime, _state(repo, {}))
            await stores.start(old_store.serve)
            async with running_actor("gitwatch", home) as gitwatch:
                # (with a repo id the listing also waits for the repo's first scan)
                before = await gitwatch.invoke(gw.WORKTREE_LIST, gw.ListArgs(repo_id=REPO_ID))
                assert _row(before, made).ownership == "external"  # no meta: not Orca's
                await old_store.stop()  # store dies; the restarted one holds its snapshot
                release = trio.Event()
                restarted = StandInStore(runtime, _state(repo, meta), hold=release)
                await stores.start(restarted.serve)
                await restarted.snapshot_asked.wait()  # gitwatch's mirror is resyncing
                asked = trio.current_time()
                with pytest.raises(Unavailable, match="store is catching up"):
                    await gitwatch.invoke(gw.WORKTREE_LIST, gw.ListArgs())
                assert trio.current_time() - asked >= STORE_CATCH_UP_S * 0.9

                answers: list[gw.WorktreeList] = []

                async def list_all() -> None:
                    answers.append(await gitwatch.invoke(gw.WORKTREE_LIST, gw.ListArgs()))

                async with trio.open_nursery() as listing:
                    listing.start_soon(list_all)
                    # store answers within the bound: the listing waits it out, then answers
                    await trio.sleep(STORE_CATCH_UP_S / 2)
                    release.set()
                (after,) = answers
                row = _row(after, made)
                assert (row.ownership, row.visible) == ("orca-managed", True)
                await restarted.stop()
