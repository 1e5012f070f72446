"""Agent-status path benchmarks (issue 7), against a real ``hooks`` actor process.

1. Hook POST → subscriber event latency, p50/p99, with hooks paced at 1,000 events/s
   (open loop, 4 interleaved clients) over 50 panes (goal: p99 < 10 ms); and the same
   load read by a real ``orca watch --json`` process: POST → its stdout line (issue 12,
   goal p99 < 10 ms).
2. Sustained throughput: unpaced POSTs from 4 keep-alive connections, events/s as
   seen by a subscriber.
3. ``orca worktree ps --json`` wall time, interpreter start included, with 100
   worktrees × 3 panes in the store and ``ptyd`` running (ps reads its ``term.list``
   for the admission rule; goal < 300 ms, and under 2× a bare interpreter start),
   against a bare ``python -c pass`` start in the same run.

Run: ``.venv/bin/python bench/hooks.py``. Prints the figures; exit 0.
"""

from __future__ import annotations

import http.client
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from actors.hooks.endpoint_file import read_endpoint_env  # noqa: E402
from orca.client.sync import Subscription, invoke  # noqa: E402
from orca.contracts import hooks, ptyd  # noqa: E402
from orca.contracts.base import Op  # noqa: E402
from orca.hook_script import ENDPOINT_FILE_NAME  # noqa: E402
from orca.paths import OrcaPaths, resolve_paths  # noqa: E402

PACED_RATE = 1000  # events/s, the load point
PACED_EVENTS = 5000
SUSTAINED_EVENTS = 20_000
SENDERS = 4
PACERS = 4
PANES = 50
PS_RUNS = 15
WORKTREES, PANES_PER_WORKTREE = 100, 3
STATES = ("UserPromptSubmit", "PermissionRequest", "Stop")


def pane_key(tab: str, leaf: int) -> str:
    return f"tab-{tab}:00000000-0000-4000-8000-{leaf:012d}"


def pct(samples: list[float], q: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(q * len(s)))]


def start_actor(home: Path, actor: str = "hooks") -> subprocess.Popen[bytes]:
    env = dict(os.environ, ORCA_HOME=str(home), PYTHONPATH=str(ROOT), ORCA_LOG_LEVEL="WARNING")
    env.pop("ORCA_SUPERVISOR", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", f"actors.{actor}"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    paths = resolve_paths({"ORCA_HOME": str(home)})
    deadline = time.monotonic() + 20
    ready: Op[Any, Any] = hooks.SNAPSHOT if actor == "hooks" else ptyd.SNAPSHOT
    while True:  # readiness: the first answered snapshot (a bench, not a test)
        try:
            invoke(ready, timeout=1.0, paths=paths)
            return proc
        except Exception:
            if time.monotonic() > deadline:
                proc.kill()
                raise
            time.sleep(0.05)


def subscribe_main(endpoint: str, expected: int) -> None:
    """``--subscribe``: a subscriber in its own process (no GIL shared with the senders).

    Prints ``ready`` once a heartbeat proves the subscription live, then collects the
    arrival time of ``expected`` agentStatus.set events (keyed by the row's detail) and
    prints them as JSON. ``perf_counter`` is CLOCK_MONOTONIC, comparable across processes;
    the arrival includes decoding the event with the contract (what every consumer pays).
    """
    consumer = "bench<-hooks"
    with Subscription(endpoint, [hooks.STATUS_SET], consumer=consumer, rcvhwm=1_000_000) as sub:
        if not sub.wait_live(30.0):
            raise RuntimeError(f"no heartbeat from {endpoint}")
        print("ready", flush=True)
        arrivals: dict[str, float] = {}
        while len(arrivals) < expected and (received := sub.receive(10.0)) is not None:
            written: hooks.StatusSet = received[1]
            arrivals[written.row.detail] = time.perf_counter()
    print(json.dumps(arrivals), flush=True)


class Subscriber:
    """The subscriber process, started before a phase and read after it."""

    def __init__(self, endpoint: str, expected: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--subscribe", endpoint, str(expected)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError("subscriber did not start")

    def arrivals(self) -> dict[str, float]:
        out, _ = self.proc.communicate(timeout=60)
        arrivals: dict[str, float] = json.loads(out)
        return arrivals


def hook_body(i: int) -> bytes:
    return json.dumps(
        {"session_id": "bench", "hook_event_name": STATES[i % 3], "tool_name": f"ev{i}"}
    ).encode()


class Sender:
    def __init__(self, port: int, secret: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        self.secret = secret

    def post(self, i: int, pane: str, worktree: str = "repo1::/bench/wt") -> None:
        self.conn.request(
            "POST",
            "/hook/claude",
            body=hook_body(i),
            headers={
                "X-Orca-Hook-Secret": self.secret,
                "X-Orca-Pane-Key": pane,
                "X-Orca-Worktree-Id": worktree,
                "Content-Type": "application/json",
            },
        )
        response = self.conn.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"hook refused: {response.status}")


def bench_latency(port: int, secret: str, endpoint: str) -> dict[str, float]:
    warm = Sender(port, secret)
    for i in range(200):  # warm-up, outside the sample
        warm.post(10**6 + i, pane_key("w", i % PANES))
    sub = Subscriber(endpoint, PACED_EVENTS)
    sent: dict[str, float] = {}
    start = time.perf_counter() + 0.05

    def pace(k: int) -> None:
        # PACERS interleaved clients: event i is due at start + i / rate, whatever the
        # round trip of the previous one (an open-loop load, like independent agents).
        sender = Sender(port, secret)
        for i in range(k, PACED_EVENTS, PACERS):
            delay = start + i / PACED_RATE - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            sent[f"ev{i}"] = time.perf_counter()
            sender.post(i, pane_key("l", i % PANES))

    threads = [threading.Thread(target=pace, args=(k,)) for k in range(PACERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = max(sent.values()) - start
    arrivals = sub.arrivals()
    lat = [(arrivals[k] - t) * 1000 for k, t in sent.items() if k in arrivals]
    return {
        "p50": statistics.median(lat),
        "p99": pct(lat, 0.99),
        "max": max(lat),
        "lost": len(sent) - len(lat),
        "rate": PACED_EVENTS / elapsed,
    }


def bench_watch(port: int, secret: str, home: Path) -> dict[str, float]:
    """Hook POST → the line ``orca watch --json`` prints, paced at PACED_RATE."""
    env = dict(os.environ, ORCA_HOME=str(home), PYTHONPATH=str(ROOT))
    watch = subprocess.Popen(
        [sys.executable, "-m", "orca.cli.main", "watch", "--json"],
        stdout=subprocess.PIPE,
        env=env,
        cwd=ROOT,
        bufsize=0,
    )
    assert watch.stdout is not None
    stream = watch.stdout
    arrivals: dict[str, float] = {}
    live = threading.Event()

    def read() -> None:
        for raw in stream:
            now = time.perf_counter()
            detail = json.loads(raw).get("detail", "")
            if detail == "watch-probe":
                live.set()
            arrivals[detail] = now

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    probe = Sender(port, secret)
    deadline = time.monotonic() + 30
    while not live.wait(0.2):  # the stream is live once a probe's line comes back
        if time.monotonic() > deadline:
            raise RuntimeError("orca watch printed nothing")
        probe.conn.request(
            "POST",
            "/hook/claude",
            body=json.dumps({"state": "working", "detail": "watch-probe"}).encode(),
            headers={
                "X-Orca-Hook-Secret": secret,
                "X-Orca-Pane-Key": pane_key("p", 0),
                "X-Orca-Worktree-Id": "repo1::/bench/wt",
                "Content-Type": "application/json",
            },
        )
        probe.conn.getresponse().read()
    sent: dict[str, float] = {}
    start = time.perf_counter() + 0.05

    def pace(k: int) -> None:
        sender = Sender(port, secret)
        for i in range(k, PACED_EVENTS, PACERS):
            delay = start + i / PACED_RATE - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            sent[f"ev{3 * 10**6 + i}"] = time.perf_counter()
            sender.post(3 * 10**6 + i, pane_key("v", i % PANES))

    threads = [threading.Thread(target=pace, args=(k,)) for k in range(PACERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = max(sent.values()) - start
    wait_until = time.monotonic() + 10
    while len([k for k in sent if k in arrivals]) < len(sent) and time.monotonic() < wait_until:
        time.sleep(0.05)  # a bench waiting for the tail of a stream, not a test
    watch.kill()
    watch.wait()
    lat = [(arrivals[k] - t) * 1000 for k, t in sent.items() if k in arrivals]
    return {
        "p50": statistics.median(lat),
        "p99": pct(lat, 0.99),
        "max": max(lat),
        "lost": len(sent) - len(lat),
        "rate": PACED_EVENTS / elapsed,
    }


def bench_sustained(port: int, secret: str, endpoint: str) -> float:
    per_sender = SUSTAINED_EVENTS // SENDERS
    sub = Subscriber(endpoint, SENDERS * per_sender)

    def run(k: int) -> None:
        sender = Sender(port, secret)
        for i in range(per_sender):
            sender.post(2 * 10**6 + k * per_sender + i, pane_key(f"s{k}", i % PANES))

    start = time.perf_counter()
    threads = [threading.Thread(target=run, args=(k,)) for k in range(SENDERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    arrivals = sub.arrivals()
    return len(arrivals) / (max(arrivals.values()) - start)


def populate(paths: OrcaPaths) -> None:
    for w in range(WORKTREES):
        for p in range(PANES_PER_WORKTREE):
            pane = pane_key(str(w), p)
            document = {"state": ("working", "blocked", "done")[p], "agent": "claude"}
            request = hooks.IngestOscArgs(
                pane_key=pane,
                worktree_id=f"repo1::/bench/wt-{w:03d}",
                terminal_handle=f"term_{w}_{p}",
                payload=json.dumps(document),
            )
            invoke(hooks.INGEST_OSC, request, paths=paths)


def timed_runs(
    argvs: list[list[str]], env: dict[str, str]
) -> list[tuple[list[float], list[float]]]:
    """Wall and CPU (user+sys) milliseconds of each run of each of ``argvs``, the
    commands interleaved round by round (a busy moment slows all of them alike).

    CPU time is reported next to wall time because the shared 2-core box is often
    loaded: wall time then includes the run queue, CPU time is what the command costs.
    """
    results: list[tuple[list[float], list[float]]] = [([], []) for _ in argvs]
    for _ in range(PS_RUNS):
        for argv, (walls, cpus) in zip(argvs, results, strict=True):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            result = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True)
            walls.append((time.perf_counter() - t) * 1000)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            cpus.append(used * 1000)
            if result.returncode != 0:
                raise RuntimeError(result.stderr.decode())
    return results


def bench_ps(home: Path, paths: OrcaPaths) -> dict[str, Any]:
    populate(paths)
    env = dict(os.environ, ORCA_HOME=str(home), PYTHONPATH=str(ROOT))
    # As an installed orca runs: from cached bytecode (written by the untimed first run
    # below), not compiled from source on every run when the shell forbids .pyc files.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    argv = [sys.executable, "-m", "orca.cli.main", "worktree", "ps", "--json"]
    out = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, check=True).stdout
    listing = json.loads(out)["worktrees"]
    subprocess.run(argv[:-1], env=env, cwd=ROOT, capture_output=True, check=True)  # .pyc
    (ps, ps_cpu), (table, _), (bare, bare_cpu) = timed_runs(
        [argv, argv[:-1], [sys.executable, "-c", "pass"]], env
    )
    return {
        "worktrees": len(listing),
        "rows": sum(len(w["agents"]) for w in listing),
        "ps_median": statistics.median(ps),
        "ps_max": max(ps),
        "table_median": statistics.median(table),
        "bare_median": statistics.median(bare),
        "ps_cpu": statistics.median(ps_cpu),
        "bare_cpu": statistics.median(bare_cpu),
    }


def stop_actor(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="orca-bench-hooks-") as tmp:
        home = Path(tmp) / "events"
        home.mkdir()
        paths = resolve_paths({"ORCA_HOME": str(home)})
        proc = start_actor(home)
        try:
            fields = read_endpoint_env(paths.hooks_dir / ENDPOINT_FILE_NAME)
            port, secret = int(fields["ORCA_HOOK_PORT"]), fields["ORCA_HOOK_SECRET"]
            endpoint = paths.ipc_endpoint(hooks.CONTRACT.actor, "pub")
            lat = bench_latency(port, secret, endpoint)
            print(
                f"hook POST → subscriber event at {lat['rate']:.0f} events/s over "
                f"{PANES} panes: p50 {lat['p50']:.2f} ms, p99 {lat['p99']:.2f} ms, "
                f"max {lat['max']:.2f} ms, lost {lat['lost']} (goal p99 < 10 ms)"
            )
            watch = bench_watch(port, secret, home)
            print(
                f"hook POST → `orca watch --json` line at {watch['rate']:.0f} events/s: "
                f"p50 {watch['p50']:.2f} ms, p99 {watch['p99']:.2f} ms, max "
                f"{watch['max']:.2f} ms, lost {watch['lost']} (goal p99 < 10 ms)"
            )
            rate = bench_sustained(port, secret, endpoint)
            print(
                f"sustained: {rate:,.0f} events/s delivered to a subscriber "
                f"({SENDERS} keep-alive HTTP clients, unpaced)"
            )
        finally:
            stop_actor(proc)

        home = Path(tmp) / "ps"
        home.mkdir()
        paths = resolve_paths({"ORCA_HOME": str(home)})
        proc = start_actor(home)
        terminals = start_actor(home, "ptyd")
        try:
            ps = bench_ps(home, paths)
        finally:
            stop_actor(terminals)
            stop_actor(proc)
        per = ps["rows"] // max(1, ps["worktrees"])
        print(
            f"orca worktree ps, {ps['worktrees']} worktrees × {per} panes ({ps['rows']} rows), "
            f"interpreter start included: --json median {ps['ps_median']:.0f} ms "
            f"(max {ps['ps_max']:.0f}), table median {ps['table_median']:.0f} ms "
            "(goal < 300 ms)"
        )
        print(
            f"baseline `python -c pass`: wall {ps['bare_median']:.0f} ms → ps --json costs "
            f"{ps['ps_median'] / ps['bare_median']:.1f}× a bare interpreter start (goal < 2×); CPU "
            f"(user+sys) ps {ps['ps_cpu']:.0f} ms vs bare {ps['bare_cpu']:.0f} ms"
        )
        print(f"load average during the run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--subscribe":
        subscribe_main(sys.argv[2], int(sys.argv[3]))
    else:
        main()
