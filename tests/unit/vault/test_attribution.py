"""Filing a transcript under its pane, worktree and repo (actors/vault/attribution.py)."""

from __future__ import annotations

import hashlib

from actors.vault.attribution import TranscriptFacts, Workspaces, attribute, matching_worktrees
from actors.vault.indexdb import Binding

REPO = ("r1", "/src/shop", "shop")
OLD, NEW = "r1::/src/wt/old-name", "r1::/src/wt/fix-login"
WS = Workspaces.build([REPO], [(NEW, "fix login", (OLD,)), ("r1::/src/wt/other", "", ())])
PANE = "tab-1:8f14e45f-ceea-467f-a9f0-1f2a7a9d0c11"


def facts(agent: str = "claude", session: str = "S", cwd: str = "", phash: str = "") -> TranscriptFacts:
    return TranscriptFacts(1, agent, session, "/t/S.jsonl", cwd, phash)


def test_a_binding_wins_over_the_directory_and_follows_a_rename() -> None:
    """A session bound before its worktree was renamed is filed under the new id."""
    bound = {("claude", "S"): Binding("claude", "S", "", PANE, "tab-1", OLD, 1)}
    place = attribute(facts(cwd="/src/wt/other"), bound, {}, WS)
    assert (place.worktree_id, place.repo_id, place.pane_key, place.bound) == (NEW, "r1", PANE, True)


def test_a_binding_without_a_worktree_is_placed_by_its_directory() -> None:
    bound = {("claude", "S"): Binding("claude", "S", "", PANE, "tab-1", "", 1)}
    place = attribute(facts(cwd="/src/wt/fix-login/sub/dir"), bound, {}, WS)
    assert (place.worktree_id, place.pane_key, place.bound) == (NEW, PANE, True)


def test_unbound_transcripts_go_by_directory_or_project_hash() -> None:
    """The deepest worktree holding the cwd (the repo's own directory is its main
    worktree); Gemini's chat files by the SHA-256 of the project root."""
    assert attribute(facts(cwd="/src/wt/fix-login/x"), {}, {}, WS).worktree_id == NEW
    assert attribute(facts(cwd="/src/shop/lib"), {}, {}, WS).worktree_id == "r1::/src/shop"
    assert attribute(facts(cwd="/elsewhere"), {}, {}, WS).worktree_id == ""
    phash = hashlib.sha256(b"/src/wt/fix-login").hexdigest()
    gemini = attribute(facts(agent="gemini", phash=phash), {}, {}, WS)
    assert (gemini.worktree_id, gemini.bound) == (NEW, False)
    by_path = {"/t/S.jsonl": Binding("codex", "other-id", "/t/S.jsonl", PANE, "tab-1", NEW, 1)}
    assert attribute(facts(agent="codex"), {}, by_path, WS).pane_key == PANE


def test_worktrees_are_named_by_id_directory_name_or_label() -> None:
    for ref in (NEW, OLD, "/src/wt/fix-login", "fix login", "other"):
        assert matching_worktrees(ref, WS, []) in ({NEW}, {"r1::/src/wt/other"}), ref
    assert matching_worktrees("nothing", WS, []) == set()
