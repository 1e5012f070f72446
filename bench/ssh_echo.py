"""Keystroke echo over SSH: ``orca term attach HOST:HANDLE`` vs ``ssh HOST tmux attach``
on the same link, side by side in one run (issue 37).

Two network namespaces joined by a veth pair (as tests/system/test_remote_ssh.py; the
set-up helpers come from tests/fixtures/support): "buildbox" (namespace b) runs Debian's
sshd, key-only, and the Orca tree ``orca host add`` starts there over ssh; "laptop"
(namespace a) runs an Orca tree following it through the user's ssh (the gateway's
ControlMaster, the link a forwarded Unix socket). On the buildbox one ``cat`` runs in
an Orca terminal and another in a tmux session.

Each client runs in a pseudo-terminal of its own in namespace a, as a user's shell
would run it:

* ``orca term attach buildbox:repo:<handle>`` (laptop → its gateway → ssh → the
  buildbox gateway → ptyd, and back);
* ``ssh -t buildbox tmux attach`` (its own ssh connection over the same veth).

One keystroke is written to the client's terminal and timed until the character comes
back on it (the remote terminal's own echo, drawn by the client); the next one goes as
soon as it has. Keys alternate between the two clients, the first of a round moving
along, so both see the same machine (``bench/pty.py``'s clients and echo loop).
Printed: median, p90, p99 and max of each, and the ratio of the medians.

Root, iproute2, openssh-server and tmux needed. ``ORCA_BENCH_KEYS`` (default 200) sets
the keystrokes per client.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))

KEYS = int(os.environ.get("ORCA_BENCH_KEYS", "200"))
TMUX_SOCKET = "orca-bench"
ORCA, TMUX = "orca term attach (ssh)", "ssh -t tmux attach"


def bench_pty() -> ModuleType:
    """``bench/pty.py``, loaded by its path: its name is also the standard library's."""
    spec = importlib.util.spec_from_file_location("bench_pty", ROOT / "bench" / "pty.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def figures(pty: ModuleType, times: list[float]) -> str:
    ms = [t * 1000 for t in times]
    return (
        f"median {statistics.median(ms):6.2f} ms, p90 {pty.percentile(ms, 0.9):6.2f} ms,"
        f" p99 {pty.percentile(ms, 0.99):6.2f} ms, max {max(ms):6.2f} ms"
    )


def main() -> int:
    import shutil

    from support import netns, sshd
    from support.journey import make_git_repo
    from support.remote import start_tree, stop_tree, wait_until
    from support.sshd import ALIAS, ssh_server

    if not (netns.available() and sshd.available() and shutil.which("tmux")):
        print("bench/ssh_echo.py needs root, iproute2 (ip netns), openssh-server and tmux")
        return 1
    pty = bench_pty()
    tmp = Path(tempfile.mkdtemp(prefix="orca-bench-ssh-"))
    clients: dict[str, tuple[int, int]] = {}
    times: dict[str, list[float]] = {}
    with netns.netns_pair() as (a, b), ssh_server(tmp / "sshd", b) as server:
        laptop = start_tree(tmp / "laptop", listen=None, prefix=tuple(a.prefix()))
        ssh = [*a.prefix(), "ssh", "-F", str(server.client_config)]
        try:
            added = laptop.cli(
                "host",
                "add",
                "buildbox",
                ALIAS,
                "--ssh-config",
                str(server.client_config),
                timeout=120,
            )
            assert added.returncode == 0, added.stdout + added.stderr
            repo = make_git_repo(tmp / "repo")
            server.remote.ok("repo", "add", str(repo))
            session = laptop.new_terminal("buildbox:repo", "cat")["sessionId"]
            rows = wait_until(
                lambda: [
                    s for s in laptop.json("term", "ls")["sessions"] if s["sessionId"] == session
                ],
                "the buildbox terminal on the laptop",
            )
            handle = rows[0]["handle"]
            started = subprocess.run(
                [*ssh, ALIAS, "tmux", "-L", TMUX_SOCKET, "new-session", "-d", "-s", "bench", "-x", "80", "-y", "24", "cat"],
                capture_output=True, text=True, timeout=30,
            )  # fmt: skip
            assert started.returncode == 0, started.stderr
            clients[ORCA] = pty.start_client(
                [*a.prefix(), *laptop.argv("term", "attach", handle)], laptop.env
            )
            clients[TMUX] = pty.start_client(
                [*ssh, "-t", ALIAS, "tmux", "-L", TMUX_SOCKET, "attach", "-t", "bench"],
                dict(os.environ),
            )
            times = pty.interleaved_echo({k: master for k, (_, master) in clients.items()}, KEYS)
        finally:
            for pid, master in clients.values():
                pty.stop_client(pid, master)
            subprocess.run(
                [*ssh, ALIAS, "tmux", "-L", TMUX_SOCKET, "kill-server"],
                capture_output=True,
                timeout=30,
            )
            stop_tree(laptop)
    print(f"keystroke echo over ssh, {KEYS} keys each, alternating (same veth, same sshd):")
    for label in (ORCA, TMUX):
        print(f"  {label:24}: {figures(pty, times[label])}")
    ratio = statistics.median(times[ORCA]) / statistics.median(times[TMUX])
    print(f"  ratio of medians: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
