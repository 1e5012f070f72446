"""The whole tree as a user runs it: up time, restart after kill -9, RSS idle and loaded.

In a fresh ORCA_HOME with the shipped supervision tree:

* `orca up` → every actor ready (wall time of the CLI, interpreter start included);
* per actor (store, hooks, ptyd, gitwatch), ROUNDS times: kill -9 → the
  ``actor.started`` event of its successor, as a lifecycle subscriber sees it
  (goal under 500 ms; the shipped first backoff, 250 ms, is part of it);
* RSS of orcad and every descendant (actors, terminals), idle and with SESSIONS
  terminals each running an idle shell.

Run: ``.venv/bin/python bench/system.py`` (takes about a minute and a half).

``.venv/bin/python bench/system.py crash-upgrade`` (issue 13, about half a minute),
with AGENTS terminals each printing a timestamped line every 10 ms:

* kill -9 of orcad → its actors gone (each stops itself; ptyd leaves every terminal
  with the keeper) → `orca up` (as the service manager would run it) → every actor
  ready again, ptyd having re-adopted every terminal; ROUNDS times;
* `orca restart --all` (every process replaced, the terminals kept): its wall time, and
  the output latency a reader sees (a line's arrival minus the time the agent printed
  it), during the hand-over against the same run's steady state.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import trio

from orca.actor import Mirror, open_rpc_client
from orca.contracts import ptyd, supervisor
from orca.paths import resolve_paths
from orca.wire.envelope import Event

ROUNDS = int(os.environ.get("ORCA_BENCH_ROUNDS", "5"))
SESSIONS = 50
ACTORS = ("store", "hooks", "ptyd", "gitwatch")
# The shipped tree doubles an actor's restart delay per crash and resets it once the
# actor has stayed up `stable_after_s` (10 s): each round waits that out, so every kill
# measures a first crash (delay `backoff_initial_s`, 0.25 s), not a crash loop.
STABLE_WAIT_S = 10.5


def orca(home: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, ORCA_HOME=home)
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [sys.executable, "-m", "orca.cli.main", *args],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )


def tree_rss_mib(root: int) -> tuple[float, int]:
    procs = [psutil.Process(root), *psutil.Process(root).children(recursive=True)]
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total / 2**20, len(procs)


class Starts:
    """Records when each ``actor.started`` event arrives (kept here, not in the mirror's
    state, so a resync does not forget them); the mirror's state is its last snapshot."""

    def __init__(self) -> None:
        self.started: list[tuple[float, supervisor.ActorStarted]] = []

    def load(self, snap: supervisor.Snapshot) -> supervisor.Snapshot:
        return snap

    def apply(
        self, state: supervisor.Snapshot, envelope: Event, event: supervisor.ActorStarted
    ) -> supervisor.Snapshot:
        self.started.append((time.perf_counter(), event))
        return state


async def restart_times(home: str) -> dict[str, list[float]]:
    paths = resolve_paths({"ORCA_HOME": home})
    starts = Starts()
    out: dict[str, list[float]] = {name: [] for name in ACTORS}
    actor = supervisor.CONTRACT.actor
    async with (
        open_rpc_client(paths.ipc_endpoint(actor, "rpc")) as sup,
        trio.open_nursery() as nursery,
    ):
        mirror: Mirror[supervisor.Snapshot] = Mirror(
            client=sup,
            pub_endpoint=paths.ipc_endpoint(actor, "pub"),
            snapshot=supervisor.SNAPSHOT,
            events=[supervisor.STARTED],
            load=starts.load,
            apply=starts.apply,
            consumer="bench<-supervisor",
        )
        await nursery.start(mirror.run)
        for _ in range(ROUNDS):
            await trio.sleep(STABLE_WAIT_S)
            for name in ACTORS:
                ready = supervisor.WaitReadyArgs(timeout=30)
                await sup.invoke(supervisor.WAIT_READY, ready, timeout=35)
                status = await sup.invoke(supervisor.STATUS)
                (pid,) = [a.pid for a in status.actors if a.name == name]
                assert pid is not None, f"{name} is not running"
                seen = len(starts.started)
                t0 = time.perf_counter()
                os.kill(pid, signal.SIGKILL)

                def restarted(m: object, name: str = name, seen: int = seen) -> bool:
                    return any(d.name == name for _, d in starts.started[seen:])

                await mirror.wait_until(restarted)
                at = next(t for t, d in starts.started[seen:] if d.name == name)
                out[name].append(at - t0)
        nursery.cancel_scope.cancel()
        mirror.close()
    return out


async def spawn_sessions(home: str, cwd: str) -> None:
    paths = resolve_paths({"ORCA_HOME": home})
    async with open_rpc_client(paths.ipc_endpoint(ptyd.CONTRACT.actor, "rpc")) as client:
        for i in range(SESSIONS):
            worktree_id = f"bench-repo::{cwd}/{i}"
            spawn = ptyd.SpawnArgs(argv=["/bin/sh"], cwd=cwd, worktree_id=worktree_id)
            await client.invoke(ptyd.SPAWN, spawn)


AGENTS = int(os.environ.get("ORCA_BENCH_AGENTS", "10"))
# Prints the wall-clock time every 10 ms: the reader compares it with its arrival.
TICKER = "while :; do date +%s.%N; sleep 0.01; done"


def lock_pid(home: str) -> int:
    return int(json.loads(resolve_paths({"ORCA_HOME": home}).lock_file.read_text())["pid"])


def status_of(home: str) -> supervisor.Status:
    from orca.client.sync import invoke

    return invoke(supervisor.STATUS, paths=resolve_paths({"ORCA_HOME": home}))


def orcad_crash_rounds(home: str) -> list[tuple[float, float, float]]:
    """Per round: (kill → actors gone, `orca up` wall, kill → every actor ready)."""
    out = []
    for _ in range(ROUNDS):
        status = status_of(home)
        procs = [psutil.Process(status.supervisor.pid)]
        procs += [psutil.Process(a.pid) for a in status.actors if a.pid]
        t0 = time.perf_counter()
        os.kill(status.supervisor.pid, signal.SIGKILL)
        _, alive = psutil.wait_procs(procs, timeout=30)
        assert not alive, f"still running after orcad's death: {alive}"
        t1 = time.perf_counter()
        orca(home, "up")
        t2 = time.perf_counter()
        out.append((t1 - t0, t2 - t1, t2 - t0))
        assert len(status_of(home).actors) == len(status.actors)
    return out


class Reader:
    """Polls every session's output (term.read every 20 ms, through restarts) and
    records each line's latency: arrival minus the timestamp the agent printed."""

    def __init__(self, home: str, sessions: list[str]) -> None:
        self.paths = resolve_paths({"ORCA_HOME": home})
        self.ends = dict.fromkeys(sessions, 0)
        self.partial = dict.fromkeys(sessions, b"")
        self.samples: list[tuple[float, float]] = []  # (arrival, latency)
        self.stop = False
        self.since = time.time()  # lines printed before the reader started are backlog

    def run(self) -> None:
        from orca.client.sync import invoke
        from orca.wire.errors import OrcaError

        while not self.stop:
            for sid in self.ends:
                try:
                    reply = invoke(
                        ptyd.READ,
                        ptyd.ReadArgs(session_id=sid, since=self.ends[sid]),
                        paths=self.paths,
                        timeout=2,
                    )
                except OrcaError:
                    continue  # the tree is being replaced: look again
                now = time.time()
                self.ends[sid] = reply.offset + len(reply.data)
                lines = (self.partial[sid] + reply.data).split(b"\r\n")
                self.partial[sid] = lines.pop()
                for line in lines:
                    try:
                        printed = float(line)
                    except ValueError:
                        continue
                    if printed >= self.since:
                        self.samples.append((now, now - printed))
            time.sleep(0.02)


def latency_ms(samples: list[tuple[float, float]], start: float, end: float) -> tuple[float, ...]:
    ms = sorted(lat * 1000 for at, lat in samples if start <= at < end)
    if not ms:
        return (0.0, 0.0, 0.0)
    return (statistics.median(ms), ms[int(len(ms) * 0.99) - 1 if len(ms) > 1 else 0], ms[-1])


def crash_upgrade() -> None:
    import threading

    from orca.client.sync import invoke

    home = tempfile.mkdtemp(prefix="orca-upgrade-")
    orca(home, "up")
    paths = resolve_paths({"ORCA_HOME": home})
    sessions = []
    for i in range(AGENTS):
        spawn = ptyd.SpawnArgs(
            argv=["/bin/sh", "-c", TICKER], cwd=home, worktree_id=f"b::{home}/{i}"
        )
        sessions.append(invoke(ptyd.SPAWN, spawn, paths=paths).session_id)
    pids = {s.session_id: s.pid for s in invoke(ptyd.LIST, ptyd.ListArgs(), paths=paths).sessions}
    try:
        rounds = orcad_crash_rounds(home)
        for label, k in (("actors gone", 0), ("`orca up`", 1), ("total", 2)):
            values = [r[k] * 1000 for r in rounds]
            print(
                f"kill -9 orcad → {label:11}: median {statistics.median(values):5.0f} ms"
                f"  max {max(values):5.0f} ms  ({len(values)} rounds, {AGENTS} terminals)"
            )
        reader = Reader(home, sessions)
        thread = threading.Thread(target=reader.run, daemon=True)
        thread.start()
        time.sleep(3)
        t0 = time.time()
        before = status_of(home)
        steps = orca(home, "restart", "--all").stdout
        t1 = time.time()
        after = status_of(home)
        time.sleep(3)
        reader.stop = True
        thread.join()
        old = {before.supervisor.pid, before.supervisor.keeper_pid, *(a.pid for a in before.actors)}
        new = {after.supervisor.pid, after.supervisor.keeper_pid, *(a.pid for a in after.actors)}
        rows = invoke(ptyd.LIST, ptyd.ListArgs(), paths=paths).sessions
        same = all(pids.get(r.session_id) == r.pid and r.running for r in rows)
        print(
            f"orca restart --all: {t1 - t0:.2f}s wall ({len(old)} processes, "
            f"{'all' if not old & new else 'NOT all'} replaced; {AGENTS} agents "
            f"{'all kept' if same and len(rows) == AGENTS else 'NOT all kept'})"
        )
        for line in steps.splitlines():
            if " in " in line:
                print(f"  {line}")
        steady = latency_ms(reader.samples, t0 - 3, t0)
        during = latency_ms(reader.samples, t0, t1 + 1)
        print(
            "output latency, steady      : median {:4.0f} ms  p99 {:5.0f} ms  max {:5.0f} ms".format(
                *steady
            )
        )
        print(
            "output latency, hand-over   : median {:4.0f} ms  p99 {:5.0f} ms  max {:5.0f} ms".format(
                *during
            )
            + f"  (max {during[2] / max(steady[2], 1):.0f}x steady)"
        )
    finally:
        orca(home, "down", "--kill-terminals")


def main() -> None:
    home = tempfile.mkdtemp(prefix="orca-system-")
    t0 = time.perf_counter()
    orca(home, "up")
    up_s = time.perf_counter() - t0
    root = int(json.loads(resolve_paths({"ORCA_HOME": home}).lock_file.read_text())["pid"])
    try:
        print(f"orca up → all ready: {up_s:.2f}s")
        time.sleep(2)  # let start-up work (scans, first saves) settle before measuring idle
        idle, n = tree_rss_mib(root)
        print(f"RSS idle: {idle:.0f} MiB over {n} processes")
        times = trio.run(restart_times, home)
        for name, ts in times.items():
            ms = [t * 1000 for t in ts]
            print(
                f"restart after kill -9, {name:8}: median {statistics.median(ms):4.0f} ms  "
                f"max {max(ms):4.0f} ms  ({len(ms)} kills; goal < 500 ms)"
            )
        cwd = str(Path(home))
        trio.run(spawn_sessions, home, cwd)
        time.sleep(2)
        loaded, n = tree_rss_mib(root)
        print(
            f"RSS with {SESSIONS} sessions: {loaded:.0f} MiB over {n} processes "
            f"({(loaded - idle) / SESSIONS:.1f} MiB per session incl. its shell)"
        )
    finally:
        orca(home, "down")


if __name__ == "__main__":
    if sys.argv[1:] == ["crash-upgrade"]:
        crash_upgrade()
    else:
        main()
