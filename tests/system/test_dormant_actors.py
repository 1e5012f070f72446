"""Issue 36: what nobody uses does not run. A fresh `orca up` leaves orch, the gateway
and the vault dormant (each decided so itself: no run or automation, nothing to serve,
nothing asked); each starts when a client asks for it, from the CLI (`orca vault`,
`orca run`, `orca host add`) or from another actor (orch asking the vault), and from
then on is supervised like the rest: killed, it is restarted, not put back to sleep.
A tree with something to do keeps them up at the next `orca up`."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from support.journey import User, make_git_repo
from support.lifecycle import lifecycle
from support.orch import orch_user, run_watcher
from support.procs import agent_roots
from support.vault import claude_assistant, claude_path, claude_usage, write_jsonl

from orca.contracts import supervisor as sup

SLEEPERS = ("orch", "gateway", "vault")


@pytest.fixture
def user(orca_home: Path, tmp_path: Path) -> Iterator[User]:
    user, _log = orch_user(orca_home, tmp_path)
    yield user
    user.run("down", "--kill-terminals")


def states(user: User) -> dict[str, tuple[str, int | None]]:
    return {a["name"]: (a["state"], a["pid"]) for a in user.json("status", "--json")["actors"]}


def running(user: User, name: str) -> int:
    state, pid = states(user)[name]
    assert state == "running" and pid, (name, state)
    return pid


async def test_a_fresh_tree_runs_none_of_them_until_each_is_asked_for(
    user: User, tmp_path: Path
) -> None:
    said = user.ok("up")
    assert "every actor ready" in said, said
    before = states(user)
    assert {n: before[n] for n in SLEEPERS} == {n: ("dormant", None) for n in SLEEPERS}
    assert all(state == "running" for n, (state, _) in before.items() if n not in SLEEPERS)
    for name in SLEEPERS:
        assert "dormant until asked" in user.paths.log_file(name).read_text()
    shown = user.ok("status")
    assert "dormant" in shown and "starts when asked" in shown

    # The vault, asked from the CLI: the answer comes from the vault it started.
    assert user.json("vault", "usage")["total"]["requests"] == 0
    running(user, "vault")
    assert states(user)["orch"] == ("dormant", None)

    # orch, asked by `orca run new`; the run goes on as ever.
    project = make_git_repo(tmp_path / "project")
    user.ok("repo", "add", str(project))
    run = user.json("run", "new", "project", "write it", "--agents", "claude")["run"]["run"]
    orch_pid = running(user, "orch")
    assert user.json("run", "show", run)["run"]["run"] == run

    # The gateway, by a host to follow.
    user.ok("host", "add", "buildbox", "tcp://127.0.0.1:9", "--server-key", "x" * 40)
    running(user, "gateway")

    # Woken, orch is supervised: killed, it comes back running (never dormant again).
    with trio.fail_after(60):
        async with lifecycle(user.paths.home) as (mirror, rec):
            os.kill(orch_pid, signal.SIGKILL)
            await mirror.wait_until(
                lambda m: rec.seen(sup.STARTED, "orch", lambda d: d.pid != orch_pid)
            )
    assert states(user)["orch"][0] == "running"


async def test_another_actor_asking_wakes_the_vault(user: User, tmp_path: Path) -> None:
    """A run's view carries its agents' token usage, which orch asks the vault for: the
    vault starts for orch's asking (its async client); nothing here calls the vault."""
    user.ok("up")
    project = make_git_repo(tmp_path / "project")
    user.ok("repo", "add", str(project))
    assert states(user)["vault"] == ("dormant", None)
    run = user.json("run", "new", "project", "write it", "--agents", "claude")["run"]["run"]
    with trio.fail_after(60):
        async with run_watcher(user.paths) as watcher:
            await watcher.until(run, lambda i: all(v.prompted_at_ms for v in i.variants))
    await trio.to_thread.run_sync(user.ok, "run", "show", run)
    running(user, "vault")
    assert "vault asked for: starting it" in user.paths.log_file("orcad").read_text()


def test_a_tree_with_work_keeps_orch_up_at_the_next_start(user: User, tmp_path: Path) -> None:
    """A run in orch's ledger (and a host in the gateway's list) keep them up after
    `orca down` / `orca up`; the vault, asked by nobody yet, sleeps again."""
    user.ok("up")
    project = make_git_repo(tmp_path / "project")
    user.ok("repo", "add", str(project))
    user.json("run", "new", "project", "write it", "--agents", "claude")
    user.ok("host", "add", "buildbox", "tcp://127.0.0.1:9", "--server-key", "x" * 40)
    user.ok("down", "--kill-terminals")
    user.ok("up")
    now = states(user)
    assert now["orch"][0] == "running" and now["gateway"][0] == "running", now
    assert now["vault"] == ("dormant", None), now


def test_the_vault_started_by_a_question_answers_it_from_every_transcript(
    user: User, orca_home: Path
) -> None:
    """Transcripts written while nothing ran: the vault woken by `orca vault usage`
    answers from all of them, not from what its first pass had read by then."""
    root = agent_roots(orca_home)["claude"]
    sessions, turns = 300, 20
    usage = claude_usage(10, 20)
    for s in range(sessions):
        session = f"s-{s:04d}"
        lines = [
            claude_assistant(session, "/work/p", message_id=f"m{s}-{t}", request_id=f"r{s}-{t}",
                             text="done", usage=usage, second=t)
            for t in range(turns)
        ]  # fmt: skip
        write_jsonl(claude_path(root, "/work/p", session), lines)
    user.ok("up")
    assert states(user)["vault"] == ("dormant", None)
    total = user.json("vault", "usage")["total"]
    assert total["requests"] == sessions * turns, total
