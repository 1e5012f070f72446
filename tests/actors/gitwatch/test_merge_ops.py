"""worktree.mergePreview and worktree.merge over the wire: real store and gitwatch
processes, a real repository, a worktree made by worktree.create."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
from support.gitwatch_harness import Actors, running_actors
from support.journey import make_git_repo

from orca.cli.main import main
from orca.contracts import gitwatch as gw
from orca.contracts import store
from orca.wire.errors import BadRequest, Conflict, NotFound

# Actor start-up, the store mirror's first snapshot and git work on a loaded box.
TEST_TIMEOUT_S = 40


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_git_repo(tmp_path / "proj")


@pytest.fixture
async def variant(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Actors, gw.Created]]:
    """store + gitwatch running, the repo imported, one worktree with a commit on it."""
    monkeypatch.setenv("ORCA_HOME", str(tmp_path / "home"))  # for the CLI in this process
    async with running_actors(tmp_path / "home") as running:
        with trio.fail_after(TEST_TIMEOUT_S):
            await running.store.invoke(
                store.SETTINGS_PATCH,
                store.PatchArgs(patch={"workspaceDir": str(tmp_path / "workspaces")}),
            )
            added = await running.store.invoke(
                store.REPO_ADD, store.RepoAddArgs(path=str(repo), display_name="proj")
            )
            created = await running.gitwatch.invoke(
                gw.WORKTREE_CREATE, gw.CreateArgs(repo_id=added.id, name="variant", setup="skip")
            )
        wt = Path(created.path)
        (wt / "answer.txt").write_text("42\n")
        _git(wt, "add", "answer.txt")
        _git(wt, "commit", "-q", "-m", "the answer")
        yield running, created


async def test_preview_then_merge_over_the_wire(
    variant: tuple[Actors, gw.Created], repo: Path
) -> None:
    """The preview names main (the worktree's base) and the diffstat; the merge moves
    main and the main checkout, and worktree.changed reports the new HEAD."""
    running, created = variant
    with trio.fail_after(TEST_TIMEOUT_S):
        preview = await running.gitwatch.invoke(
            gw.WORKTREE_MERGE_PREVIEW, gw.MergePreviewArgs(worktree=created.worktree_id)
        )
        assert (preview.into, preview.branch, preview.ahead, preview.behind) == (
            "main", "variant", 1, 0,
        )  # fmt: skip
        assert preview.diffstat == gw.Diffstat(files=1, insertions=1, deletions=0)
        assert preview.conflicts == [] and not preview.dirty
        result = await running.gitwatch.invoke(
            gw.WORKTREE_MERGE, gw.MergeArgs(worktree=created.worktree_id, mode="squash")
        )
        assert result.changed and result.checkout_updated and result.into == "main"
        await running.events.next_of(
            gw.WORKTREE_CHANGED, lambda e: e.git.path == str(repo) and e.git.head == result.commit
        )
    assert _git(repo, "rev-parse", "main") == result.commit
    assert (repo / "answer.txt").read_text() == "42\n"


async def test_merge_errors_cross_the_wire_by_fault(
    variant: tuple[Actors, gw.Created], repo: Path
) -> None:
    """A bad mode is bad_request, an unknown worktree not_found, a conflict conflict
    (with the path) and a dirty worktree conflict; none of them moves main."""
    running, created = variant
    main = _git(repo, "rev-parse", "main")
    with trio.fail_after(TEST_TIMEOUT_S):
        with pytest.raises(BadRequest, match="mode"):
            await running.gitwatch.invoke(
                gw.WORKTREE_MERGE,
                gw.MergeArgs(worktree=created.worktree_id, mode="octopus"),  # type: ignore[arg-type]
            )
        with pytest.raises(NotFound):
            await running.gitwatch.invoke(
                gw.WORKTREE_MERGE_PREVIEW,
                gw.MergePreviewArgs(worktree=created.worktree_id + "-gone"),
            )
        (repo / "answer.txt").write_text("41\n")
        _git(repo, "add", "answer.txt")
        _git(repo, "commit", "-q", "-m", "a different answer")
        main = _git(repo, "rev-parse", "main")
        preview = await running.gitwatch.invoke(
            gw.WORKTREE_MERGE_PREVIEW, gw.MergePreviewArgs(worktree=created.worktree_id)
        )
        assert preview.conflicts == ["answer.txt"]
        with pytest.raises(Conflict, match=r"answer\.txt"):
            await running.gitwatch.invoke(
                gw.WORKTREE_MERGE, gw.MergeArgs(worktree=created.worktree_id)
            )
        (Path(created.path) / "wip.txt").write_text("unsaved\n")
        with pytest.raises(Conflict, match=r"wip\.txt"):
            await running.gitwatch.invoke(
                gw.WORKTREE_MERGE, gw.MergeArgs(worktree=created.worktree_id)
            )
    assert _git(repo, "rev-parse", "main") == main


async def _orca(*argv: str) -> int:
    """The CLI in this process, through main's error boundary (exit codes included)."""
    return await trio.to_thread.run_sync(lambda: main(list(argv)))


async def test_cli_merge_preview_then_rebase(
    variant: tuple[Actors, gw.Created], repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`orca worktree merge --preview` changes nothing; `--rebase` merges; a conflict
    preview exits non-zero naming the path."""
    _running, created = variant
    main_before = _git(repo, "rev-parse", "main")
    with trio.fail_after(TEST_TIMEOUT_S):
        assert await _orca("worktree", "merge", "variant", "--preview", "--json") == 0
        preview = json.loads(capsys.readouterr().out)["preview"]
        assert preview["into"] == "main" and preview["ahead"] == 1 and preview["conflicts"] == []
        assert _git(repo, "rev-parse", "main") == main_before
        assert await _orca("worktree", "merge", "variant", "--rebase") == 0
        assert "merged 'variant' into main (rebase)" in capsys.readouterr().out
        assert _git(repo, "rev-parse", "main") == _git(Path(created.path), "rev-parse", "HEAD")
        for where, text in ((repo, "main\n"), (Path(created.path), "variant\n")):
            (where / "answer.txt").write_text(text)
            _git(where, "commit", "-q", "-am", f"answer from {where.name}")
        assert await _orca("worktree", "merge", "variant", "--preview") != 0
        out, err = capsys.readouterr()
        assert "conflict: answer.txt" in out and "refused" in err
