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
back on it (the remote terminal's own echo, drawn by the client); the next one goes
once the screen is quiet. Rounds alternate between the two clients, so both see the
same machine. Printed: median, p90 and max of each, and the ratio of the medians.

Root, iproute2, openssh-server and tmux needed. ``ORCA_BENCH_KEYS`` (default 200) sets
the keystrokes per client.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))

KEYS = int(os.environ.get("ORCA_BENCH_KEYS", "200"))
LETTERS = b"abcdefghijklmnopqrstuvwxyz"
# Escape sequences a client draws with: stripped before looking for the echoed key.
_ESCAPES = re.compile(
    rb"\x1b(\[[0-9;?<=>]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|[=>78DEHM])"
)
TMUX_SOCKET = "orca-bench"


class Client:
    """A program in a pseudo-terminal of its own (80x24), read and written by the bench."""

    def __init__(self, name: str, argv: Sequence[str], env: dict[str, str]) -> None:
        self.name = name
        pid, fd = os.forkpty()
        if pid == 0:  # the child: the pty is its stdin, stdout and stderr
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
            os.execvpe(argv[0], list(argv), {**env, "TERM": "xterm-256color"})
        self.pid, self.fd = pid, fd
        self.times: list[float] = []

    def read_quiet(self, quiet_s: float, limit_s: float = 30.0) -> bytes:
        """What it draws until it has drawn nothing for ``quiet_s``."""
        got = b""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], quiet_s)
            if not ready:
                return got
            try:
                got += os.read(self.fd, 65536)
            except OSError:  # it ended
                raise SystemExit(f"{self.name} ended: {got[-500:]!r}") from None
        return got

    def wait_for(self, needle: bytes, limit_s: float = 30.0) -> bytes:
        got = b""
        deadline = time.monotonic() + limit_s
        while needle not in _ESCAPES.sub(b"", got):
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.fd], [], [], max(left, 0.0))
            if not ready:
                raise SystemExit(
                    f"{self.name}: {needle!r} not drawn in {limit_s} s: {got[-500:]!r}"
                )
            got += os.read(self.fd, 65536)
        return got

    def echo(self, key: bytes) -> float:
        """Seconds from writing ``key`` to seeing it drawn."""
        t0 = time.perf_counter()
        os.write(self.fd, key)
        self.wait_for(key, limit_s=10.0)
        return time.perf_counter() - t0

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if os.waitpid(self.pid, os.WNOHANG) != (0, 0):
                break
            time.sleep(0.05)
        else:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        os.close(self.fd)


def run_rounds(clients: list[Client]) -> None:
    for n in range(KEYS):
        key = LETTERS[n % len(LETTERS) : n % len(LETTERS) + 1]
        for client in clients if n % 2 == 0 else reversed(clients):
            client.times.append(client.echo(key))
            client.read_quiet(0.05)  # whatever else it draws for that key
            if n % 40 == 39:  # a fresh line now and then: cat prints it back
                os.write(client.fd, b"\r")
                client.read_quiet(0.2)


def figures(times: list[float]) -> str:
    ms = sorted(t * 1000 for t in times)
    p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
    return f"median {statistics.median(ms):6.2f} ms, p90 {p90:6.2f} ms, max {ms[-1]:6.2f} ms"


def main() -> int:
    import shutil

    from support import netns, sshd
    from support.journey import make_git_repo
    from support.remote import start_tree, stop_tree, wait_until
    from support.sshd import ALIAS, ssh_server

    if not (netns.available() and sshd.available() and shutil.which("tmux")):
        print("bench/ssh_echo.py needs root, iproute2 (ip netns), openssh-server and tmux")
        return 1
    tmp = Path(tempfile.mkdtemp(prefix="orca-bench-ssh-"))
    clients: list[Client] = []
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
            orca = Client(
                "orca term attach (ssh)",
                [*a.prefix(), *laptop.argv("term", "attach", handle)],
                laptop.env,
            )
            clients.append(orca)
            tmux = Client(
                "ssh -t tmux attach",
                [*ssh, "-t", ALIAS, "tmux", "-L", TMUX_SOCKET, "attach", "-t", "bench"],
                dict(os.environ),
            )
            clients.append(tmux)
            for client in clients:
                client.read_quiet(1.0)  # the first screen
            run_rounds(clients)
        finally:
            for client in clients:
                client.close()
            subprocess.run(
                [*ssh, ALIAS, "tmux", "-L", TMUX_SOCKET, "kill-server"],
                capture_output=True,
                timeout=30,
            )
            stop_tree(laptop)
    o, t = clients
    print(f"keystroke echo over ssh, {KEYS} keys each, alternating (same veth, same sshd):")
    print(f"  {o.name:24}: {figures(o.times)}")
    print(f"  {t.name:24}: {figures(t.times)}")
    print(f"  ratio of medians: {statistics.median(o.times) / statistics.median(t.times):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
