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

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import netns, sshd
from support.journey import make_git_repo
from support.netns import Namespace, netns_pair
from support.procs import FIXTURES, descendants
from support.remote import Tree, start_tree, stop_tree, wait_until
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
