"""CLI start-up: `orca worktree ps`, `orca term ls`, `orca status` against a bare
interpreter start, in the same run (issue 15: goal at most 2x the bare start).

Each command runs as a user runs it (`python -m orca.cli.main ...`, a fresh process)
against a running tree with one repo, one worktree and one terminal in a fresh
ORCA_HOME, so the figure is start-up + imports + one or two RPCs + printing. The
baseline is `python -c pass` with the same interpreter and site (the editable install's
path hook included): what no CLI written in Python can beat. Rounds interleave the
commands with the baseline so a busy machine slows both alike. `ORCA_BENCH_ROUNDS`
sets the rounds (default 15). A second line shows the floor of any Python client of
our wire, a process that only imports pyzmq and msgspec.
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

ROUNDS = int(os.environ.get("ORCA_BENCH_ROUNDS", "15"))
GOAL_RATIO = 2.0
COMMANDS = (("worktree", "ps"), ("term", "ls"), ("status",))


def timed(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, check=True, capture_output=True)
    return time.perf_counter() - t0


def orca(env: dict[str, str], *args: str) -> str:
    argv = [sys.executable, "-m", "orca.cli.main", *args]
    return subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout


def make_repo(path: Path) -> None:
    git = ["git", "-c", "user.email=b@example.com", "-c", "user.name=b", "-C", str(path)]
    path.mkdir(parents=True)
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    (path / "README").write_text("bench\n")
    subprocess.run([*git, "add", "README"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "init"], check=True)


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="orca-cli-bench-"))
    env = dict(os.environ, ORCA_HOME=str(root / "home"), HOME=str(root / "user"))
    env.pop("PYTHONPATH", None)
    make_repo(root / "project")
    orca(env, "up")
    try:
        orca(env, "repo", "add", str(root / "project"))
        created = json.loads(
            orca(env, "worktree", "create", "project", "bench", "--setup", "skip", "--json")
        )
        print(f"tree up; worktree {created['worktree']['path']}")
        orca(env, "term", "new", "bench", "--", "/bin/sh")
        bare: list[float] = []
        wire: list[float] = []
        runs: dict[tuple[str, ...], list[float]] = {c: [] for c in COMMANDS}
        for _ in range(ROUNDS):
            bare.append(timed([sys.executable, "-c", "pass"], env))
            wire.append(timed([sys.executable, "-c", "import zmq, msgspec"], env))
            for command in COMMANDS:
                runs[command].append(timed([sys.executable, "-m", "orca.cli.main", *command], env))
        base = statistics.median(bare)
        print(f"baseline `python -c pass`, {ROUNDS} runs: median {base * 1000:.1f} ms")
        floor = statistics.median(wire)
        print(
            f"floor `import zmq, msgspec` (any client of our wire): median {floor * 1000:.1f} ms"
            f"  ratio {floor / base:.2f}x"
        )
        for command, times in runs.items():
            median = statistics.median(times)
            ratio = median / base
            verdict = "ok" if ratio <= GOAL_RATIO else "over the goal"
            print(
                f"orca {' '.join(command):<12} median {median * 1000:6.1f} ms  min {min(times) * 1000:6.1f} ms"
                f"  ratio {ratio:.2f}x  (goal <= {GOAL_RATIO:g}x: {verdict})"
            )
    finally:
        orca(env, "down")


if __name__ == "__main__":
    main()
