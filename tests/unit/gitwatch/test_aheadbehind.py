"""Ahead/behind counts of real worktrees against their comparison ref (no actor)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import msgspec

from actors.gitwatch.aheadbehind import AheadBehindCache, Bases, with_ahead_behind
from actors.gitwatch.factstate import RepoFacts, apply_listing
from actors.gitwatch.gitfacts import scan_worktrees
from actors.gitwatch.records import AheadBehind
from actors.gitwatch.wirerows import fact_event_to_wire
from orca.contracts import gitwatch as gw
from orca.model.codec import from_builtins, to_builtins

GitRunner = Callable[..., str]


def _counts(
    repo: Path, bases: Bases | None = None, cache: AheadBehindCache | None = None
) -> dict[str, AheadBehind | None]:
    rows = with_ahead_behind(
        str(repo), scan_worktrees(str(repo)), bases or Bases(), cache or AheadBehindCache()
    )
    return {row.path: row.ahead_behind for row in rows}


def _git_says(git: GitRunner, cwd: Path, against: str) -> tuple[int, int]:
    """git's own answer: ``rev-list --left-right --count HEAD...<against>``."""
    ahead, behind = git(cwd, "rev-list", "--left-right", "--count", f"HEAD...{against}").split()
    return int(ahead), int(behind)


def _commit(git: GitRunner, cwd: Path, message: str) -> None:
    git(cwd, "commit", "-q", "--allow-empty", "-m", message)


def test_worktree_ahead_then_behind_its_base(repo: Path, git: GitRunner, tmp_path: Path) -> None:
    """Commits on the worktree count as ahead of main; commits on main as behind."""
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "feature")
    assert _counts(repo)[str(wt)] == AheadBehind(0, 0, "main")
    for i in range(3):
        _commit(git, wt, f"feature {i}")
    assert _counts(repo)[str(wt)] == AheadBehind(3, 0, "main")
    _commit(git, repo, "main moves")
    counts = _counts(repo)
    assert counts[str(wt)] == AheadBehind(*_git_says(git, wt, "main"), "main")
    assert counts[str(wt)] == AheadBehind(3, 1, "main")
    # main itself has no comparison ref: no upstream, no remote, and it is the default.
    assert counts[str(repo)] is None


def test_configured_upstream_wins_over_the_base(repo: Path, git: GitRunner, tmp_path: Path) -> None:
    """branch.<name>.remote/merge name the comparison ref (a remote's, or "." local)."""
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    git(repo, "remote", "add", "origin", str(origin))
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "feature")
    _commit(git, wt, "pushed")
    git(wt, "push", "-q", "-u", "origin", "feature")
    _commit(git, wt, "not pushed")
    _commit(git, wt, "not pushed either")
    assert _counts(repo)[str(wt)] == AheadBehind(2, 0, "origin/feature")
    # Remote "." is a local branch: the one named, not the default.
    git(repo, "branch", "other", "main")
    git(wt, "branch", "--set-upstream-to=other")
    _commit(git, repo, "main moves, other does not")
    assert _counts(repo)[str(wt)] == AheadBehind(*_git_says(git, wt, "other"), "other")
    # An upstream whose remote-tracking ref is gone falls back to the base.
    git(wt, "branch", "--set-upstream-to=origin/feature")
    git(repo, "update-ref", "-d", "refs/remotes/origin/feature")
    assert _counts(repo)[str(wt)] == AheadBehind(3, 1, "main")


def test_origin_head_is_the_default_branch(repo: Path, git: GitRunner, tmp_path: Path) -> None:
    """In a clone, origin/HEAD's target is the default: main itself compares with it."""
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    _commit(git, clone, "local only")
    wt = tmp_path / "wt"
    git(clone, "worktree", "add", "-q", "--detach", str(wt), "HEAD~1")
    counts = _counts(clone)
    # A fresh clone's main tracks origin/main (an upstream); the detached one uses the default.
    assert counts[str(clone)] == AheadBehind(1, 0, "origin/main")
    assert counts[str(wt)] == AheadBehind(0, 0, "origin/main")
    git(clone, "branch", "--unset-upstream")
    assert _counts(clone)[str(clone)] == AheadBehind(1, 0, "origin/main")


def test_detached_head_compares_with_the_default(
    repo: Path, git: GitRunner, tmp_path: Path
) -> None:
    """A detached HEAD has no upstream; it is counted against the default branch."""
    _commit(git, repo, "second")
    wt = tmp_path / "detached"
    git(repo, "worktree", "add", "-q", "--detach", str(wt), "HEAD~1")
    _commit(git, wt, "on the detached head")
    assert _counts(repo)[str(wt)] == AheadBehind(1, 1, "main")


def test_recorded_base_is_preferred_for_orca_worktrees(
    repo: Path, git: GitRunner, tmp_path: Path
) -> None:
    """The baseRef recorded at create (then the repo's worktreeBaseRef) beats the default;
    a base that is not a branch (HEAD, a commit id) is skipped."""
    git(repo, "branch", "develop")
    _commit(git, repo, "main moves")
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "feature", "develop")
    assert _counts(repo, Bases(by_path={str(wt): "develop"}))[str(wt)] == AheadBehind(
        0, 0, "develop"
    )
    assert _counts(repo, Bases(repo_base="develop"))[str(wt)] == AheadBehind(0, 0, "develop")
    head = git(repo, "rev-parse", "HEAD").strip()
    for unusable in ("HEAD", head, "no-such-branch"):
        assert _counts(repo, Bases(by_path={str(wt): unusable}))[str(wt)] == AheadBehind(
            0, 1, "main"
        )


def test_repo_without_any_comparison_ref(git: GitRunner, tmp_path: Path) -> None:
    """No upstream, no base, no origin/HEAD, no main or master: no counts (not 0/0);
    an unborn HEAD has none either."""
    repo = tmp_path / "trunk"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "trunk")
    assert _counts(repo) == {str(repo): None}
    _commit(git, repo, "first")
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "feature")
    assert _counts(repo) == {str(repo): None, str(wt): None}


def test_a_pair_is_walked_once(repo: Path, git: GitRunner, tmp_path: Path) -> None:
    """The graph walk is memoized per (HEAD, target): a rescan with no moved ref walks
    nothing, and a moved HEAD walks only for that worktree."""
    for name in ("a", "b", "c"):
        git(repo, "worktree", "add", "-q", str(tmp_path / name), "-b", name)
    cache = AheadBehindCache()
    _counts(repo, cache=cache)
    assert cache.walks == 1  # a, b and c share HEAD and target
    _counts(repo, cache=cache)
    assert cache.walks == 1
    _commit(git, tmp_path / "b", "b moves")
    assert _counts(repo, cache=cache)[str(tmp_path / "b")] == AheadBehind(1, 0, "main")
    assert cache.walks == 2


def test_changed_counts_alone_are_an_event_without_a_status(repo: Path) -> None:
    """Only the counts moved (the base did): one worktree.changed, no status recomputed;
    the same counts again are silent."""
    [row] = scan_worktrees(str(repo))
    facts = RepoFacts(repo_id="r", path=str(repo))
    apply_listing(facts, [replace(row, ahead_behind=AheadBehind(0, 0, "origin/main"))])
    moved = replace(row, ahead_behind=AheadBehind(0, 2, "origin/main"))
    update = apply_listing(facts, [moved])
    assert update.status_needed == []
    [event] = update.events
    wire = fact_event_to_wire(event)
    assert isinstance(wire, gw.WorktreeChanged)
    assert wire.git.ahead_behind == gw.AheadBehind(ahead=0, behind=2, against="origin/main")
    assert apply_listing(facts, [moved]).events == []


def test_rows_and_events_without_the_field_still_decode() -> None:
    """What an older gitwatch (or a remote host) wrote, without aheadBehind, reads as None;
    a row with it round-trips."""
    old_git = {"path": "/w", "head": "", "branch": "", "isBare": False, "isDetached": False}
    event = msgspec.json.decode(
        msgspec.json.encode({"repoId": "r", "worktreeId": "r::/w", "git": old_git}),
        type=gw.WorktreeAdded,
    )
    assert event.git.ahead_behind is None
    row = to_builtins(gw.WorktreeRow(id="r::/w", repo_id="r", path="/w", ownership="external"))
    del row["aheadBehind"]
    assert from_builtins(gw.WorktreeRow, row).ahead_behind is None
    counted = from_builtins(
        gw.WorktreeRow, {**row, "aheadBehind": {"ahead": 1, "behind": 0, "against": "main"}}
    )
    assert counted.ahead_behind == gw.AheadBehind(ahead=1, behind=0, against="main")
    assert to_builtins(counted)["aheadBehind"] == {"ahead": 1, "behind": 0, "against": "main"}
