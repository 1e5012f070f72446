"""``orca auto`` over the real tree (issue 38): fake agents speaking the hook protocol
(``support/orch_agent.sh``), schedules of a few seconds through ``--every``, and every
wait on an event (``auto.fired``, ``run.changed``, orch's heartbeat), never on the clock.

What each case shows:

* a firing starts one run: one worktree, one terminal, the prompt once;
* overlap refused: while the first firing's run still works (its agent starts slowly),
  the next due times are recorded ``skipped``, naming that run; none starts another;
* a run that cannot start (the agent's command gone from PATH, then the repo's folder
  gone) is recorded ``failed`` with the reason, and ``orca watch`` (its ``--json`` line,
  its ``--notify`` command) says so;
* kill -9 of orch between the intent and the act, and again between the act and the
  result (``ORCA_ORCH_CRASH_AFTER``): the due time ends with exactly one run;
* kill -9 of orcad (every actor with it) around a due time, and ``orca down`` across
  several due times: after ``orca up`` no due time fired twice, none was lost, and the
  times missed while down ran once (one ``catch-up`` record counting them).

Every case ends with :func:`assert_once_per_due_time`: one record per due time, none
left ``starting``, one run per started record (its key ``auto:<record id>``), one
prompt per variant of those runs.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trio
from support.chaos import orca_up, orcad_pid, wait_gone
from support.journey import User, make_git_repo
from support.orch import auto_watcher, orch_user, prompts, run_watcher
from support.procs import kill_all

from orca.client.sync import invoke
from orca.contracts import orch
from orca.contracts import supervisor as sup
from orca.model.automations import AutomationRun

PROMPT = "write the answer"
NAME = "answerer"


@pytest.fixture
def world(orca_home: Path, tmp_path: Path) -> Iterator[tuple[User, Path, Path]]:
    user, log = orch_user(orca_home, tmp_path)
    project = make_git_repo(tmp_path / "project")
    yield user, log, project
    user.run("down", "--kill-terminals")


def start(user: User, project: Path, every: str = "3s", **env: str) -> None:
    user.env.update(env)
    user.ok("up")
    user.ok("repo", "add", str(project))
    user.ok("auto", "add", NAME, "project", PROMPT, "--agents", "claude", "--every", every)


def settled(info: orch.AutomationInfo) -> list[AutomationRun]:
    return [r for r in info.runs if r.status != "starting"]


async def until(user: User, done: Callable[[orch.AutomationInfo], bool]) -> orch.AutomationInfo:
    with trio.fail_after(90):
        async with auto_watcher(user.paths) as watcher:
            return await watcher.until(NAME, done)


async def pause_and_settle(user: User) -> orch.AutomationInfo:
    """Pause, then wait until no record is left ``starting``."""
    user.ok("auto", "pause", NAME)
    return await until(user, lambda i: all(r.status != "starting" for r in i.runs))


async def assert_once_per_due_time(user: User, log: Path, info: orch.AutomationInfo) -> None:
    ids = [r.id for r in info.runs]
    assert len(ids) == len(set(ids))
    assert len({r.scheduled_for for r in info.runs}) == len(info.runs)
    started = [r for r in info.runs if r.status == "started"]
    assert all(r.output is not None for r in started)
    run_ids = sorted(r.output.run_id for r in started if r.output is not None)
    listed = sorted(r["run"] for r in user.json("run", "ls")["runs"])
    assert listed == run_ids, (listed, info.runs)
    with trio.fail_after(60):
        async with run_watcher(user.paths) as watcher:
            for run_id in run_ids:
                # orch marks a variant prompted once the keys are written, before the
                # agent has read them (CI read an empty log in that moment): wait, on
                # each change of the run (the agent reports its turn after logging),
                # until its agent has logged a prompt too
                def logged(i: orch.RunInfo) -> bool:
                    panes = {pane for pane, _text in prompts(log)}
                    return all(v.prompted_at_ms and v.pane_key in panes for v in i.variants)

                shown = await watcher.until(run_id, logged)
                for v in shown.variants:
                    assert prompts(log).count((v.pane_key, PROMPT)) == 1, prompts(log)


async def test_a_firing_starts_one_run(world: tuple[User, Path, Path]) -> None:
    """The first due time of `--every 3s` starts one run (one variant, prompted once)."""
    user, log, project = world
    start(user, project)
    first = await until(user, lambda i: any(r.status == "started" for r in i.runs))
    record = next(r for r in first.runs if r.status == "started")
    assert record.trigger in ("schedule", "catch-up") and record.output is not None
    info = await pause_and_settle(user)
    assert info.next_due_ms is None  # paused
    await assert_once_per_due_time(user, log, info)
    shown = user.json("auto", "show", NAME)["automation"]
    assert shown["runs"][-1]["output"]["runId"] == record.output.run_id
    started = {r["output"]["runId"] for r in shown["runs"] if r["status"] == "started"}
    assert {s["run"] for s in shown["runSummaries"]} == started
    assert f"started run {record.output.run_id} (active: 1 " in user.ok("auto", "show", NAME)
    listed = user.ok("auto", "ls")
    assert NAME in listed and "paused" in listed


async def test_overlap_is_refused_while_the_last_run_works(world: tuple[User, Path, Path]) -> None:
    """The first run's agent starts slowly (the run is still starting): the next due
    times are skipped, each naming that run; `run-now` is refused the same way."""
    user, _log, project = world
    start(user, project, every="2s", FAKE_AGENT_START_DELAY="60")
    info = await until(user, lambda i: any(r.status == "skipped" for r in i.runs))
    (started,) = [r for r in info.runs if r.status == "started"]
    assert started.output is not None
    skipped = [r for r in info.runs if r.status == "skipped"]
    assert all(started.output.run_id in (r.error or "") for r in skipped)
    now = user.run("auto", "run-now", NAME)
    assert now.returncode == 2 and "still working" in now.stderr, now.stderr
    info = await pause_and_settle(user)
    assert len([r for r in info.runs if r.status == "started"]) == 1
    assert [r["run"] for r in user.json("run", "ls")["runs"]] == [started.output.run_id]


async def test_orch_killed_between_intent_act_and_result(world: tuple[User, Path, Path]) -> None:
    """orch dies after recording a due time's intent, and (restarted) again after its
    run was made, before the result: that due time ends with one run, started."""
    user, log, project = world
    start(user, project, ORCA_ORCH_CRASH_AFTER="auto-intent,auto-act")
    info = await until(
        user,
        lambda i: all((user.paths.data_dir / "orch" / f"crashed-after-{s}").exists()
                      for s in ("auto-intent", "auto-act"))
        and any(r.status == "started" for r in i.runs),
    )  # fmt: skip
    first = min(info.runs, key=lambda r: r.scheduled_for)
    assert first.status == "started"
    info = await pause_and_settle(user)
    await assert_once_per_due_time(user, log, info)


def tree_pids(user: User) -> list[int]:
    return [a.pid for a in invoke(sup.STATUS, paths=user.paths, timeout=5).actors if a.pid]


async def test_orcad_killed_around_a_due_time(world: tuple[User, Path, Path]) -> None:
    """kill -9 of orcad (and so of every actor) just after a firing: after `orca up` the
    schedule goes on; no due time fired twice or was lost."""
    user, log, project = world
    start(user, project)
    before = await until(user, lambda i: any(r.status == "started" for r in i.runs))
    pid = orcad_pid(user.paths)
    assert pid is not None
    actors = tree_pids(user)
    os.kill(pid, signal.SIGKILL)
    with trio.fail_after(30):
        await wait_gone([pid, *actors])
    result = await trio.to_thread.run_sync(orca_up, user.env)
    assert result.returncode == 0, result.stderr
    newest = max(r.scheduled_for for r in before.runs)
    await until(user, lambda i: any(r.scheduled_for > newest and r.status != "starting"
                                    for r in i.runs))  # fmt: skip
    info = await pause_and_settle(user)
    await assert_once_per_due_time(user, log, info)


async def test_due_times_missed_while_down_run_once(world: tuple[User, Path, Path]) -> None:
    """`orca down --keep-terminals` across several due times of `--every 2s`, then `orca
    up`: one catch-up firing for them all (missed counted), then the schedule as before."""
    user, log, project = world
    start(user, project, every="2s")
    before = await until(user, lambda i: any(r.status == "started" for r in i.runs))
    user.ok("down", "--keep-terminals")
    down_ms = max(r.scheduled_for for r in before.runs)
    await trio.sleep(7)  # the outage itself: three or more due times pass while down
    user.ok("up")
    info = await until(user, lambda i: any(r.scheduled_for > down_ms + 6000 for r in i.runs))
    info = await pause_and_settle(user)
    after = sorted(
        (r for r in info.runs if r.scheduled_for > down_ms), key=lambda r: r.scheduled_for
    )
    catch_up = after[0]
    assert catch_up.trigger == "catch-up" and catch_up.missed >= 2, after
    assert all(r.missed == 0 for r in after[1:]), after  # the schedule as before
    await assert_once_per_due_time(user, log, info)


class JsonLines:
    """`orca watch --json`, read line by line."""

    def __init__(self, process: trio.Process) -> None:
        assert process.stdout is not None
        self.stdout = process.stdout
        self.buffer = b""

    async def next_matching(self, wanted: Callable[[dict[str, object]], bool]) -> dict[str, object]:
        while True:
            *lines, rest = self.buffer.split(b"\n")
            for n, line in enumerate(lines):
                if line.strip() and wanted(event := json.loads(line)):
                    self.buffer = b"\n".join([*lines[n + 1 :], rest])
                    return event
            self.buffer = rest
            chunk = await self.stdout.receive_some(65536)
            assert chunk, "orca watch ended"
            self.buffer += chunk


def failed_firing(event: dict[str, object]) -> bool:
    return event["event"] == "automation" and event["status"] == "failed"


async def test_a_run_that_cannot_start_is_recorded_failed_and_watch_says_so(
    world: tuple[User, Path, Path], tmp_path: Path
) -> None:
    """No `claude` on PATH at the due time: failed, naming it; then the repo's folder is
    gone: failed, naming it. `orca watch --json` prints both, `--notify` tells both."""
    user, _log, project = world
    user.ok("up")
    user.ok("repo", "add", str(project))
    fifo = tmp_path / "notifications"
    os.mkfifo(fifo)
    fifo_fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    procs: list[trio.Process] = []
    try:
        with trio.fail_after(90):
            watch = await trio.lowlevel.open_process(
                [sys.executable, "-m", "orca.cli.main", "watch", "--json"],
                env=user.env, stdout=subprocess.PIPE,
            )  # fmt: skip
            procs.append(watch)
            writer = f'printf \'%s: %s\\n\' "$0" "$1" >> {shlex.quote(str(fifo))}'
            procs.append(
                await trio.lowlevel.open_process(
                    [
                        sys.executable,
                        "-m",
                        "orca.cli.main",
                        "watch",
                        "--notify",
                        "--notify-command",
                        f"sh -c {shlex.quote(writer)}",
                    ],
                    env=user.env,
                    stdout=subprocess.DEVNULL,
                )
            )
            lines = JsonLines(watch)
            await lines.next_matching(lambda e: e["event"] == "live")  # subscribed
            (tmp_path / "bin" / "claude").unlink()  # the service's PATH has it no more
            user.ok("auto", "add", NAME, "project", PROMPT, "--agents", "claude", "--every", "2s")
            first = await lines.next_matching(failed_firing)
            assert "claude" in str(first["error"]), first
            user.ok("auto", "pause", NAME)
            await trio.run_process(["rm", "-rf", str(project)])
            now = user.run("auto", "run-now", NAME)
            assert now.returncode == 1 and "gone" in now.stderr, now.stderr
            second = await lines.next_matching(failed_firing)
            assert str(project) in str(second["error"]), second
            notes = b""
            stream = trio.lowlevel.FdStream(os.dup(fifo_fd))
            async with stream:
                while notes.count(b"failed to start") < 2:
                    notes += await stream.receive_some(4096)
            assert notes.count(f"automation {NAME} failed to start".encode()) == 2, notes
        info = user.json("auto", "show", NAME)["automation"]
        assert {r["status"] for r in info["runs"]} == {"failed"}
        assert user.json("run", "ls")["runs"] == []
    finally:
        kill_all([p.pid for p in procs])
        for p in procs:
            await p.wait()
        os.close(fifo_fd)


def test_bad_input_is_one_line_exit_2_and_nothing_is_lost(world: tuple[User, Path, Path]) -> None:
    """A bad cron, zone, interval, agent, repo or a taken name: exit 2 with one line; the
    automation already there is unchanged and nothing else was added."""
    user, _log, project = world
    user.ok("up")
    user.ok("repo", "add", str(project))
    user.ok("auto", "add", NAME, "project", PROMPT, "--agents", "claude", "--cron", "0 3 * * 1-5",
            "--tz", "Europe/Paris")  # fmt: skip
    before = user.json("auto", "ls")["automations"]
    base = ("auto", "add", "other", "project", PROMPT, "--agents", "claude")
    for argv, needle in (
        ((*base, "--cron", "0 3 * *"), "five fields"),
        ((*base, "--cron", "61 3 * * *"), "five fields"),
        ((*base, "--cron", "0 3 * * *", "--tz", "Mars/Olympus"), "unknown time zone"),
        ((*base, "--every", "6 hours"), "not an interval"),
        (
            ("auto", "add", "other", "nowhere", PROMPT, "--agents", "claude", "--every", "1h"),
            "nowhere",
        ),
        (("auto", "add", "other", "project", PROMPT, "--agents", "vim", "--every", "1h"), "vim"),
        (
            ("auto", "add", NAME, "project", PROMPT, "--agents", "claude", "--every", "1h"),
            "already",
        ),
        (("auto", "show", "nothing"), "no automation 'nothing'"),
        (("auto", "pause", "nothing"), "no automation 'nothing'"),
    ):
        result = user.run(*argv)
        assert result.returncode == 2, (argv, result.stderr)
        assert needle in result.stderr and result.stderr.count("\n") == 1, (argv, result.stderr)
    assert user.json("auto", "ls")["automations"] == before
