"""kill -9 of orch, store and orcad at the steps of a run: no task runs twice, none is lost.

Each case starts a run of two fake agents (``support/orch_agent.sh``: every prompt it
receives is logged) and kills one process at one step:

* orch, right after a step acted and before its result was written (a worktree made,
  a terminal spawned, a prompt typed: three crashes in one run; the branch merged):
  orch kills itself
  there (``ORCA_ORCH_CRASH_AFTER``, ``actors/orch/faults.py``), the exact crash of seed
  02 §13 "spawn physically committed, reply not returned";
* store, while the worktrees are being made (gitwatch needs it for their meta);
* orcad, as the worktrees are being made, or with every terminal spawned and no agent
  ready yet (before the prompt): the whole tree goes, the keeper keeps the terminals,
  ``orca up`` brings it back.

Then, every time: each variant has exactly one worktree and one terminal (one pane),
its agent received the prompt exactly once, and every variant reached idle.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from support.chaos import orca_up, orcad_pid, wait_gone
from support.journey import User, make_git_repo
from support.orch import orch_user, prompts, run_watcher, states

from orca.client.sync import invoke
from orca.contracts import orch
from orca.contracts import supervisor as sup

PROMPT = "write the answer"


@pytest.fixture
def world(orca_home: Path, tmp_path: Path) -> Iterator[tuple[User, Path, Path]]:
    user, log = orch_user(orca_home, tmp_path)
    project = make_git_repo(tmp_path / "project")
    yield user, log, project
    user.run("down", "--kill-terminals")


def start(user: User, project: Path, **env: str) -> str:
    user.env.update(env)
    user.ok("up")
    user.ok("repo", "add", str(project))
    created = user.json("run", "new", "project", PROMPT, "--agents", "claude,codex")
    return str(created["run"]["run"])


def actor_pid(user: User, name: str) -> int:
    status = invoke(sup.STATUS, paths=user.paths, timeout=5)
    (actor,) = [a for a in status.actors if a.name == name]
    return actor.pid or 0


def all_idle(info: orch.RunInfo) -> bool:
    return set(states(info).values()) == {"idle"}


def assert_once_each(user: User, log: Path, info: orch.RunInfo) -> None:
    """One worktree, one terminal, one prompt per variant; nothing else made."""
    worktrees = [w for w in user.json("worktree", "ls")["worktrees"] if info.run in w["path"]]
    assert sorted(w["path"] for w in worktrees) == sorted(v.worktree_path for v in info.variants)
    terminals = user.json("term", "ls")["sessions"]
    ours = [t for t in terminals if t["paneKey"] in {v.pane_key for v in info.variants}]
    assert len(ours) == len(terminals) == len(info.variants), terminals
    assert sorted(t["worktreeId"] for t in ours) == sorted(v.worktree_id for v in info.variants)
    assert sorted(prompts(log)) == sorted((v.pane_key, PROMPT) for v in info.variants)


async def wait_idle(user: User, run: str) -> orch.RunInfo:
    with trio.fail_after(60):
        async with run_watcher(user.paths) as watcher:
            return await watcher.until(run, all_idle)


async def test_orch_killed_between_an_act_and_its_result(world: tuple[User, Path, Path]) -> None:
    """orch dies after making a worktree, again after spawning a terminal, again after
    typing a prompt's body (before its submit key), again after the submit key, each
    time before writing it down; each restarted orch adopts what was made and types
    nothing twice (the body typed again read `write the answerwrite the answer`)."""
    user, log, project = world
    steps = ("worktree", "terminal", "prompt-body", "prompt")
    run = start(user, project, ORCA_ORCH_CRASH_AFTER=",".join(steps))
    info = await wait_idle(user, run)
    for step in steps:
        assert (user.paths.data_dir / "orch" / f"crashed-after-{step}").exists()
    assert_once_each(user, log, info)


async def test_orch_stopped_while_typing_a_prompt_types_it_once(
    world: tuple[User, Path, Path],
) -> None:
    """orch is asked to stop (SIGTERM, as `orca down` asks it) while a prompt's body is
    on its way to ptyd: it writes down that the body was typed before it stops, so the
    restarted orch only submits it (CI read `write the answerwrite the answer` after an
    `orca down` that closed orch's database between the body and that record)."""
    user, log, project = world
    run = start(user, project, ORCA_ORCH_STOP_AT="prompt-body")
    info = await wait_idle(user, run)
    assert (user.paths.data_dir / "orch" / "stopped-at-prompt-body").exists()
    assert_once_each(user, log, info)


async def test_store_killed_while_the_worktrees_are_made(world: tuple[User, Path, Path]) -> None:
    """The store dies as the run starts; the creates fail or time out and are retried by
    looking first; every variant gets its one worktree."""
    user, log, project = world
    run = start(user, project)
    os.kill(actor_pid(user, "store"), signal.SIGKILL)
    info = await wait_idle(user, run)
    assert_once_each(user, log, info)


@pytest.mark.parametrize("when", ["spawn", "before-prompt"])
async def test_orcad_killed_during_spawn_or_before_the_prompt(
    world: tuple[User, Path, Path], when: str
) -> None:
    """orcad, and with it every actor, dies as the run starts (worktrees being made) or
    once every terminal runs and no agent is ready yet (they start slowly); after `orca
    up` the run goes on, with the same terminals in the second case."""
    user, log, project = world
    run = start(user, project, FAKE_AGENT_START_DELAY="3")
    spawned = None
    if when == "before-prompt":
        with trio.fail_after(30):
            async with run_watcher(user.paths) as watcher:
                spawned = await watcher.until(
                    run, lambda i: all(v.phase == "terminal" for v in i.variants)
                )
    pid = orcad_pid(user.paths)
    assert pid is not None
    actors = [a.pid for a in invoke(sup.STATUS, paths=user.paths, timeout=5).actors if a.pid]
    os.kill(pid, signal.SIGKILL)
    with trio.fail_after(30):
        await wait_gone([pid, *actors])
    assert prompts(log) == []
    result = await trio.to_thread.run_sync(orca_up, user.env)
    assert result.returncode == 0, result.stderr
    info = await wait_idle(user, run)
    if spawned is not None:
        assert {v.session_id for v in info.variants} == {v.session_id for v in spawned.variants}
    assert_once_each(user, log, info)


async def test_orch_killed_during_the_merge(world: tuple[User, Path, Path]) -> None:
    """orch dies after gitwatch merged, before recording it: the caller's retry records
    the merge (gitwatch finds nothing more to merge) and archives the other variant; the
    base has the change once."""
    user, log, project = world
    run = start(user, project, ORCA_ORCH_CRASH_AFTER="merge")
    info = await wait_idle(user, run)
    first = await trio.to_thread.run_sync(lambda: user.run("run", "merge", run, "codex-1"))
    assert first.returncode != 0  # orch died under the call
    with trio.fail_after(30):
        while True:  # the retry a user (or script) makes; orch is restarting meanwhile
            again = await trio.to_thread.run_sync(lambda: user.run("run", "merge", run, "codex-1"))
            if again.returncode == 0:
                break
            assert "unavailable" in again.stderr or "not running" in again.stderr, again.stderr
            async with run_watcher(user.paths) as watcher:
                await watcher.until(run, lambda _i: True)
    merged = user.json("run", "show", run)["run"]
    assert {v["variant"]: v["state"] for v in merged["variants"]} == {
        "claude-1": "archived",
        "codex-1": "merged",
    }
    log_main = user_git(project, "log", "--format=%s", "main")
    assert log_main.count("codex-1") == 1, log_main
    assert_once_each(user, log, info)


def user_git(repo: Path, *args: str) -> str:
    import subprocess

    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout
