"""Two Orca trees on one machine, in two network namespaces joined by a veth pair.

"buildbox" (namespace b) runs an agent; "laptop" (namespace a) follows it over CURVE.
The laptop sees the buildbox's status and sessions next to its own, labelled with the
host; the link goes down (``ip link set ... down``) while the agent keeps printing:
the laptop's rows turn unverifiable (kept, never live), the agent is alive; the link
comes back: the rows are live again, and the attached stream (``orca term attach
buildbox:HANDLE`` running on the laptop throughout) is complete and in order: its
bytes equal, by checksum, what buildbox's ptyd recorded over the same offsets.

The fast variant shortens the link heartbeats (0.3 s / 1.5 s) and keeps the link
down for 4 s; the soak variant uses the real 5 s / 20 s heartbeats and 30 s down.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.journey import make_git_repo
from support.netns import Namespace, available, netns_pair
from support.procs import FIXTURES
from support.remote import FAST_BEATS, Tree, attached_stream, start_tree, stop_tree, wait_until

pytestmark = pytest.mark.skipif(not available(), reason="needs root and iproute2 (ip netns)")

AGENT = FIXTURES / "support" / "remote_agent.sh"
REAL_BEATS = {"ORCA_REMOTE_HEARTBEAT_IVL_S": "5", "ORCA_REMOTE_HEARTBEAT_TIMEOUT_S": "20"}
PORT = 7710


class Hosts:
    def __init__(self, laptop: Tree, buildbox: Tree, a: Namespace, b: Namespace) -> None:
        self.laptop, self.buildbox, self.a, self.b = laptop, buildbox, a, b

    def remote_ps(self) -> list[dict[str, Any]]:
        rows = self.laptop.json("worktree", "ps")["worktrees"]
        return [w for w in rows if w.get("host") == "buildbox"]

    def remote_terms(self) -> list[dict[str, Any]]:
        return [s for s in self.laptop.json("term", "ls")["sessions"] if s["host"] == "buildbox"]


def _pair_trees(tmp_path: Path, beats: dict[str, str]) -> Iterator[Hosts]:
    with netns_pair() as (a, b):
        trees: list[Tree] = []
        try:
            buildbox = start_tree(
                tmp_path / "buildbox",
                listen=f"tcp://{b.address}:{PORT}",
                prefix=tuple(b.prefix()),
                beats=beats,
            )
            trees.append(buildbox)
            laptop = start_tree(
                tmp_path / "laptop", listen=None, prefix=tuple(a.prefix()), beats=beats
            )
            trees.append(laptop)
            client_key = laptop.ok("host", "key").strip()
            buildbox.ok(
                "host", "authorize", "--name", "laptop", "--", client_key
            )  # may start with '-'

            server_key = buildbox.ok("host", "key", "--server").strip()
            laptop.ok(
                "host", "add", "buildbox", f"tcp://{b.address}:{PORT}", f"--server-key={server_key}"
            )
            yield Hosts(laptop, buildbox, a, b)
        finally:
            for tree in reversed(trees):
                stop_tree(tree)


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[Hosts]:
    yield from _pair_trees(tmp_path, FAST_BEATS)


@pytest.fixture
def soak_hosts(tmp_path: Path) -> Iterator[Hosts]:
    yield from _pair_trees(tmp_path, REAL_BEATS)


def test_remote_status_and_sessions_are_visible_locally(hosts: Hosts, tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "repo")
    hosts.buildbox.ok("repo", "add", str(repo))
    session = hosts.buildbox.new_terminal("repo", str(AGENT), str(tmp_path / "stop"))["sessionId"]
    rows = wait_until(
        lambda: [a for w in hosts.remote_ps() for a in w["agents"] if a["state"] == "working"],
        "the buildbox agent's row on the laptop",
    )
    assert rows[0]["agent"] == "claude"
    ps = hosts.remote_ps()
    assert all(w["hostId"] == "runtime:buildbox" and w["verifiable"] for w in ps)
    terms = wait_until(hosts.remote_terms, "the buildbox session on the laptop")
    assert [t["sessionId"] for t in terms] == [session]
    assert terms[0]["handle"].startswith("buildbox:repo:")
    table = hosts.laptop.ok("worktree", "ps")
    # The agent's row leads with the handle `term read`/`attach` take (as `term ls` shows).
    shown = rf"^buildbox\s+{re.escape(terms[0]['handle'])}\s+claude\s+working"
    assert re.search(shown, table, re.MULTILINE), table
    listing = hosts.laptop.ok("worktree", "ls")
    assert re.search(r"^buildbox\s+buildbox:repo\s", listing, re.MULTILINE), listing
    # Worktree mutations run on the buildbox (its git, its disk), named from the laptop.
    created = hosts.laptop.ok("worktree", "create", "buildbox:repo", "feature-x", "--setup", "skip")
    assert created.startswith("created buildbox:"), created
    path = Path(created.split()[1].split(":", 1)[1])
    assert path.is_dir() and hosts.buildbox.json("worktree", "ls")["worktrees"]
    wait_until(
        lambda: any(
            w["path"] == str(path) for w in hosts.laptop.json("worktree", "ls")["worktrees"]
        ),
        "the new remote worktree in the laptop's listing",
    )
    hosts.laptop.ok("worktree", "rm", f"buildbox:{path.name}")
    assert not path.exists()
    # Mirror, never merge: nothing of the buildbox reached the laptop's own state.
    laptop_state = (
        (hosts.laptop.paths.state_file).read_text()
        if hosts.laptop.paths.state_file.exists()
        else ""
    )
    assert str(repo) not in laptop_state
    assert "repo:" not in hosts.laptop.ok("term", "ls").replace("buildbox:repo:", "")


def _link_loss_keeps_agents_and_stream(hosts: Hosts, tmp_path: Path, down_s: float) -> None:
    repo = make_git_repo(tmp_path / "repo")
    hosts.buildbox.ok("repo", "add", str(repo))
    stop = tmp_path / "stop"
    session = hosts.buildbox.new_terminal("repo", str(AGENT), str(stop))["sessionId"]
    terms = wait_until(hosts.remote_terms, "the buildbox session on the laptop")
    handle = terms[0]["handle"]
    wait_until(lambda: [a for w in hosts.remote_ps() for a in w["agents"]], "the agent's row")
    out = tmp_path / "attached.out"
    with out.open("wb") as sink:
        attach = subprocess.Popen(
            [*hosts.a.prefix(), *hosts.laptop.argv("term", "attach", handle)],
            env=hosts.laptop.env,
            stdin=subprocess.PIPE,
            stdout=sink,
            stderr=subprocess.PIPE,
        )
    try:
        # The attach has drawn the (blank) screen: every line after "go" is stream output.
        wait_until(lambda: out.stat().st_size > 0, "the attach to draw the screen")
        hosts.laptop.ok("term", "send", handle, "go", "--enter")

        def remote_end() -> int:
            rows = hosts.buildbox.json("term", "ls")["sessions"]
            return int(next(s["endOffset"] for s in rows if s["sessionId"] == session))

        wait_until(lambda: b"line 3" in out.read_bytes(), "the attached stream to start")
        hosts.b.link("down")
        down_since = time.monotonic()
        down_at = remote_end()
        stale = wait_until(
            lambda: (ps := hosts.remote_ps()) and not ps[0]["verifiable"] and ps,
            "the buildbox rows to turn unverifiable",
            timeout=down_s + 40,
        )
        assert stale[0]["agents"], "rows of an unreachable host are kept, never cleared"
        assert stale[0]["unverifiableSince"] is not None
        text = hosts.laptop.ok("worktree", "ps")
        line = next(row for row in text.splitlines() if row.startswith("buildbox"))
        assert re.search(r"\sunverifiable since \d\d:\d\d:\d\d \(last seen working\)", line)
        # The link stays down for down_s in all while the agent prints.
        time.sleep(max(0.0, down_since + down_s - time.monotonic()))
        alive = hosts.buildbox.json("term", "ls")["sessions"]
        assert next(s for s in alive if s["sessionId"] == session)["running"]
        assert remote_end() > down_at, "the remote agent kept printing while the link was down"
        hosts.b.link("up")
        back = wait_until(
            lambda: (ps := hosts.remote_ps()) and ps[0]["verifiable"] and ps,
            "the buildbox rows to be live again",
            timeout=60,
        )
        assert [a["paneKey"] for a in back[0]["agents"]] == [
            a["paneKey"] for a in stale[0]["agents"]
        ]
        stop.touch()
        attach.wait(timeout=60)
    finally:
        if attach.poll() is None:
            attach.kill()
            attach.wait()
        assert attach.stdin is not None
        attach.stdin.close()
        assert attach.stderr is not None
        attach.stderr.close()
    raw = out.read_bytes()
    retries, numbers, shown = attached_stream(raw, hosts.buildbox, session)
    assert retries >= 1, "the link loss must have hit the attached stream"
    assert numbers[0] == 1 and re.search(rb"end \d+", shown)


def test_link_down_marks_rows_unverifiable_and_the_stream_resumes(
    hosts: Hosts, tmp_path: Path
) -> None:
    _link_loss_keeps_agents_and_stream(hosts, tmp_path, down_s=4.0)


@pytest.mark.soak
def test_link_down_30s_with_real_heartbeats(soak_hosts: Hosts, tmp_path: Path) -> None:
    _link_loss_keeps_agents_and_stream(soak_hosts, tmp_path, down_s=30.0)
