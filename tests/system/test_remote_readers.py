"""Remote hosts on loopback: ``orca watch`` rows, an event-driven attach, store labels.

Two real trees on this machine (no network namespace: the link is loopback tcp://
with CURVE, the gateway is the real one). "buildbox" serves, "laptop" follows. A link
loss is made by stopping buildbox's gateway process (SIGSTOP: it answers nothing, not
even heartbeats, while buildbox's agents keep running) and resuming it (SIGCONT).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.journey import make_git_repo
from support.lines import Lines
from support.procs import FIXTURES
from support.remote import Tree, attached_stream, loopback_pair, wait_until

from orca.client.sync import invoke
from orca.contracts import gateway as gw
from orca.contracts import ptyd, store

AGENT = FIXTURES / "support" / "remote_agent.sh"


class Pair:
    def __init__(self, laptop: Tree, buildbox: Tree, tmp: Path) -> None:
        self.laptop, self.buildbox, self.tmp = laptop, buildbox, tmp

    def gateway_pid(self) -> int:
        pid = self.buildbox.restarts()["gateway"][0]
        assert isinstance(pid, int)
        return pid

    def remote_terms(self) -> list[dict[str, Any]]:
        return [s for s in self.laptop.json("term", "ls")["sessions"] if s["host"] == "buildbox"]

    def terminal_requests(self) -> int:
        """Requests buildbox's gateway admitted that read a terminal (the attach's;
        the laptop's mirror long-polls ``gateway.events`` with the same key)."""
        counts = invoke(gw.STATUS, paths=self.buildbox.paths).op_counts
        return counts.get(gw.TERM_WAIT.name, 0) + counts.get(ptyd.READ.name, 0)


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    with loopback_pair(tmp_path) as (laptop, buildbox):
        yield Pair(laptop, buildbox, tmp_path)


def test_watch_shows_remote_rows_labelled_and_unverifiable_on_link_loss(pair: Pair) -> None:
    repo = make_git_repo(pair.tmp / "repo")
    pair.buildbox.ok("repo", "add", str(repo))
    stop = pair.tmp / "stop"
    session = pair.buildbox.new_terminal("repo", str(AGENT), str(stop))["sessionId"]
    local_repo = make_git_repo(pair.tmp / "local-repo")
    pair.laptop.ok("repo", "add", str(local_repo))
    pair.laptop.ok("term", "new", "local-repo", "--", str(AGENT), str(pair.tmp / "stop-local"))
    with (pair.tmp / "watch.err").open("wb") as err:
        watch = subprocess.Popen(
            pair.laptop.argv("watch", "--json"),
            env=pair.laptop.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
        )
    gateway = pair.gateway_pid()
    try:
        lines = Lines(watch)
        # The live row (on a loaded machine the link can look lost for a moment before
        # it is first confirmed: the row is shown then too, as unverifiable).
        remote = lines.wait_for(
            lambda d: (
                d.get("host") == "buildbox"
                and d["event"] == "set"
                and d["state"] == "working"
                and d["verifiable"] is True
            ),
            "the buildbox agent's live row",
        )
        assert remote["hostId"] == "runtime:buildbox" and "lastSeen" not in remote
        os.kill(gateway, signal.SIGSTOP)  # the link is lost; buildbox's agent runs on
        lost = lines.wait_for(
            lambda d: d["event"] == "link" and d["verifiable"] is False, "the link loss"
        )
        assert (
            lost["host"] == "buildbox"
            and lost["unverifiableSince"] is not None
            and lost["rows"] == 1
        )
        stale = lines.wait_for(
            lambda d: d.get("displayState") == "unverifiable", "the unverifiable row"
        )
        assert stale["paneKey"] == remote["paneKey"] and stale["lastSeen"] == "working"
        assert stale["verifiable"] is False
        os.kill(gateway, signal.SIGCONT)
        back = lines.wait_for(
            lambda d: d["event"] == "link" and d["verifiable"] is True, "the link back"
        )
        assert back["host"] == "buildbox"
        again = lines.wait_for(
            lambda d: (
                d.get("host") == "buildbox"
                and d["event"] == "set"
                and d["paneKey"] == remote["paneKey"]
            ),
            "the row live again",
        )
        assert again["verifiable"] is True and "lastSeen" not in again
        assert again["state"] == "working"
        # A change on buildbox reaches the laptop's watch as it happens (no polling).
        pair.buildbox.ok("term", "send", session, "go", "--enter")
        stop.touch()
        lines.wait_for(
            lambda d: d.get("host") == "buildbox" and d["event"] == "set" and d["state"] == "done",
            "the buildbox agent's done row",
        )
        assert any(json.loads(x).get("host") == "local" for x in lines.lines), (
            "a local row, labelled"
        )
        rows = [json.loads(line) for line in lines.lines]
        unlabelled = [row for row in rows if "host" not in row and row["event"] != "live"]
        assert not unlabelled, unlabelled
    finally:
        os.kill(gateway, signal.SIGCONT)
        alive = watch.poll() is None
        watch.kill()
        watch.wait()
        assert watch.stdout is not None
        watch.stdout.close()
        assert alive, (pair.tmp / "watch.err").read_text()


def test_worktree_ls_labels_come_from_the_remote_store_mirror(pair: Pair) -> None:
    repo = make_git_repo(pair.tmp / "proj")
    pair.buildbox.ok("repo", "add", str(repo))

    def remote_rows() -> list[dict[str, Any]]:
        rows = pair.laptop.json("worktree", "ls")["worktrees"]
        return [w for w in rows if w["host"] == "buildbox"]

    rows = wait_until(remote_rows, "the buildbox worktree on the laptop")
    assert rows[0]["repoName"] == "proj"
    # A note written on buildbox (its store) shows up on the laptop's listing.
    invoke(
        store.WORKTREE_META_PATCH,
        store.MetaPatchArgs(
            worktree_id=rows[0]["id"], patch={"displayName": "Släpp ✓", "comment": "ci box"}
        ),
        paths=pair.buildbox.paths,
    )
    labelled = wait_until(
        lambda: [w for w in remote_rows() if w.get("displayName") == "Släpp ✓"],
        "the note on the laptop",
    )
    assert labelled[0]["comment"] == "ci box"
    table = pair.laptop.ok("worktree", "ls")
    assert re.search(r"^buildbox\s+buildbox:proj\s+proj\s", table, re.MULTILINE), table
    # Mirror, never merge: nothing of buildbox's store reached the laptop's state.
    state = pair.laptop.paths.state_file
    text = state.read_text() if state.exists() else ""
    assert "Släpp" not in text and str(repo) not in text and "ci box" not in text


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_remote_attach_waits_for_output_instead_of_polling(pair: Pair) -> None:
    repo = make_git_repo(pair.tmp / "repo")
    pair.buildbox.ok("repo", "add", str(repo))
    stop = pair.tmp / "stop"
    session = pair.buildbox.new_terminal("repo", str(AGENT), str(stop))["sessionId"]
    handle = wait_until(pair.remote_terms, "the buildbox session on the laptop")[0]["handle"]
    out = pair.tmp / "attached.out"
    with out.open("wb") as sink:
        attach = subprocess.Popen(
            pair.laptop.argv("term", "attach", handle),
            env=pair.laptop.env,
            stdin=subprocess.PIPE,
            stdout=sink,
            stderr=subprocess.PIPE,
        )
    try:
        wait_until(lambda: out.stat().st_size > 0, "the attach to draw the screen")
        # Idle (the agent waits for a line): the attach sleeps in one long-poll.
        time.sleep(0.5)
        before, cpu_before = pair.terminal_requests(), _cpu_s(attach.pid)
        time.sleep(3.0)
        idle_requests, idle_cpu = pair.terminal_requests() - before, _cpu_s(attach.pid) - cpu_before
        print(
            f"idle remote attach over 3 s: {idle_requests} requests, {idle_cpu * 1000:.0f} ms CPU"
        )
        assert idle_requests <= 3, f"{idle_requests} requests in 3 s idle: the attach polls"
        # Keys typed into the attach reach the remote agent (sent without a reply wait).
        assert attach.stdin is not None
        attach.stdin.write(b"go\r")
        attach.stdin.flush()
        wait_until(lambda: b"line 50" in out.read_bytes(), "the stream to flow")
        stop.touch()
        attach.wait(timeout=60)
    finally:
        if attach.poll() is None:
            attach.kill()
            attach.wait()
        assert attach.stdin is not None and attach.stderr is not None
        attach.stdin.close()
        attach.stderr.close()
    raw = out.read_bytes()
    _retries, numbers, _shown = attached_stream(raw, pair.buildbox, session)
    assert numbers[0] == 1 and numbers == list(range(1, len(numbers) + 1)), "in order, none lost"
