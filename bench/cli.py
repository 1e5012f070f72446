"""CLI start-up: `orca worktree ps [--json]`, `orca term ls`, `orca status` against a bare
interpreter start, in the same run (issues 12 and 15: goal at most 2x the bare start).

Each command runs as a user runs it (`python -m orca.cli.main ...`, a fresh process)
against a running tree (`orca up`) in a fresh ORCA_HOME holding one repo with
``WORKTREES`` worktrees, one terminal, and ``PANES_PER_WORKTREE`` agent rows per
worktree (OSC status rows ingested into the hooks actor, as bench/hooks.py does), so
the figure is start-up + imports + the command's RPCs + printing, `worktree ps --json`
printing every row. The baseline is `python -c pass` with the same interpreter and
site (the editable install's path hook included): what no CLI written in Python can
beat. Rounds interleave the commands with the baseline so a busy machine slows both
alike. `ORCA_BENCH_ROUNDS` sets the rounds (default 15).

Bytecode: the commands run with ``PYTHONDONTWRITEBYTECODE`` removed from the
environment and once untimed first, so they load cached ``.pyc`` files as an
installed orca does (pip compiles them at install); a shell that sets the variable
would otherwise compile a dozen orca modules from source on every run (~15 ms).

Two more lines put the figures in context: the floor of a process that imports pyzmq
and msgspec (what the CLI paid before ``orca.client.zmtp``), and what every command
pays before its own work: ``orca.cli.main`` and the lean msgspec import it does
(``import_msgspec_lean``). CPU time (user+sys) is printed next
to wall time: on the shared, often loaded box it is the steadier figure.

Where start-up went, and what was done (CPU ms on the 2-core box, `-X importtime`
and in-process timers; each change is defended where it is made):
pyzmq ~15-20 (orca.client.zmtp speaks ZMTP over the Unix socket); typing_extensions
under msgspec ~10 (import_msgspec_lean); interpreter teardown 6-9
(cli.main.exit_without_teardown); ``json.dump(indent=2)`` of 300 rows ~10
(output.print_json encodes with msgspec); dataclasses+inspect ~6, secrets/hashlib
3-5, tempfile+shutil 2-3, platformdirs ~3, socket.py's enums ~2, argparse's shutil ~2
(not imported: hand-written classes, deferred imports, cli.parser.parser_class);
op decoders ~0.7 per op (built on first use); the gateway's contract and call ~10
(skipped when no remote host is known). Session 4: argparse's gettext look-ups ~3
(cli.parser.parser_class), then argparse itself for the listings typed exactly
(cli.main.FAST_COMMANDS); ``platform`` under msgspec's uuid ~1.5
(import_msgspec_lean); the `worktree ps` footer's whole-session decode ~7
(``session.bindings``) and the full store contract it imported ~4
(``orca.contracts.store_core``); `term ls` decoding every worktree row ~4
(``worktree.paths``); worktree handles counted depth by depth ~1.5; the calls of one
command sent at once (``orca.client.sync.begin``), so ptyd, hooks, store and
gitwatch work in parallel. What is left: msgspec itself (~1.5x the bare start
alone, typing included), ~25 orca modules (contract Structs, ~5 ms), one Unix-socket
handshake per call, the actors' replies.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orca.client.sync import invoke  # noqa: E402
from orca.contracts import gitwatch, hooks, store  # noqa: E402
from orca.paths import resolve_paths  # noqa: E402

ROUNDS = int(os.environ.get("ORCA_BENCH_ROUNDS", "15"))
GOAL_RATIO = 2.0
WORKTREES, PANES_PER_WORKTREE = 100, 3
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("worktree", "ps", "--json"),
    ("worktree", "ps"),
    ("term", "ls"),
    ("status",),
)
LEAN_MSGSPEC = "from orca.cli.main import import_msgspec_lean; import_msgspec_lean()"


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user+sys) seconds of one run of ``argv``.

    CPU time is printed next to wall time because the shared 2-core box is often
    loaded: wall time then includes the run queue, CPU time is what the command costs.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median_ms(samples: list[tuple[float, float]], which: int) -> float:
    return statistics.median(s[which] for s in samples) * 1000


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


def populate(env: dict[str, str]) -> None:
    """``WORKTREES`` worktrees, each with ``PANES_PER_WORKTREE`` agent status rows."""
    paths = resolve_paths(env)
    (repo,) = invoke(store.REPO_LIST, paths=paths).repos
    for w in range(WORKTREES):
        args = gitwatch.CreateArgs(repo_id=repo.id, name=f"wt-{w:03d}", setup="skip")
        created = invoke(gitwatch.WORKTREE_CREATE, args, paths=paths, timeout=60)
        for p in range(PANES_PER_WORKTREE):
            document = {"state": ("working", "blocked", "done")[p], "agent": "claude"}
            row = hooks.IngestOscArgs(
                pane_key=f"tab-{w}:00000000-0000-4000-8000-{p:012d}",
                worktree_id=created.worktree_id,
                terminal_handle=f"term_{w}_{p}",
                payload=json.dumps(document),
            )
            invoke(hooks.INGEST_OSC, row, paths=paths)


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="orca-cli-bench-"))
    env = dict(os.environ, ORCA_HOME=str(root / "home"), HOME=str(root / "user"))
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    make_repo(root / "project")
    orca(env, "up")
    try:
        orca(env, "repo", "add", str(root / "project"))
        populate(env)
        orca(env, "term", "new", "wt-000", "--", "/bin/sh")
        listing = json.loads(orca(env, "worktree", "ps", "--json"))["worktrees"]
        rows = sum(len(w["agents"]) for w in listing)
        print(f"tree up: {WORKTREES} worktrees, {rows} agent rows in `worktree ps --json`")
        for command in COMMANDS:  # untimed: writes the .pyc files an install would have
            orca(env, *command)
        bare: list[tuple[float, float]] = []
        wire: list[tuple[float, float]] = []
        lean: list[tuple[float, float]] = []
        runs: dict[tuple[str, ...], list[tuple[float, float]]] = {c: [] for c in COMMANDS}
        for _ in range(ROUNDS):
            bare.append(timed([sys.executable, "-c", "pass"], env))
            wire.append(timed([sys.executable, "-c", "import zmq, msgspec"], env))
            lean.append(timed([sys.executable, "-c", LEAN_MSGSPEC], env))
            for command in COMMANDS:
                runs[command].append(timed([sys.executable, "-m", "orca.cli.main", *command], env))
        base, base_cpu = median_ms(bare, 0), median_ms(bare, 1)
        print(
            f"baseline `python -c pass`, {ROUNDS} runs: median {base:.1f} ms"
            f" (CPU {base_cpu:.1f} ms)"
        )
        for label, times in (
            ("floor `import zmq, msgspec` (pyzmq clients)", wire),
            ("floor `orca.cli.main` and its lean msgspec import", lean),
        ):
            median = median_ms(times, 0)
            print(f"{label}: median {median:.1f} ms  ratio {median / base:.2f}x")
        for command, times in runs.items():
            median, cpu = median_ms(times, 0), median_ms(times, 1)
            ratio = median / base
            verdict = "ok" if ratio <= GOAL_RATIO else "over the goal"
            print(
                f"orca {' '.join(command):<18} median {median:6.1f} ms"
                f"  min {min(t[0] for t in times) * 1000:6.1f} ms"
                f"  ratio {ratio:.2f}x  (goal <= {GOAL_RATIO:g}x: {verdict})"
                f"  CPU {cpu:5.1f} ms = {cpu / base_cpu:.2f}x"
            )
        print(f"load average during the run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    finally:
        orca(env, "down", "--kill-terminals")


if __name__ == "__main__":
    main()
