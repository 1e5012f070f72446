"""``orca run ... --host H``: another machine's orch through its gateway (issue 26).

Two trees on loopback: buildbox (the fake agents on its PATH, a repo) authorizes
laptop's key with full access; laptop authorizes buildbox's read-only. laptop starts a
run on buildbox, follows it, messages a variant; buildbox cannot start one on laptop.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from support.journey import make_git_repo
from support.orch import fake_agents, prompts, run_watcher, states
from support.remote import Tree, free_port, start_tree, stop_tree


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Tree, Tree, Path]]:
    log = tmp_path / "prompts.log"
    log.touch()
    agents = {
        "PATH": f"{fake_agents(tmp_path / 'bin')}{os.pathsep}{os.environ.get('PATH', '')}",
        "FAKE_AGENT_LOG": str(log),
        "FAKE_ORCA": f"{sys.executable} -m orca.cli.main",
    }
    trees: list[Tree] = []
    try:
        ports = free_port(), free_port()
        buildbox = start_tree(
            tmp_path / "buildbox", listen=f"tcp://127.0.0.1:{ports[0]}", extra=agents
        )
        trees.append(buildbox)
        laptop = start_tree(tmp_path / "laptop", listen=f"tcp://127.0.0.1:{ports[1]}")
        trees.append(laptop)
        for (me, name), (other, other_name), port, access in (
            ((laptop, "laptop"), (buildbox, "buildbox"), ports[0], ()),
            ((buildbox, "buildbox"), (laptop, "laptop"), ports[1], ("--read-only",)),
        ):
            other.ok("host", "authorize", *access, "--name", name, me.ok("host", "key").strip())
            key = other.ok("host", "key", "--server").strip()
            me.ok("host", "add", other_name, f"tcp://127.0.0.1:{port}", "--server-key", key)
        buildbox.ok("repo", "add", str(make_git_repo(tmp_path / "project")))
        yield buildbox, laptop, log
    finally:
        for tree in trees:
            tree.cli("down", "--kill-terminals")
            stop_tree(tree)


async def test_a_run_started_and_followed_from_another_machine(
    pair: tuple[Tree, Tree, Path],
) -> None:
    """laptop's full key starts a run on buildbox, sees it in `run ls`/`run show`, sends
    a variant a message; buildbox's read-only key on laptop may list, not start."""
    buildbox, laptop, log = pair
    created = laptop.json(
        "run", "new", "project", "do it", "--agents", "claude", "--host", "buildbox"
    )
    run = created["run"]["run"]
    with trio.fail_after(60):
        async with run_watcher(buildbox.paths) as watcher:
            await watcher.until(run, lambda i: set(states(i).values()) == {"idle"})
    assert [p for _pane, p in prompts(log)] == ["do it"]
    shown = laptop.json("run", "show", run, "--host", "buildbox")["run"]
    assert [(v["variant"], v["state"]) for v in shown["variants"]] == [("claude-1", "idle")]
    assert [r["run"] for r in laptop.json("run", "ls", "--host", "buildbox")["runs"]] == [run]
    receipt = laptop.json("run", "send", run, "claude-1", "hi", "--host", "buildbox")["receipt"]
    assert receipt["recipients"] == ["claude-1"]
    assert buildbox.json("run", "inbox", run, "claude-1")["messages"][0]["body"] == "hi"
    # Seed 02-56: an inbox is read with a full key (laptop's), never a read-only one.
    remote = laptop.json("run", "inbox", run, "claude-1", "--host", "buildbox")["messages"]
    assert [m["body"] for m in remote] == ["hi"]
    private = buildbox.cli("run", "inbox", "r000000", "claude-1", "--host", "laptop")
    assert private.returncode != 0 and "forbidden" in private.stderr, private
    assert buildbox.json("run", "ls", "--host", "laptop")["runs"] == []
    refused = buildbox.cli("run", "new", "x", "y", "--agents", "claude", "--host", "laptop")
    assert refused.returncode != 0 and "forbidden" in refused.stderr


def test_a_hosts_automations_are_listed_read_only_from_another(
    pair: tuple[Tree, Tree, Path],
) -> None:
    """buildbox's automation (issue 38) is listed and shown from laptop through the
    gateway, and from laptop's own read-only key for buildbox too: lists only."""
    buildbox, laptop, _log = pair
    buildbox.ok("auto", "add", "weekly", "project", "hunt flaky tests", "--agents", "claude",
                "--cron", "0 4 * * 6", "--tz", "UTC")  # fmt: skip
    listed = laptop.json("auto", "ls", "--host", "buildbox")["automations"]
    assert [(i["automation"]["name"], i["automation"]["schedule"]["cron"]) for i in listed] == [
        ("weekly", "0 4 * * 6")
    ]
    assert listed[0]["nextDueMs"] is not None
    shown = laptop.json("auto", "show", "weekly", "--host", "buildbox")["automation"]
    assert shown["automation"]["prompt"] == "hunt flaky tests" and shown["runs"] == []
    assert "weekly" in laptop.ok("auto", "ls", "--host", "buildbox")
    assert buildbox.json("auto", "ls", "--host", "laptop")["automations"] == []
