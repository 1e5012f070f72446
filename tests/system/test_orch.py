"""``orca run`` over the real tree with fake agents: prompt → N variants → compare → merge.

The fake ``claude`` and ``codex`` (``support/orch_agent.sh``) speak the hook protocol
through the installed hook script, log every prompt they receive, commit an edit in
their worktree, report through ``orca run report`` from their pane, and read their
inbox with ``orca run inbox`` (after changing their session id, as an agent that
compacted its context would).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
import trio
from support.journey import User, make_git_repo, recorded, wait_for_output
from support.orch import orch_user, prompts, run_watcher, states

from orca.client.sync import invoke
from orca.contracts import orch, ptyd
from orca.wire.errors import BadRequest

PROMPT = "write the answer"
CHECK = "cat answer-*.txt"


@pytest.fixture
def world(orca_home: Path, tmp_path: Path) -> Iterator[tuple[User, Path, Path]]:
    user, log = orch_user(orca_home, tmp_path)
    project = make_git_repo(tmp_path / "project")
    user.ok("up")
    try:
        user.ok("repo", "add", str(project))
        yield user, log, project
    finally:
        user.run("down", "--kill-terminals")


def subjects(repo: Path, ref: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "log", "--format=%s", ref],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def files_on(repo: Path, ref: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "--name-only", ref],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def existing(paths: Iterable[str]) -> int:
    return sum(Path(p).exists() for p in paths)


def idle_and_checked(info: orch.RunInfo) -> bool:
    return all(v.state == "idle" and v.check is not None for v in info.variants)


async def test_a_run_from_prompt_to_merge(world: tuple[User, Path, Path]) -> None:
    """Three variants each get one worktree, one terminal and the prompt once; run show
    reports idle, the check's result, the diffstat and the worker's report; one variant
    is merged, the others archived with their worktrees kept; `run rm` removes only the
    worktrees no terminal lives in."""
    user, log, project = world
    created = user.json(
        "run", "new", "project", PROMPT, "--agents", "claude:2,codex:1", "--check", CHECK,
        "--name", "answer",
    )["run"]  # fmt: skip
    run = created["run"]
    assert [v["variant"] for v in created["variants"]] == ["claude-1", "claude-2", "codex-1"]
    with trio.fail_after(60):
        async with run_watcher(user.paths) as watcher:
            info = await watcher.until(run, idle_and_checked)
    variants = {v.variant: v for v in info.variants}
    # one prompt per variant, each in its own pane, exactly once
    assert sorted(prompts(log)) == sorted((v.pane_key, PROMPT) for v in info.variants)
    worktrees = user.json("worktree", "ls")["worktrees"]
    for v in info.variants:
        assert [w["path"] for w in worktrees if w["path"] == v.worktree_path] == [v.worktree_path]
        assert v.check is not None and v.check.exit_code == 0
        assert f"{v.agent}: {PROMPT}" in v.check.tail
        assert (v.report_status, v.report) == ("done", f"answer-{v.agent}.txt committed")
        assert v.elapsed_s is not None and v.prompted_at_ms is not None
    terminals = user.json("term", "ls")["sessions"]
    handles = {t["sessionId"]: t["handle"] for t in terminals}
    assert {v.handle for v in info.variants} == {handles[v.session_id] for v in info.variants}
    assert len({t["paneKey"] for t in terminals}) == len(terminals) == 3
    shown = user.ok("run", "show", run)
    for name in variants:
        assert name in shown and "idle" in shown

    for v in info.variants:
        assert v.diffstat is not None and (v.diffstat.files, v.diffstat.insertions) == (1, 1)
    merged = user.json("run", "merge", run, "claude-2", "--squash")["merge"]
    assert merged["archived"] == ["claude-1", "codex-1"]
    assert subjects(project, "main").count(f"claude: {PROMPT}") <= 1
    assert "answer-claude.txt" in files_on(project, "main")
    after = user.json("run", "show", run)["run"]
    assert {v["variant"]: v["state"] for v in after["variants"]} == {
        "claude-1": "archived",
        "claude-2": "merged",
        "codex-1": "archived",
    }
    assert existing(v.worktree_path for v in info.variants) == 3
    again = user.run("run", "merge", run, "codex-1")
    assert again.returncode == 2 and "already merged claude-2" in again.stderr

    # A refusal of the current state: exit 2 (README "Exit codes"), with --json too.
    kept = user.run("run", "rm", run)
    assert kept.returncode == 2 and kept.stderr.count("a terminal runs there") == 3
    kept = user.run("run", "rm", run, "--json")
    assert kept.returncode == 2, kept.stderr
    assert len(json.loads(kept.stdout)["removed"]["kept"]) == 3
    for v in info.variants:
        user.ok("term", "send", v.handle, "exit", "--enter")
    with trio.fail_after(30):
        async with run_watcher(user.paths) as watcher:
            await watcher.until(run, lambda i: "idle" not in states(i).values())
    gone = user.run("run", "rm", run)
    assert gone.returncode == 0, gone.stderr
    assert existing(v.worktree_path for v in info.variants) == 0


async def test_messages_have_receipts_and_survive_compaction(
    world: tuple[User, Path, Path],
) -> None:
    """A keyed send twice is one message with one receipt; the variant's pane reads its
    inbox with `orca run inbox` after its agent changed session ids (compaction) and
    acknowledges it; the cursor holds."""
    user, _log, _project = world
    run = user.json("run", "new", "project", PROMPT, "--agents", "claude,codex")["run"]["run"]
    with trio.fail_after(60):
        async with run_watcher(user.paths) as watcher:
            info = await watcher.until(run, lambda i: set(states(i).values()) == {"idle"})
    first = user.json("run", "send", run, "all", "use the helper", "--key", "k1")["receipt"]
    second = user.json("run", "send", run, "all", "use the helper", "--key", "k1")["receipt"]
    assert first["recipients"] == ["claude-1", "codex-1"]
    assert (first["seq"], first["duplicate"], second["duplicate"]) == (second["seq"], False, True)
    inbox = user.json("run", "inbox", run, "codex-1")["messages"]
    assert [(m["from"], m["body"]) for m in inbox] == [("operator", "use the helper")]
    # Seed 02-49: a send without --key carries a key made by the CLI, so the same
    # request again (a retry after a lost reply, by any hop) is the same message.
    unkeyed = user.json("run", "send", run, "claude-1", "one more")["receipt"]
    assert unkeyed["key"].startswith("cli-") and not unkeyed["duplicate"]
    retried = invoke(
        orch.SEND,
        orch.SendArgs(run=run, to="claude-1", body="one more", key=unkeyed["key"]),
        paths=user.paths,
    )
    assert (retried.duplicate, retried.seq) == (True, unkeyed["seq"])
    # Seed 02-48: an ack past the last delivered message is refused; the cursor holds.
    past = orch.AckArgs(run=run, variant="codex-1", upto=10**9)
    with pytest.raises(BadRequest, match="past the last message delivered"):
        invoke(orch.ACK, past, paths=user.paths)

    codex = next(v for v in info.variants if v.variant == "codex-1")
    with trio.fail_after(30):
        async with recorded(user.orca_home, ptyd.CONTRACT, ptyd.SNAPSHOT) as (mirror, rec, client):
            await client.invoke(
                ptyd.WRITE, ptyd.WriteArgs(session_id=codex.session_id, text="inbox\r")
            )
            out = await wait_for_output(client, mirror, rec, codex.session_id, b"codex: inbox read")
    assert b"inbox: use the helper" in out
    assert user.json("run", "inbox", run, "codex-1")["messages"] == []
    assert len(user.json("run", "inbox", run, "claude-1")["messages"]) == 2


def test_bad_arguments_are_clear_usage_errors(world: tuple[User, Path, Path]) -> None:
    """An unknown agent, a bad count, an unknown run or repo: exit 2 and a message."""
    user, _log, _project = world
    for argv, needle in (
        (("run", "new", "project", "x", "--agents", "vim:1"), "unknown agent 'vim'"),
        (("run", "new", "project", "x", "--agents", "claude:zero"), "not a count"),
        (("run", "new", "nope", "x", "--agents", "claude"), "nope"),
        (("run", "show", "r000000"), "no run 'r000000'"),
        (("run", "inbox", "r000000"), "give both RUN and VARIANT"),
    ):
        result = user.run(*argv)
        assert result.returncode == 2, (argv, result.stderr)
        assert needle in result.stderr, (argv, result.stderr)
