"""Dispatch latency of ``orca run``: run.create → the prompt typed into each agent.

One run of 100 variants (50 fake ``claude``, 50 fake ``codex``: the chaos test's
``tests/fixtures/support/orch_agent.sh``, which report SessionStart through the real
hook script and take the prompt from their terminal) in a fresh ORCA_HOME; for each
variant the time from the run's creation to the moment orch recorded the prompt as
typed (``promptedAtMs - createdAtMs``: its worktree made, its terminal spawned, its
agent reported ready through hooks, the prompt written to its PTY). Baseline: the same
for a run of one variant, in the same tree. Printed: p50 / p99 / max of both and the
ratio of the p50s.

Also printed: the CPU seconds orcad and each actor used meanwhile (with the git
processes they ran). The bench reads ``orca run show`` every 2 s only: each one
previews every variant's merge in gitwatch.

Measured (``python bench/orch.py``, 2 cores shared with other builds and test runs;
"before" is the tree at 9631df2 run beside it in the same session, 2026-12-07):

    before: 100 variants p50 3.39 / 2.98 s, p99 6.77 / 7.04 s, all 100 in 12.1 / 12.4 s;
            gitwatch 7.0 / 7.5 CPU s (2.8 / 3.0 of it git); `run show` of the 100:
            1.38 / 1.81 s (1 variant: 0.09 s)
    after:  100 variants p50 2.6-3.2 s, p99 5.2-6.4 s, all 100 in 6.4-8.0 s; gitwatch
            3.9-4.9 CPU s (2.2-2.8 git); `run show` of the 100: 0.38-0.59 s
    1 variant: p50 0.07-0.12 s
    20 variants of a repository of 3000 files (ORCA_BENCH_REPO_FILES=3000): p99 6.63 s
    before, 3.38 s after (each checkout 0.26 s, now side by side).

What is left is git's own: ``git worktree add`` reads every worktree of the repo (15 ms
a worktree at 10 of them, 27 ms at 130, unloaded) and two at once in one repo are not
safe, so 100 of them follow each other (their sum was 5.8 s in a loaded run); the fake
agents' own processes (bash, curl per hook, a commit each) share the 2 cores.

Set ORCA_BENCH_VARIANTS to change the count, ORCA_BENCH_REPO_FILES to give the repository
that many more files (100 to a directory) so that each worktree's checkout weighs.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from orca_tree import OrcaTree  # bench/orca_tree.py

VARIANTS = int(os.environ.get("ORCA_BENCH_VARIANTS", "100"))
REPO_FILES = int(os.environ.get("ORCA_BENCH_REPO_FILES", "0"))
FAKE_AGENT = (
    Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "support" / "orch_agent.sh"
)
TIMEOUT_S = 300.0


def latencies(tree: OrcaTree, agents: str) -> tuple[str, list[float]]:
    created = json.loads(
        tree.cli("run", "new", "repo", "write the answer", "--agents", agents, "--json")
    )
    run = created["run"]["run"]
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        info = json.loads(tree.cli("run", "show", run, "--json"))["run"]
        if all(v["promptedAtMs"] for v in info["variants"]):
            return run, sorted(
                (v["promptedAtMs"] - info["createdAtMs"]) / 1000 for v in info["variants"]
            )
        failed = [v for v in info["variants"] if v["state"] == "failed"]
        if failed:
            raise SystemExit(f"failed variants: {failed[:3]}")
        # Not more often: `run show` previews every variant's merge (git, in gitwatch),
        # so at 0.5 s the bench's own polling was most of gitwatch's work. The figures
        # are orch's own timestamps, whenever they are read.
        time.sleep(2.0)
    raise SystemExit("timed out waiting for the prompts")


def add_files(tree: OrcaTree, count: int) -> None:
    """``count`` small files committed to the tree's repository, 100 to a directory."""
    for i in range(count):
        folder = tree.repo / f"d{i // 100}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"file {i}\n")
    tree.commit_all(f"{count} files")


def show_seconds(tree: OrcaTree, run: str) -> float:
    """The median wall time of three `orca run show`, the CLI's own start included."""
    times = []
    for _ in range(3):
        t0 = time.monotonic()
        tree.cli("run", "show", run, "--json")
        times.append(time.monotonic() - t0)
    return statistics.median(times)


def cpu_by_process(tree: OrcaTree) -> dict[str, float]:
    """CPU seconds so far of orcad and each actor, their reaped children included."""
    import psutil

    out: dict[str, float] = {}
    for name, pid in tree.actor_pids().items():
        try:
            t = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        out[name] = t.user + t.system + t.children_user + t.children_system
        out[f"{name} (children)"] = t.children_user + t.children_system
    return out


def pct(values: list[float], p: float) -> float:
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="orca-orch-bench-"))
    bin_dir = root / "bin"
    bin_dir.mkdir()
    for name in ("claude", "codex"):
        (bin_dir / name).symlink_to(FAKE_AGENT)
    tree = OrcaTree(root)
    tree.env["PATH"] = f"{bin_dir}{os.pathsep}{tree.env.get('PATH', '')}"
    tree.env["FAKE_AGENT_LOG"] = str(root / "prompts.log")
    tree.env["FAKE_ORCA"] = "true"  # no report CLI per agent: the bench measures the dispatch
    if REPO_FILES:
        add_files(tree, REPO_FILES)
    tree.cli("up")
    try:
        tree.cli("repo", "add", str(tree.repo))
        half = VARIANTS // 2
        spec = f"claude:{VARIANTS - half}" + (f",codex:{half}" if half else "")
        before = cpu_by_process(tree)
        t0 = time.monotonic()
        many_run, many = latencies(tree, spec)
        wall = time.monotonic() - t0
        used = {k: v - before.get(k, 0.0) for k, v in cpu_by_process(tree).items()}
        one_run, one = latencies(tree, "claude:1")
        show_many, show_one = show_seconds(tree, many_run), show_seconds(tree, one_run)
    finally:
        tree.down()
    delivered = len((root / "prompts.log").read_text().splitlines())
    print(
        f"{VARIANTS} variants: p50 {statistics.median(many):.2f} s  p99 {pct(many, 99):.2f} s"
        f"  max {many[-1]:.2f} s  (all {len(many)} in {wall:.1f} s; {delivered} prompts logged)"
    )
    print(f"1 variant:    p50 {statistics.median(one):.2f} s")
    busiest = sorted(((k, v) for k, v in used.items() if v >= 0.05), key=lambda kv: -kv[1])
    print(
        f"CPU seconds during the {VARIANTS}: "
        + ", ".join(f"{name} {seconds:.1f}" for name, seconds in busiest)
        + f" (of {wall * (os.cpu_count() or 1):.1f} on {os.cpu_count()} cores;"
        " a process's reaped children, git and the agents, counted with it)"
    )
    print(
        f"p50 ratio {statistics.median(many) / statistics.median(one):.1f}x for {VARIANTS}x the variants"
    )
    print(
        f"`orca run show` (every variant's merge previewed), median of 3 once the agents are"
        f" done: {VARIANTS} variants {show_many:.2f} s, 1 variant {show_one:.2f} s"
        f" ({show_many / show_one:.1f}x)"
    )


if __name__ == "__main__":
    main()
