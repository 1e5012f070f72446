"""worktree.list rows: git facts merged with meta through the model's rules."""

from __future__ import annotations

from typing import Any

import msgspec

from actors.gitwatch.factstate import RepoFacts, apply_dirty, apply_listing
from actors.gitwatch.records import DirtyCounts, WorktreeFacts
from actors.gitwatch.wirerows import build_rows, fact_event_to_wire, workspace_roots
from orca.contracts import gitwatch as gw
from orca.model.codec import to_builtins
from orca.model.state import GlobalSettings
from orca.model.types_repo import Repo
from orca.model.worktree import WorktreeMeta

REPO = Repo(id="r1", path="/src/app", display_name="app")
MAIN = WorktreeFacts(
    path="/src/app",
    head="a" * 40,
    branch="refs/heads/main",
    is_main=True,
    admin_dir="/src/app/.git",
)
MADE = WorktreeFacts(
    path="/ws/app/task", head="b" * 40, branch="refs/heads/task", is_main=False, admin_dir="x"
)
HAND = WorktreeFacts(
    path="/tmp/hand", head=None, branch=None, is_main=False, admin_dir="y", is_detached=True
)


def _wire(facts: RepoFacts, repo: Repo, meta: dict[str, WorktreeMeta], roots: list[str]) -> Any:
    """The rows as they go on the wire (what the actor's worktree.list sends)."""
    return [to_builtins(row) for row in build_rows(facts, repo, meta, roots)]


def _facts() -> RepoFacts:
    facts = RepoFacts(repo_id="r1", path="/src/app")
    apply_listing(facts, [MAIN, MADE, HAND])
    apply_dirty(facts, "/ws/app/task", DirtyCounts(unstaged=2))
    return facts


def test_rows_merge_meta_and_classify_ownership() -> None:
    """Evidence in meta makes a row orca-managed with its display name; others fall back (§5.2, §5.3)."""
    meta = {"r1::/ws/app/task": WorktreeMeta(display_name="My task", orca_created_at=1)}
    roots = workspace_roots({"r1": REPO}, GlobalSettings(workspace_dir="/ws"))
    rows = {r["path"]: r for r in _wire(_facts(), REPO, meta, roots)}
    assert rows["/ws/app/task"]["displayName"] == "My task"
    assert rows["/ws/app/task"]["ownership"] == "orca-managed"
    assert rows["/ws/app/task"]["gitStatus"] == {
        "staged": 0, "unstaged": 2, "untracked": 0, "conflicted": 0, "total": 2,
    }  # fmt: skip
    assert rows["/src/app"]["displayName"] == "main" and rows["/src/app"]["isMainWorktree"]
    assert rows["/src/app"]["gitStatus"] is None  # not computed yet
    assert rows["/tmp/hand"]["ownership"] == "external" and rows["/tmp/hand"]["isDetached"]
    assert rows["/tmp/hand"]["displayName"] == "app"  # repo name before the folder name


def test_rows_spell_out_defaults() -> None:
    """Every row carries the fields readers need even when they hold defaults."""
    [row, *_] = _wire(_facts(), REPO, {}, [])
    for key in ("visible", "isBare", "locked", "ownership", "head", "branch", "selectedCheckout"):
        assert key in row


def test_folder_repo_rows_include_workspace_instances() -> None:
    """A folder repo lists its folder and each ::workspace: instance found in meta (§5.1 B)."""
    folder = Repo(id="f1", path="/notes", display_name="notes", kind="folder")
    facts = RepoFacts(repo_id="f1", path="/notes", kind="folder")
    apply_listing(
        facts, [WorktreeFacts(path="/notes", head=None, branch=None, is_main=True, admin_dir="")]
    )
    meta = {
        "f1::/notes::workspace:abc": WorktreeMeta(display_name="second"),
        "r9::/other": WorktreeMeta(display_name="not mine"),
    }
    rows = _wire(facts, folder, meta, [])
    assert [r["id"] for r in rows] == ["f1::/notes", "f1::/notes::workspace:abc"]
    assert rows[1]["path"] == "/notes" and rows[1]["displayName"] == "second"


def test_unavailable_repo_has_no_rows() -> None:
    """While a repo is unavailable it contributes no rows (it is reported separately)."""
    assert _wire(RepoFacts(repo_id="r1", path="/gone", unavailable="gone"), REPO, {}, []) == []


def test_rows_list_main_first_then_by_path() -> None:
    """Row order is stable: the main worktree, then the others sorted by path."""
    facts = RepoFacts(repo_id="r1", path="/src/app")
    apply_listing(facts, [HAND, MADE])
    apply_listing(facts, [MADE, HAND, MAIN])  # main arrives last
    assert [r["path"] for r in _wire(facts, REPO, {}, [])] == [
        "/src/app", "/tmp/hand", "/ws/app/task",
    ]  # fmt: skip


def test_listing_round_trips_through_the_contract() -> None:
    """A listing encodes through the codec (no reserved codec key leaks onto the wire) and
    decodes with the op's own result type."""
    rows = build_rows(_facts(), REPO, {}, [])
    wire = to_builtins(gw.WorktreeList(worktrees=rows, unavailable_repos=[]))
    assert all("__orcaExtra__" not in row for row in wire["worktrees"])
    decoded = gw.WORKTREE_LIST.decode_result(msgspec.msgpack.encode(wire))
    assert decoded.worktrees == rows
    assert decoded.worktrees[2].git_status == gw.GitStatus(
        staged=0, unstaged=2, untracked=0, conflicted=0, total=2
    )


def test_fact_events_become_the_contract_structs() -> None:
    """Each fact change is published as its declared event, with the worktree id made."""
    facts = RepoFacts(repo_id="r1", path="/src/app")
    [added] = apply_listing(facts, [MADE]).events
    event = fact_event_to_wire(added)
    assert isinstance(event, gw.WorktreeAdded) and event.worktree_id == "r1::/ws/app/task"
    assert event.git.branch == "refs/heads/task" and event.git.is_detached is False
    [changed] = apply_dirty(facts, "/ws/app/task", DirtyCounts(untracked=1))
    wire = msgspec.to_builtins(fact_event_to_wire(changed))
    assert wire["gitStatus"]["untracked"] == 1 and wire["git"]["isSparse"] is None
