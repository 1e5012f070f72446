"""Remote hosts over SSH: a real sshd in a network namespace, the user's own ssh.

"buildbox" (namespace b) runs Debian's sshd (key-only, its own port, config and keys in
a temp dir; ``support.sshd``) and nothing of Orca's until the laptop asks; "laptop"
(namespace a) runs an Orca tree. ``orca host add buildbox buildbox --ssh-config F``
(the alias of an ssh_config) is the one command: over ssh it finds Orca there, starts
the remote tree, authorizes the laptop's key and pins the server's, and returns once
the laptop's mirror is live. The gateway's link then rides inside the ssh connection
(a forwarded Unix socket, CURVE inside): nothing listens on TCP on the buildbox but
sshd. Link cuts (the veth down; then ``kill -9`` of the ssh master) lose nothing and
kill nothing; a changed host key and an unauthorized key are refused, each with its
one-line reason.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import netns, sshd
from support.journey import make_git_repo
from support.netns import Namespace, netns_pair
from support.procs import FIXTURES, descendants
from support.remote import Tree, attached_stream, start_tree, stop_tree, wait_until
from support.sshd import ALIAS, SshServer, ssh_server

pytestmark = pytest.mark.skipif(
    not (netns.available() and sshd.available()),
    reason="needs root, iproute2 (ip netns), util-linux (unshare) and openssh-server (sshd)",
)

AGENT = FIXTURES / "support" / "remote_agent.sh"


class SshHosts:
    def __init__(self, laptop: Tree, server: SshServer, a: Namespace, b: Namespace) -> None:
        self.laptop, self.server, self.a, self.b = laptop, server, a, b

    @property
    def buildbox(self) -> Tree:
        return self.server.remote

    def add(self, *extra: str) -> subprocess.CompletedProcess[str]:
        return self.laptop.cli(
            "host", "add", "buildbox", ALIAS, "--ssh-config", str(self.server.client_config), *extra,
            timeout=120,
        )  # fmt: skip

    def remote_ps(self) -> list[dict[str, Any]]:
        rows = self.laptop.json("worktree", "ps")["worktrees"]
        return [w for w in rows if w.get("host") == "buildbox"]

    def remote_terms(self) -> list[dict[str, Any]]:
        return [s for s in self.laptop.json("term", "ls")["sessions"] if s["host"] == "buildbox"]

    def ssh_masters(self) -> list[int]:
        """The laptop gateway's ssh processes (its children), by pid."""
        gateway = self.laptop.restarts()["gateway"][0]
        assert isinstance(gateway, int)
        found = []
        for pid in descendants(gateway):
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv and argv[0] == b"ssh":
                found.append(pid)
        return found


@pytest.fixture
def ssh_hosts(tmp_path: Path) -> Iterator[SshHosts]:
    with netns_pair() as (a, b), ssh_server(tmp_path / "sshd", b) as server:
        laptop = start_tree(tmp_path / "laptop", listen=None, prefix=tuple(a.prefix()))
        try:
            yield SshHosts(laptop, server, a, b)
        finally:
            stop_tree(laptop)


def _targets(hosts: SshHosts) -> list[tuple[str, str]]:
    from orca.client.sync import invoke
    from orca.contracts import store

    found = invoke(store.SSH_TARGET_LIST, paths=hosts.laptop.paths).ssh_targets
    return [(t.id, t.destination) for t in found]


def _tcp_listeners(ns: Namespace) -> list[str]:
    out = ns.run(["ss", "-Hltnp"], timeout=10).stdout
    return [line for line in out.splitlines() if line.strip()]


def test_one_command_by_alias_to_a_working_mirror_with_no_tcp_listener(
    ssh_hosts: SshHosts, tmp_path: Path
) -> None:
    """`host add` by an ssh_config alias: Orca started there, keys exchanged, mirror live."""
    hosts = ssh_hosts
    assert not hosts.buildbox.paths.lock_file.exists(), "nothing of Orca runs there yet"
    done = hosts.add()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "added buildbox (ssh buildbox, host id ssh:buildbox)" in done.stdout, done.stdout
    assert "buildbox: mirror live" in done.stdout
    # The remote tree runs (started by the add) and authorized exactly the laptop's key.
    clients = hosts.buildbox.json("host", "ls", "--clients")["clients"]
    assert [c["key"] for c in clients] == [hosts.laptop.ok("host", "key").strip()]
    assert clients[0]["access"] == "full"
    # Its server key is the one pinned on the laptop.
    pinned = hosts.laptop.json("host", "ls")["hosts"][0]
    assert pinned["serverKey"] == hosts.buildbox.ok("host", "key", "--server").strip()
    assert pinned["hostId"] == "ssh:buildbox" and pinned["link"] == "live"
    # The laptop's state holds it as one of its SSH targets (seed 02 §2), id = name.
    assert _targets(hosts) == [("buildbox", "buildbox")]
    # Nothing listens on TCP on the buildbox but sshd, and the hooks actor's endpoint
    # on loopback (the agents' hook script posts there, with a per-start secret).
    hooks_pid = hosts.buildbox.restarts()["hooks"][0]
    listeners = _tcp_listeners(hosts.b)
    assert any('"sshd"' in line for line in listeners), listeners
    others = [line for line in listeners if '"sshd"' not in line]
    assert all(re.search(rf" 127\.0\.0\.1:\d+ .*pid={hooks_pid},", line) for line in others), others
    assert not [line for line in listeners if f"pid={hosts.buildbox.restarts()['gateway'][0]}," in line]
    # The mirror works: an agent started there shows on the laptop, labelled.
    repo = make_git_repo(tmp_path / "repo")
    hosts.buildbox.ok("repo", "add", str(repo))
    session = hosts.buildbox.new_terminal("repo", str(AGENT), str(tmp_path / "stop"))["sessionId"]
    terms = wait_until(hosts.remote_terms, "the buildbox session on the laptop")
    assert [t["sessionId"] for t in terms] == [session]
    assert terms[0]["hostId"] == "ssh:buildbox"
    wait_until(
        lambda: [a for w in hosts.remote_ps() for a in w["agents"] if a["state"] == "working"],
        "the buildbox agent's row on the laptop",
    )
    # The laptop's own files: the control and forward sockets private, in a private dir.
    status = hosts.laptop.ok("host", "status", "buildbox")
    assert "reachable, orca" in status, status
    (hosts.server.root / "stop").touch()


def _mirror_link(hosts: SshHosts) -> dict[str, Any]:
    return next(h for h in hosts.laptop.json("host", "ls")["hosts"] if h["name"] == "buildbox")


def test_link_cut_and_ssh_killed_lose_nothing_and_the_attach_resumes(
    ssh_hosts: SshHosts, tmp_path: Path
) -> None:
    """The veth down, then `kill -9` of the ssh master: rows kept as unverifiable, the
    remote agent alive, the link back by itself, the attached stream complete."""
    hosts = ssh_hosts
    done = hosts.add()
    assert done.returncode == 0, done.stdout + done.stderr
    repo = make_git_repo(tmp_path / "repo")
    hosts.buildbox.ok("repo", "add", str(repo))
    stop = tmp_path / "stop"
    # `term new HOST:WORKTREE` from the laptop, over the ssh link.
    started = hosts.laptop.new_terminal("buildbox:repo", str(AGENT), str(stop))
    session = started["sessionId"]
    terms = wait_until(hosts.remote_terms, "the buildbox session on the laptop")
    handle = terms[0]["handle"]
    assert terms[0]["sessionId"] == session and handle.startswith("buildbox:repo:")
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

    def remote_end() -> int:
        rows = hosts.buildbox.json("term", "ls")["sessions"]
        return int(next(s["endOffset"] for s in rows if s["sessionId"] == session))

    try:
        wait_until(lambda: out.stat().st_size > 0, "the attach to draw the screen")
        hosts.laptop.ok("term", "send", handle, "go", "--enter")
        wait_until(lambda: b"line 3" in out.read_bytes(), "the attached stream to start")
        # 1. The network drops.
        hosts.b.link("down")
        down_since = time.monotonic()
        down_at = remote_end()
        stale = wait_until(
            lambda: (ps := hosts.remote_ps()) and not ps[0]["verifiable"] and ps,
            "the buildbox rows to turn unverifiable",
        )
        assert stale[0]["agents"], "rows of an unreachable host are kept, never cleared"
        assert stale[0]["unverifiableSince"] is not None
        line = next(r for r in hosts.laptop.ok("worktree", "ps").splitlines() if r.startswith("buildbox"))
        assert re.search(r"\sunverifiable since \d\d:\d\d:\d\d \(last seen working\)", line), line
        time.sleep(max(0.0, down_since + 4.0 - time.monotonic()))  # down for 4 s in all
        assert remote_end() > down_at, "the remote agent kept printing while the link was down"
        hosts.b.link("up")
        wait_until(
            lambda: (ps := hosts.remote_ps()) and ps[0]["verifiable"], "live again", timeout=60
        )
        # 2. The ssh master is killed.
        masters = wait_until(hosts.ssh_masters, "the gateway's ssh master")
        for pid in masters:
            os.kill(pid, signal.SIGKILL)
        relinked = wait_until(
            lambda: (now := hosts.ssh_masters()) and not set(now) & set(masters) and now,
            "a new ssh master",
        )
        assert relinked
        back = wait_until(
            lambda: (ps := hosts.remote_ps()) and ps[0]["verifiable"] and ps, "live again", timeout=60
        )
        assert [a["paneKey"] for a in back[0]["agents"]] == [a["paneKey"] for a in stale[0]["agents"]]
        alive = hosts.buildbox.json("term", "ls")["sessions"]
        assert next(s for s in alive if s["sessionId"] == session)["running"], "no remote PTY killed"
        stop.touch()
        attach.wait(timeout=60)
    finally:
        if attach.poll() is None:
            attach.kill()
            attach.wait()
        assert attach.stdin is not None and attach.stderr is not None
        attach.stdin.close()
        attach.stderr.close()
    retries, numbers, shown = attached_stream(out.read_bytes(), hosts.buildbox, session)
    assert retries >= 1, "the link loss must have hit the attached stream"
    assert numbers[0] == 1 and re.search(rb"end \d+", shown)


def test_a_changed_host_key_is_refused_by_add_link_and_status(ssh_hosts: SshHosts) -> None:
    """sshd down: `ssh refused`; back with another host key: nothing is sent, and the
    link, `host status` and `host add` each say `host key changed`."""
    hosts = ssh_hosts
    assert hosts.add().returncode == 0
    hosts.server.stop()
    refused = hosts.laptop.cli("host", "status", "buildbox")
    assert refused.returncode != 0 and "ssh refused" in refused.stderr, refused.stderr
    hosts.server.new_host_key()
    hosts.server.start()
    link = wait_until(
        lambda: "host key changed" in (h := _mirror_link(hosts))["link"] + h.get("error", "") and h,
        "the link to say the host key changed",
        timeout=60,
    )
    assert link["link"].startswith("unverifiable since"), link
    status = hosts.laptop.cli("host", "status", "buildbox")
    assert status.returncode != 0 and "host key changed" in status.stderr, status.stderr
    again = hosts.add()
    assert again.returncode != 0
    assert again.stderr.count("\n") == 1 and "host key changed" in again.stderr, again.stderr


def test_a_user_or_key_without_access_is_refused_and_nothing_is_recorded(ssh_hosts: SshHosts) -> None:
    """Another login name, then a key sshd does not know: `auth failed`, no host added."""
    hosts = ssh_hosts
    config = str(hosts.server.client_config)
    other_user = hosts.laptop.cli(
        "host", "add", "buildbox", f"ssh://nobody@{hosts.b.address}:{hosts.server.port}",
        "--ssh-config", config, timeout=60,
    )  # fmt: skip
    assert other_user.returncode != 0
    assert other_user.stderr.count("\n") == 1 and "auth failed" in other_user.stderr, other_user.stderr
    hosts.server.authorized_keys.write_text("")
    no_key = hosts.add()
    assert no_key.returncode != 0 and "auth failed" in no_key.stderr, no_key.stderr
    assert hosts.laptop.json("host", "ls")["hosts"] == []
    assert not hosts.buildbox.paths.lock_file.exists(), "nothing ran there"


def test_orca_missing_there_and_the_remote_tree_down_are_named(ssh_hosts: SshHosts) -> None:
    """No `orca` on the remote PATH: how to install it; the remote tree stopped: said so."""
    hosts = ssh_hosts
    hosts.server.restart(orca_on_path=False)
    missing = hosts.add()
    assert missing.returncode != 0
    assert missing.stderr.count("\n") == 1, missing.stderr
    assert "Orca missing there" in missing.stderr and "install" in missing.stderr, missing.stderr
    hosts.server.restart(orca_on_path=True)
    assert hosts.add().returncode == 0
    hosts.buildbox.ok("down")
    link = wait_until(
        lambda: "remote tree down" in (h := _mirror_link(hosts))["link"] + h.get("error", "") and h,
        "the link to say the remote tree is down",
        timeout=60,
    )
    assert link["link"] != "live"
    status = hosts.laptop.cli("host", "status", "buildbox")
    assert status.returncode != 0 and "remote tree down" in status.stderr, status.stderr
