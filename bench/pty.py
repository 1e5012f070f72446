"""PTY benchmark (issue 6): ptyd against reading a PTY directly, in one run.

Figures, each with its baseline measured in the same run:

1. throughput: ``head -c 64M /dev/zero | base64`` delivered to an attached client
   (subscribe + ``term.attach`` + output events, the CLI's path) vs the same child read
   straight from a PTY in this process. Goal: ratio >= 0.8.
2. keystroke echo: one byte written, until its echo arrives, through attach
   (``term.write`` + output event) vs direct (write the master, read the master).
   Goal: p50/p99 <= 2x direct.
3. RSS of ptyd with 100 idle sessions that each printed 2 MB. Goal: below the
   scrollback bound x 100 + 30 MB.

Run: ``.venv/bin/python bench/pty.py [--mib 64] [--sessions 100] [--echo 200]``.
"""

from __future__ import annotations

import argparse
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from actors.ptyd.scrollback import DEFAULT_CAPACITY  # noqa: E402
from actors.ptyd.session import IDLE_COMPACT_S  # noqa: E402
from actors.ptyd.spawn import spawn_on_pty  # noqa: E402
from orca.client.sync import invoke  # noqa: E402
from orca.client.terminal import Attachment  # noqa: E402
from orca.contracts import ptyd  # noqa: E402
from orca.paths import OrcaPaths, resolve_paths  # noqa: E402
from orca.wire.errors import Unavailable  # noqa: E402

WT = "bench::/tmp"
CHILD_ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}


def flood_command(mib: int) -> str:
    return f"head -c {mib}M /dev/zero | base64"


# -- direct baselines --------------------------------------------------------------------


def direct_throughput(mib: int) -> tuple[int, float]:
    pid, master = spawn_on_pty(["/bin/sh", "-c", flood_command(mib)], "/", CHILD_ENV, 80, 24)
    total, start = 0, time.perf_counter()
    while True:
        try:
            data = os.read(master, 65536)
        except BlockingIOError:
            select.select([master], [], [])
            continue
        except OSError:
            break
        if not data:
            break
        total += len(data)
    elapsed = time.perf_counter() - start
    os.close(master)
    os.waitpid(pid, 0)
    return total, elapsed


def direct_echo(samples: int) -> list[float]:
    pid, master = spawn_on_pty(["/bin/cat"], "/", CHILD_ENV, 80, 24)
    times = []
    try:
        for i in range(samples):
            key = bytes([97 + i % 26])
            start = time.perf_counter()
            os.write(master, key)
            while True:
                select.select([master], [], [])
                if key in os.read(master, 4096):
                    break
            times.append(time.perf_counter() - start)
            if i % 50 == 49:
                os.write(master, b"\r")  # keep cat's line short
                select.select([master], [], [])
                os.read(master, 65536)
    finally:
        os.kill(pid, 9)
        os.close(master)
        os.waitpid(pid, 0)
    return times


# -- through ptyd ---------------------------------------------------------------------------


def start_ptyd(home: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, ORCA_HOME=str(home), PYTHONPATH=str(ROOT))
    env.pop("ORCA_SUPERVISOR", None)
    log = (home / "ptyd.stderr").open("ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "actors.ptyd"], env=env, stdout=log, stderr=log, cwd=ROOT
    )
    log.close()
    return proc


def list_sessions(paths: OrcaPaths, timeout: float = 10.0) -> list[ptyd.SessionRow]:
    return invoke(ptyd.LIST, ptyd.ListArgs(), timeout=timeout, paths=paths).sessions


def close(paths: OrcaPaths, session_id: str) -> None:
    invoke(ptyd.CLOSE, ptyd.SessionArgs(session_id=session_id), timeout=10.0, paths=paths)


def wait_ready(paths: OrcaPaths) -> None:
    deadline = time.monotonic() + 20
    while True:
        try:
            list_sessions(paths, timeout=2)
            return
        except Unavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def spawn(paths: OrcaPaths, argv: list[str]) -> str:
    request = ptyd.SpawnArgs(argv=argv, cwd="/", worktree_id=WT)
    return invoke(ptyd.SPAWN, request, timeout=10.0, paths=paths).session_id


def attached_throughput(paths: OrcaPaths, mib: int) -> tuple[int, float, int]:
    sid = spawn(paths, ["/bin/sh", "-c", f"read go; {flood_command(mib)}"])
    attachment = Attachment.open(sid, paths)
    received, repaints = 0, 0
    try:
        start = time.perf_counter()
        attachment.write(b"go\n")
        while attachment.exit_code is None or not attachment.output_ended:
            for data, repaint in attachment.poll_output(timeout_ms=1000):
                received += len(data)
                repaints += repaint
            if attachment.exit_code is not None and not attachment.output_ended:
                for data, repaint in attachment.catch_up():
                    received += len(data)
                    repaints += repaint
        elapsed = time.perf_counter() - start
    finally:
        attachment.close()
    close(paths, sid)
    return received, elapsed, repaints


def attached_echo(paths: OrcaPaths, samples: int) -> list[float]:
    sid = spawn(paths, ["/bin/cat"])
    attachment = Attachment.open(sid, paths)
    times = []
    try:
        for i in range(samples):
            key = bytes([97 + i % 26])
            start = time.perf_counter()
            attachment.write(key)
            while not any(key in data for data, _ in attachment.poll_output(timeout_ms=1000)):
                pass
            times.append(time.perf_counter() - start)
            if i % 50 == 49:
                attachment.write(b"\r")
                attachment.poll_output(timeout_ms=100)
    finally:
        attachment.close()
    close(paths, sid)
    return times


def idle_sessions_rss(paths: OrcaPaths, ptyd_pid: int, sessions: int) -> tuple[int, int]:
    # base64 of 1.5 MiB of random bytes: just over 2 MB of output that compresses no
    # better than real agent output would, then the child idles.
    script = "head -c 1572864 /dev/urandom | base64; exec sleep 3600"
    sids = [spawn(paths, ["/bin/sh", "-c", script]) for _ in range(sessions)]
    while True:
        rows = list_sessions(paths)
        if sum(1 for r in rows if r.session_id in sids and r.end_offset >= 2_000_000) == sessions:
            break
        time.sleep(0.2)
    time.sleep(IDLE_COMPACT_S + 1.0)  # "idle": past the point where sessions compact
    rss = psutil.Process(ptyd_pid).memory_info().rss
    for sid in sids:
        kill = ptyd.SignalArgs(session_id=sid, signal="KILL")
        invoke(ptyd.SIGNAL, kill, timeout=10.0, paths=paths)
    return rss, sum(r.end_offset for r in rows if r.session_id in sids)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--echo", type=int, default=200)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="orca-bench-pty-") as tmp:
        home = Path(tmp)
        paths = resolve_paths({"ORCA_HOME": str(home)}).ensure()
        proc = start_ptyd(home)
        try:
            wait_ready(paths)
            base_proc = psutil.Process(proc.pid).memory_info().rss
            d_bytes, d_s = direct_throughput(opts.mib)
            a_bytes, a_s, repaints = attached_throughput(paths, opts.mib)
            d_rate, a_rate = d_bytes / d_s, a_bytes / a_s
            print(f"throughput  direct   {d_rate / 1e6:8.1f} MB/s  ({d_bytes} B in {d_s:.2f}s)")
            print(
                f"throughput  attached {a_rate / 1e6:8.1f} MB/s  ({a_bytes} B in {a_s:.2f}s,"
                f" {repaints} repaints)"
            )
            print(f"throughput  ratio    {a_rate / d_rate:8.2f}   (goal >= 0.8)")
            d_echo = direct_echo(opts.echo)
            a_echo = attached_echo(paths, opts.echo)
            for q, name in ((0.5, "p50"), (0.99, "p99")):
                d, a = percentile(d_echo, q), percentile(a_echo, q)
                print(
                    f"echo {name}    direct {d * 1e3:7.3f} ms  attached {a * 1e3:7.3f} ms"
                    f"  ratio {a / d:6.1f}   (goal <= 2)"
                )
            print(
                f"echo mean    direct {statistics.mean(d_echo) * 1e3:7.3f} ms"
                f"  attached {statistics.mean(a_echo) * 1e3:7.3f} ms"
            )
            rss, printed = idle_sessions_rss(paths, proc.pid, opts.sessions)
            bound = DEFAULT_CAPACITY * opts.sessions + 30 * 2**20
            print(
                f"rss         {rss / 2**20:8.1f} MiB with {opts.sessions} idle sessions"
                f" ({printed / 1e6:.0f} MB printed; idle ptyd {base_proc / 2**20:.1f} MiB);"
                f" goal < {bound / 2**20:.0f} MiB"
            )
        finally:
            proc.terminate()
            proc.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
