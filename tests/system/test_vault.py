"""`orca vault` against real trees: every agent's transcripts searched and costed, a
session bound to its pane through the installed hook script, another host's vault
asked through its gateway - only where that host shares it.

Two trees on loopback (``support.remote``): buildbox shares its vault
(``ORCA_GATEWAY_SHARE_VAULT=1``), laptop does not (the default); each has authorized
the other's client key and added it as a host. buildbox holds a git repo
``project``, transcripts of all three agents written under its agent directories, and
one Claude session whose hook (run by a real terminal of ``project``) names its
transcript, kept outside those directories. The tests only read: one world per module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.journey import make_git_repo
from support.procs import agent_roots
from support.remote import Tree, free_port, start_tree, stop_tree
from support.vault import (
    claude_assistant,
    claude_path,
    claude_usage,
    claude_user,
    codex_meta,
    codex_path,
    codex_tokens,
    codex_turn,
    codex_user,
    gemini_header,
    gemini_path,
    gemini_reply,
    gemini_tokens,
    gemini_user,
    write_jsonl,
)

from orca.client.sync import subscribe
from orca.contracts import vault

FAST = {"ORCA_VAULT_SCAN_S": "0.3"}
WAIT_S = 60.0


@dataclass
class World:
    buildbox: Tree
    laptop: Tree
    project: Path
    pane_key: str


def _index(tree: Tree, project: Path, bound: Path) -> None:
    roots = agent_roots(tree.home)
    cwd = str(project)
    write_jsonl(claude_path(roots["claude"], cwd, "S-free"), [
        claude_user("S-free", cwd, "rename the flaky_test helper"),
        claude_assistant("S-free", cwd, message_id="f1", request_id="q1", model="claude-opus-4-5-20251101",
                         text="renamed", usage=claude_usage(1000, 2000, cache_read=10_000)),
    ])  # fmt: skip
    write_jsonl(bound, [
        claude_user("S-bound", cwd, "make the flaky_test deterministic"),
        claude_assistant("S-bound", cwd, message_id="b1", request_id="q2", model="claude-opus-4-5-20251101",
                         text="seeded it", usage=claude_usage(500, 1000, cache_5m=4000)),
    ])  # fmt: skip
    write_jsonl(codex_path(roots["codex"], "X-cli"), [
        codex_meta("X-cli", cwd), codex_turn(cwd, "gpt-5.1-codex"), codex_user("explain flaky_test"),
        codex_tokens(10_000, 8_000, 500, 100),
    ])  # fmt: skip
    write_jsonl(gemini_path(roots["gemini"], cwd, "G-clixxxx"), [
        gemini_header("G-clixxxx", cwd), gemini_user("u1", "list every flaky_test"),
        gemini_reply("g1", "three of them", tokens=gemini_tokens(2000, 300, cached=1000)),
    ])  # fmt: skip


def _wait(tree: Tree, done: Any) -> Any:
    """``vault.status`` once ``done`` holds, asked again after each ``vault.changed``."""
    from orca.client.sync import invoke

    invoke(vault.STATUS, paths=tree.paths, timeout=10.0)  # asked: a dormant vault starts
    sub = subscribe(vault.CONTRACT.actor, [vault.CHANGED], consumer="tests", paths=tree.paths)
    try:
        assert sub.wait_live(10.0)
        for _ in range(1000):
            status = invoke(vault.STATUS, paths=tree.paths, timeout=10.0)
            if done(status) and status.search_pending == 0:  # search follows the rows
                return status
            assert sub.receive(WAIT_S) is not None, f"the vault stopped changing: {status}"
        raise AssertionError(f"never done: {status}")
    finally:
        sub.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("vault")
    trees: list[Tree] = []
    try:
        ports = free_port(), free_port()
        buildbox = start_tree(tmp / "buildbox", listen=f"tcp://127.0.0.1:{ports[0]}",
                              extra={**FAST, "ORCA_GATEWAY_SHARE_VAULT": "1"})  # fmt: skip
        trees.append(buildbox)
        laptop = start_tree(tmp / "laptop", listen=f"tcp://127.0.0.1:{ports[1]}", extra=FAST)
        trees.append(laptop)
        for (me, name), (other, other_name), port in (
            ((laptop, "laptop"), (buildbox, "buildbox"), ports[0]),
            ((buildbox, "buildbox"), (laptop, "laptop"), ports[1]),
        ):
            other.ok("host", "authorize", "--read-only", "--name", name, me.ok("host", "key").strip())
            key = other.ok("host", "key", "--server").strip()
            me.ok("host", "add", other_name, f"tcp://127.0.0.1:{port}", "--server-key", key)
        project = make_git_repo(tmp / "project")
        buildbox.ok("repo", "add", str(project))
        bound = tmp / "elsewhere" / "S-bound.jsonl"
        _index(buildbox, project, bound)
        hook = buildbox.paths.hooks_dir / "orca-agent-hook.sh"
        payload = json.dumps({"hook_event_name": "SessionStart", "session_id": "S-bound",
                              "transcript_path": str(bound), "cwd": str(project), "source": "startup"})  # fmt: skip
        session = buildbox.new_terminal(
            "project", "/bin/sh", "-c", f"printf '%s' '{payload}' | {hook} claude; exec sleep 600"
        )
        _wait(buildbox, lambda s: s.transcripts == 4 and s.bindings == 1 and s.unbound_transcripts == 3)
        yield World(buildbox, laptop, project, session["paneKey"])
    finally:
        for tree in reversed(trees):
            stop_tree(tree)


def test_search_finds_every_agents_words_bound_and_unbound(world: World) -> None:
    """One word, four agents' sessions, newest first; the hook-bound one carries its
    pane and its repo, the others are attributed by directory and marked unbound."""
    hits = world.buildbox.json("vault", "search", "flaky_test")["hits"]
    assert sorted((h["agent"], h["sessionId"]) for h in hits) == [
        ("claude", "S-bound"), ("claude", "S-free"), ("codex", "X-cli"), ("gemini", "G-clixxxx"),
    ]  # fmt: skip
    by_session = {h["sessionId"]: h for h in hits}
    bound = by_session["S-bound"]
    assert (bound["bound"], bound["paneKey"], bound["repo"]) == (True, world.pane_key, "project")
    assert all(not h["bound"] and h["repo"] == "project" for s, h in by_session.items() if s != "S-bound")
    table = world.buildbox.ok("vault", "search", "flaky_test", "--agent", "claude")
    assert "project (unbound)" in table and "make the flaky_test deterministic" in table


def test_usage_by_repo_and_by_pane_are_the_hand_computed_costs(world: World) -> None:
    report = world.buildbox.json("vault", "usage", "--by", "repo")
    [row] = report["rows"]
    # claude-opus-4-5 ($5 in, $25 out, 5m write $6.25, read $0.50 /MTok):
    #   S-free  1000*5 + 2000*25 + 10000*0.50 = 5000 + 50000 + 5000  = 60000
    #   S-bound  500*5 + 1000*25 +  4000*6.25 = 2500 + 25000 + 25000 = 52500
    # gpt-5.1-codex ($1.25, cached $0.125, $10): (10000-8000)*1.25 + 8000*0.125 + 500*10
    #                                           = 2500 + 1000 + 5000 = 8500
    # gemini-2.5-pro ($1.25, cached $0.125, $10): (2000-1000)*1.25 + 1000*0.125 + 300*10
    #                                           = 1250 + 125 + 3000 = 4375
    # total 60000 + 52500 + 8500 + 4375 = 125375 µ$
    assert row["label"] == "project" and row["costUsd"] == pytest.approx(0.125375, abs=1e-12)
    assert (row["sessions"], row["unboundSessions"]) == (4, 3)
    panes = {r["key"]: r for r in world.buildbox.json("vault", "usage", "--by", "pane")["rows"]}
    assert panes[world.pane_key]["costUsd"] == pytest.approx(0.0525, abs=1e-12)
    table = world.buildbox.ok("vault", "usage", "--by", "session")
    assert "(unbound)" in table and "$0.0525" in table


def test_status_lists_the_vault(world: World) -> None:
    """Listed, and running once asked (it sleeps at `orca up` until then: issue 36)."""
    world.buildbox.json("vault", "status")
    actors = {a["name"]: a for a in world.buildbox.json("status")["actors"]}
    assert actors["vault"]["state"] == "running"


def test_a_host_that_shares_its_vault_answers_another(world: World) -> None:
    """laptop asks buildbox (a read-only key): the same answers buildbox gives itself."""
    remote = world.laptop.json("vault", "search", "flaky_test", "--host", "buildbox")
    local = world.buildbox.json("vault", "search", "flaky_test")
    assert remote["hits"] == local["hits"] and remote["host"] == "buildbox"
    usage = world.laptop.json("vault", "usage", "--by", "agent", "--host", "buildbox")
    assert usage["total"]["costUsd"] == pytest.approx(0.125375, abs=1e-12)


def test_a_host_that_does_not_share_refuses(world: World) -> None:
    done = world.buildbox.cli("vault", "search", "anything", "--host", "laptop")
    assert done.returncode == 1  # refused there, as any forbidden remote op
    assert "[forbidden]" in done.stderr and "does not share its transcript index" in done.stderr


def test_bad_input_is_a_clear_error(world: World) -> None:
    raw = world.buildbox.cli("vault", "search", '"unbalanced', "--raw")
    assert raw.returncode == 2 and "FTS5" in raw.stderr
    repo = world.buildbox.cli("vault", "usage", "--repo", "no-such-repo")
    assert repo.returncode == 2 and "no repo named" in repo.stderr
