"""Remote hosts over a veth link vs the local host, in the same run (issue 18).

Two Orca trees in two network namespaces joined by a veth pair (as
tests/system/test_remote_hosts.py; the set-up helpers come from tests/fixtures/support):
"buildbox" (namespace b) runs the agents' terminals and serves its gateway; "laptop"
(namespace a) follows it. Figures, each with its same-run baseline and the ratio:

1. ``orca worktree ps`` on the laptop following 3 hosts vs ``orca worktree ps`` on the
   buildbox itself (one local host, the same 5 agents) and vs the laptop following
   none. The command reads the local gateway's mirrors, so this is the cost of
   projecting and printing the remote rows, not of the link. The 3 hosts are the one
   buildbox added under three names: three independent links and mirrors.
2. attach throughput: reading a session's retained scrollback (``term.read`` by
   offset, 256 KiB chunks, as ``orca term attach HOST:HANDLE`` follows a stream) through
   the gateway over the veth vs over the buildbox's own ipc socket.
3. keystroke echo: one byte written to a ``cat`` terminal until it is read back, the
   median round trip, remote vs local (both by back-to-back ``term.read``), and remote
   the way ``orca term attach HOST:HANDLE`` follows it now (``gateway.termWait``: the
   read waits in the remote gateway until the output is there).
4. an idle remote attach: CPU seconds of the following process over IDLE_S with
   ``gateway.termWait`` vs polling ``term.read`` every 20 ms (what attach did before).

Root and iproute2 needed. ``ORCA_BENCH_ROUNDS`` (default 15) sets the rounds.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))

ROUNDS = int(os.environ.get("ORCA_BENCH_ROUNDS", "15"))
PORT = 7711
CHUNK = 256 * 1024


# Read this much of the retained scrollback (ptyd keeps the last 1 MiB by default).
SPAN = 900_000


def _read_scrollback(invoke_read, session_id: str, end: int) -> float:  # type: ignore[no-untyped-def]
    """Seconds to read [end - SPAN, end) by offset in CHUNK pieces."""
    from orca.contracts import ptyd

    t0 = time.perf_counter()
    offset = end - SPAN
    while offset < end:
        got = invoke_read(
            ptyd.READ, ptyd.ReadArgs(session_id=session_id, since=offset, limit=CHUNK)
        )
        assert not got.gap and got.offset == offset, "the span must be within the scrollback"
        offset += len(got.data)
    return time.perf_counter() - t0


def _echo_once(invoke, session_id: str, n: int) -> float:  # type: ignore[no-untyped-def]
    from orca.contracts import ptyd

    start = invoke(ptyd.READ, ptyd.ReadArgs(session_id=session_id, since=None)).end
    key = bytes([97 + n % 26])
    t0 = time.perf_counter()
    invoke(ptyd.WRITE, ptyd.WriteArgs(session_id=session_id, data=key))
    while True:
        got = invoke(ptyd.READ, ptyd.ReadArgs(session_id=session_id, since=start))
        if key in got.data:
            return time.perf_counter() - t0


IDLE_S = 3.0


def _echo_waiting(link, session_id: str, n: int) -> float:  # type: ignore[no-untyped-def]
    from orca.contracts import gateway as gw
    from orca.contracts import ptyd

    start = link.invoke(ptyd.READ, ptyd.ReadArgs(session_id=session_id, since=None)).end
    key = bytes([97 + n % 26])
    t0 = time.perf_counter()
    link.invoke(ptyd.WRITE, ptyd.WriteArgs(session_id=session_id, data=key))
    while True:
        got = link.invoke(
            gw.TERM_WAIT,
            gw.TermWaitArgs(session_id=session_id, since=start, wait_s=5.0),
            timeout=20.0,
        )
        if key in got.data:
            return time.perf_counter() - t0
        start = got.end


def _idle_cpu(link, session_id: str, waiting: bool) -> float:  # type: ignore[no-untyped-def]
    """CPU seconds this process spends following an idle session for IDLE_S."""
    from orca.contracts import gateway as gw
    from orca.contracts import ptyd

    offset = link.invoke(ptyd.READ, ptyd.ReadArgs(session_id=session_id, since=None)).end
    cpu0, t_end = time.process_time(), time.monotonic() + IDLE_S
    while time.monotonic() < t_end:
        if waiting:
            wait = max(0.05, t_end - time.monotonic())
            got = link.invoke(
                gw.TERM_WAIT,
                gw.TermWaitArgs(session_id=session_id, since=offset, wait_s=wait),
                timeout=20.0,
            )
        else:
            got = link.invoke(ptyd.READ, ptyd.ReadArgs(session_id=session_id, since=offset))
            time.sleep(0.02)
        offset = got.end
    return time.process_time() - cpu0


def measure(mode: str, spec: dict[str, str]) -> dict[str, float]:
    """Throughput (MB/s) and echo (ms) for ``mode`` (remote: through the gateway)."""
    from orca.cli.remote.terminal import RemoteLink
    from orca.client.sync import invoke as local_invoke
    from orca.paths import resolve_paths
    from orca.remote.hosts import load_hosts

    if mode == "remote":
        link = RemoteLink(load_hosts(resolve_paths())["box1"])
        call = link.invoke
    else:

        def call(op, args=None, timeout=10.0):  # type: ignore[no-untyped-def]
            return local_invoke(op, args, timeout=timeout)

    end = int(spec["end"])
    reads = [_read_scrollback(call, spec["big"], end) for _ in range(max(3, ROUNDS // 3))]
    echoes = [_echo_once(call, spec["cat"], i) for i in range(ROUNDS * 2)]
    figures = {
        "mbps": SPAN / statistics.median(reads) / 1e6,
        "echo_ms": statistics.median(echoes) * 1000,
    }
    if mode == "remote":
        waited = [_echo_waiting(link, spec["cat"], i) for i in range(ROUNDS * 2)]
        figures["echo_wait_ms"] = statistics.median(waited) * 1000
        figures["idle_wait_cpu_ms"] = _idle_cpu(link, spec["cat"], waiting=True) * 1000
        figures["idle_poll_cpu_ms"] = _idle_cpu(link, spec["cat"], waiting=False) * 1000
    return figures


def _ps_time(tree) -> float:  # type: ignore[no-untyped-def]
    times = []
    tree.cli("worktree", "ps")  # warm the .pyc cache
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        done = tree.cli("worktree", "ps")
        times.append(time.perf_counter() - t0)
        assert done.returncode == 0, done.stderr
    return statistics.median(times)


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--measure":
        spec = json.loads(sys.argv[2])
        print(json.dumps(measure(spec["mode"], spec)))
        return 0
    from support.journey import make_git_repo
    from support.netns import available, netns_pair
    from support.remote import FAST_BEATS, start_tree, stop_tree

    from orca.client.sync import invoke
    from orca.contracts import ptyd

    if not available():
        print("bench/remote.py needs root and iproute2 (ip netns)")
        return 1
    tmp = Path(tempfile.mkdtemp(prefix="orca-bench-remote-"))
    with netns_pair() as (a, b):
        trees = []
        try:
            box = start_tree(
                tmp / "box",
                listen=f"tcp://{b.address}:{PORT}",
                prefix=tuple(b.prefix()),
                beats=FAST_BEATS,
            )
            trees.append(box)
            laptop = start_tree(
                tmp / "laptop", listen=None, prefix=tuple(a.prefix()), beats=FAST_BEATS
            )
            trees.append(laptop)
            repo = make_git_repo(tmp / "repo")
            box.ok("repo", "add", str(repo))
            for wt in range(5):
                box.ok("term", "new", "repo", "--", "sh", "-c",
                       f"printf '\\033]9999;{{\"state\":\"working\",\"agent\":\"a{wt}\"}}\\007'; exec sleep 600")  # fmt: skip
            big = box.new_terminal(
                "repo", "sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' x; sleep 600"
            )["sessionId"]
            cat = box.new_terminal("repo", "cat")["sessionId"]
            time.sleep(2.0)  # let the 3 MB reach ptyd (it keeps the last 1 MiB)
            session = next(
                s
                for s in invoke(ptyd.LIST, ptyd.ListArgs(), paths=box.paths).sessions
                if s.session_id == big
            )
            time.sleep(3.0)  # let both trees settle before timing anything
            ps_local = _ps_time(laptop)
            key = laptop.ok("host", "key").strip()
            box.ok("host", "authorize", "--", key)  # a Z85 key may start with '-'

            server = box.ok("host", "key", "--server").strip()
            for name in ("box1", "box2", "box3"):
                laptop.ok(
                    "host", "add", name, f"tcp://{b.address}:{PORT}", f"--server-key={server}"
                )
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                rows = laptop.json("worktree", "ps")["worktrees"]
                if sum(1 for w in rows if w["host"].startswith("box") and w["verifiable"]) >= 3:
                    break
                time.sleep(0.2)
            ps_remote = _ps_time(laptop)
            ps_box = _ps_time(box)  # the same agents, on their own host
            spec = {"big": big, "cat": cat, "end": str(session.end_offset)}
            figures = {}
            for mode, tree, ns in (("local", box, b), ("remote", laptop, a)):
                out = subprocess.run(
                    [*ns.prefix(), sys.executable, __file__, "--measure", json.dumps({**spec, "mode": mode})],
                    env=tree.env, capture_output=True, text=True, timeout=300,
                )  # fmt: skip
                assert out.returncode == 0, out.stderr
                figures[mode] = json.loads(out.stdout.strip().splitlines()[-1])
            for name in ("box1", "box2", "box3"):
                laptop.ok("host", "rm", name)
            time.sleep(2.0)  # the gateway drops the mirrors within a second
            ps_local = min(ps_local, _ps_time(laptop))  # baseline: before and after
        finally:
            for tree in reversed(trees):
                stop_tree(tree)
    loc, rem = figures["local"], figures["remote"]
    print(
        f"worktree ps, laptop following 0 hosts : {ps_local * 1000:7.1f} ms (median of {ROUNDS}, best of before/after)"
    )
    print(f"worktree ps, buildbox (1 local host)  : {ps_box * 1000:7.1f} ms (5 agents)")
    print(
        f"worktree ps, laptop following 3 hosts : {ps_remote * 1000:7.1f} ms (15 agents)"
        f"  ratio {ps_remote / ps_box:.2f}x vs 1 local host, {ps_remote / ps_local:.2f}x vs 0 hosts"
    )
    print(f"attach read, local ipc                : {loc['mbps']:7.1f} MB/s")
    print(
        f"attach read, remote via gateway (veth): {rem['mbps']:7.1f} MB/s  ratio {rem['mbps'] / loc['mbps']:.2f}x"
    )
    print(f"keystroke echo, local ipc             : {loc['echo_ms']:7.2f} ms (median)")
    print(
        f"keystroke echo, remote via gateway    : {rem['echo_ms']:7.2f} ms  ratio {rem['echo_ms'] / loc['echo_ms']:.2f}x"
    )
    print(
        f"keystroke echo, remote termWait       : {rem['echo_wait_ms']:7.2f} ms"
        f"  ratio {rem['echo_wait_ms'] / loc['echo_ms']:.2f}x vs local read loop"
    )
    print(
        f"idle remote attach, {IDLE_S:g} s, CPU       : termWait {rem['idle_wait_cpu_ms']:.1f} ms,"
        f" 20 ms term.read poll {rem['idle_poll_cpu_ms']:.1f} ms"
        f"  ratio {rem['idle_poll_cpu_ms'] / max(rem['idle_wait_cpu_ms'], 0.1):.0f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
