"""What the background service costs while nothing happens, beside tmux (issue 36).

Side by side in one run, ROUNDS times each (min / median / max):

* **memory**: the proportional set size (PSS, ``/proc/PID/smaps_rollup``: shared pages
  divided among their sharers) of Orca's service processes (orcad, every actor, the
  keeper) and of the tmux server, right after start, with TERMINALS idle shells, and
  once the tree has rested (the last CPU window below: ptyd's idle terminals cold,
  gitwatch's heap trimmed after its start-up work); the shells themselves are the same
  in both and not counted;
* **idle CPU**: the CPU time those processes use over SECONDS of nothing happening
  (after SETTLE seconds for start-up work), as a percentage of one core; with the
  terminals, again once ptyd's COLD_AFTER_S (30 s) after their last output has passed
  (ptyd then writes each idle terminal's screen out once, to give its memory back);
* **the floor of the tree's shape**: once the tree is down, the same processes with
  nothing in them, all alive at once: a fork server importing what every actor imports
  (trio, pyzmq, msgspec) that freezes it and forks as many children as actors ran, each a
  trio loop holding one ZeroMQ socket; an orcad-like one of its own; a Python with the
  keeper's standard-library imports. What CPython costs for this many processes of
  this kind before any of Orca's work;
* **the keeper** alone: its RSS and PSS, and beside it those of a bare CPython
  (``python -I -S`` with nothing imported), the floor of any Python process, and of a
  Python importing the standard-library modules the keeper imports and nothing of
  Orca's, the floor of a keeper written in Python with them.

Each tree runs in a fresh ``ORCA_HOME`` (a temporary folder, with one git repository
and WORKTREES worktrees of it, the terminals spread over them in turn), tmux on a
socket of its own (``-L``, no config), both started the way a user starts them: ``orca
up``, ``orca worktree create`` and ``orca term new``, ``tmux new-session -d`` and
``new-window``. The repository is a one-file one, or a clone of ORCA_BENCH_REPO (a
real one: gitwatch then watches every file of every worktree).

Run: ``.venv/bin/python bench/idle.py`` (about ROUNDS x (2 x SETTLE + 4 x SECONDS)).
Environment: ORCA_BENCH_ROUNDS (3), ORCA_BENCH_TERMINALS (20), ORCA_BENCH_SECONDS (20),
ORCA_BENCH_SETTLE (5), ORCA_BENCH_WORKTREES (1), ORCA_BENCH_REPO (none). The issue's
large row: ``ORCA_BENCH_WORKTREES=50 ORCA_BENCH_TERMINALS=100 ORCA_BENCH_REPO=.``
(PSS "right after start" then includes the 50 worktrees).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import psutil
from orca_tree import OrcaTree  # bench/orca_tree.py

from actors.ptyd.session import COLD_AFTER_S

ROUNDS = int(os.environ.get("ORCA_BENCH_ROUNDS", "3"))
TERMINALS = int(os.environ.get("ORCA_BENCH_TERMINALS", "20"))
SECONDS = float(os.environ.get("ORCA_BENCH_SECONDS", "20"))
SETTLE = float(os.environ.get("ORCA_BENCH_SETTLE", "5"))
WORKTREES = int(os.environ.get("ORCA_BENCH_WORKTREES", "1"))
REPO = os.environ.get("ORCA_BENCH_REPO", "")
ROOT = Path(__file__).resolve().parents[1]


def pss_kib(pid: int) -> int:
    """The process's PSS in KiB (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def cpu_s(pids: Iterable[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            t = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system
    return total


def idle_cpu_percent(pids: Callable[[], list[int]]) -> float:
    """CPU time of ``pids()`` over SECONDS, in percent of one core."""
    watched = pids()
    before = cpu_s(watched)
    time.sleep(SECONDS)
    return 100.0 * (cpu_s(watched) - before) / SECONDS


# -- Orca -------------------------------------------------------------------------------
class Orca(OrcaTree):
    def __init__(self, base: Path) -> None:
        super().__init__(base)
        if REPO:  # a real repository instead of the one-file one
            shutil.rmtree(self.repo)
            subprocess.run(
                ["git", "clone", "-q", "--no-local", os.path.abspath(REPO), str(self.repo)],
                check=True,
            )
        head = ["git", "-C", str(self.repo), "symbolic-ref", "--short", "HEAD"]
        branch = subprocess.run(head, capture_output=True, text=True, check=True)
        self.base_branch = branch.stdout.strip()
        self.names = [f"idle-{i}" for i in range(1, WORKTREES + 1)]

    def up(self) -> None:
        self.cli("up")
        self.cli("repo", "add", str(self.repo))
        for name in self.names:
            self.cli("worktree", "create", "repo", name, "--base", self.base_branch)

    def terminals(self, count: int) -> None:
        for i in range(count):
            self.cli("term", "new", self.names[i % len(self.names)], "--", "/bin/sh")

    def service_pids(self) -> list[int]:
        """orcad, its actors and the keeper: not the terminals' programs."""
        orcad = psutil.Process(self.orcad_pid())
        pids = [orcad.pid]
        for child in orcad.children():
            pids.append(child.pid)  # the actors (ptyd's shells are its children)
        keeper = self.keeper_pid()
        if keeper is not None and keeper not in pids:  # an orcad child when it started it
            pids.append(keeper)
        return pids


# -- tmux -------------------------------------------------------------------------------
class Tmux:
    def __init__(self, base: Path) -> None:
        self.socket = f"orca-bench-{os.getpid()}"
        self.env = dict(os.environ, HOME=str(base / "user"), TMUX_TMPDIR=str(base))

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    def up(self) -> None:
        self.tmux("new-session", "-d", "-s", "bench", "/bin/sh")

    def terminals(self, count: int) -> None:
        for _ in range(count):
            self.tmux("new-window", "-t", "bench", "/bin/sh")

    def service_pids(self) -> list[int]:
        return [int(self.tmux("display-message", "-p", "#{pid}").strip())]

    def down(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], env=self.env, check=False)


def service_pss_mib(tree: Orca | Tmux) -> float:
    return sum(pss_kib(p) for p in tree.service_pids()) / 1024


def measure(tree: Orca | Tmux) -> dict[str, float]:
    tree.up()
    time.sleep(SETTLE)
    figures = {"pss_up_mib": service_pss_mib(tree)}
    figures["cpu_up_pct"] = idle_cpu_percent(tree.service_pids)
    tree.terminals(TERMINALS)
    time.sleep(SETTLE)
    figures["pss_terms_mib"] = service_pss_mib(tree)
    figures["cpu_terms_pct"] = idle_cpu_percent(tree.service_pids)
    # ptyd gives an idle terminal's screen model back COLD_AFTER_S after its last output
    # (one file written per terminal, once): the window above may hold that; this one
    # starts after it, and is what a tree that has been quiet a while costs.
    time.sleep(max(0.0, COLD_AFTER_S + 2 - SETTLE - SECONDS))
    figures["cpu_quiet_pct"] = idle_cpu_percent(tree.service_pids)
    figures["pss_quiet_mib"] = service_pss_mib(tree)
    if isinstance(tree, Orca):
        figures["actors_running"] = float(len(tree.actor_pids()) - 1)  # all but orcad
        keeper = tree.keeper_pid()
        if keeper is not None:
            figures["keeper_rss_mib"], figures["keeper_pss_mib"] = rss_pss_mib(keeper)
        figures["bare_rss_mib"], figures["bare_pss_mib"] = bare_python_mib()
        figures["stdlib_rss_mib"], figures["stdlib_pss_mib"] = keeper_stdlib_mib()
    return figures


def rss_pss_mib(pid: int) -> tuple[float, float]:
    info = psutil.Process(pid).memory_full_info()
    return info.rss / 2**20, info.pss / 2**20


def bare_python_mib() -> tuple[float, float]:
    """RSS and PSS of this machine's CPython with nothing imported (``-I -S``), measured
    beside the tree: the floor of any Python process, the keeper's included."""
    return _hold(
        [sys.executable, "-I", "-S", "-c", "import sys; print(flush=True); sys.stdin.read()"]
    )


def _hold(argv: list[str]) -> tuple[float, float]:
    """RSS and PSS of a Python started with ``argv`` once it printed a line."""
    held = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert held.stdout is not None
        held.stdout.readline()  # started: its start-up is done
        return rss_pss_mib(held.pid)
    finally:
        held.kill()
        held.wait()


# The standard-library modules the keeper imports, without Orca's own: printed by a
# Python that imports the keeper as it is started (``-P``, site included).
_KEEPER_STDLIB = (
    "import sys, actors.keeper.__main__\n"
    "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] not in ('orca', 'actors'))))"
)


def _keeper_stdlib_imports() -> str:
    """``import`` lines of every standard-library module the keeper imports."""
    modules = subprocess.run(
        [sys.executable, "-P", "-c", _KEEPER_STDLIB],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return "".join(f"import {m}\n" for m in modules if not m.startswith("_") and m != "__main__")


def keeper_stdlib_mib() -> tuple[float, float]:
    """RSS and PSS of a Python that imports every standard-library module the keeper
    imports (``json``, ``socket``, ``logging``, ``pathlib``...) and none of Orca's: the
    floor of a keeper written with this standard library, measured beside it."""
    imports = _keeper_stdlib_imports()
    return _hold(
        [sys.executable, "-P", "-c", f"{imports}import sys\nprint(flush=True)\nsys.stdin.read()"]
    )


# The tree's shape with nothing in it: a fork server that imports what every actor imports
# (trio, pyzmq, msgspec), freezes it and forks FORKED children, each a trio loop holding
# one bound ZeroMQ socket; an orcad-like process of its own doing the same; and a Python
# with the keeper's standard-library imports.
_SHAPE_FORK_SERVER = r"""
import gc, os, signal, sys
import msgspec, trio, zmq
gc.collect()
gc.freeze()
where = sys.argv[2]
kids = []
for n in range(int(sys.argv[1])):
    pid = os.fork()
    if pid == 0:
        async def serve() -> None:
            sock = zmq.Context.instance().socket(zmq.ROUTER)
            sock.bind(f"ipc://{where}/{n}")
            await trio.sleep_forever()
        trio.run(serve)
    kids.append(pid)
print(" ".join(map(str, kids)), flush=True)
sys.stdin.read()
for pid in kids:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
"""
_SHAPE_ORCAD = r"""
import sys
import msgspec, trio, zmq
async def serve() -> None:
    sock = zmq.Context.instance().socket(zmq.ROUTER)
    sock.bind(f"ipc://{sys.argv[1]}/orcad")
    print(flush=True)
    await trio.sleep_forever()
trio.run(serve)
"""


def shape_floor_pss_mib(forked: int) -> float:
    """PSS, MiB, of the tree's processes with nothing in them (the comment above): the
    floor of this shape in CPython, measured with every one of them alive at once."""
    stdlib = _keeper_stdlib_imports()
    with tempfile.TemporaryDirectory(prefix="orca-bench-shape-") as where:
        return _shape_floor_in(forked, stdlib, where)


def _shape_floor_in(forked: int, stdlib: str, where: str) -> float:
    procs = [
        subprocess.Popen(
            [sys.executable, "-P", "-c", code, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for code, args in (
            (_SHAPE_FORK_SERVER, [str(forked), where]),
            (_SHAPE_ORCAD, [where]),
            (f"{stdlib}import sys\nprint(flush=True)\nsys.stdin.read()", []),
        )
    ]
    try:
        pids = [p.pid for p in procs]
        for p in procs:
            assert p.stdout is not None
            pids.extend(int(pid) for pid in p.stdout.readline().split())
        time.sleep(SETTLE)
        return sum(pss_kib(pid) for pid in pids) / 1024
    finally:
        for p in procs:
            if p.stdin is not None:
                p.stdin.close()  # the fork server ends its children, by pid
        for p in procs[:1]:
            p.wait(timeout=30)
        for p in procs[1:]:
            p.kill()
            p.wait()


def spread(values: list[float]) -> str:
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"


def main() -> None:
    if shutil.which("tmux") is None:
        sys.exit("bench/idle.py: tmux is the peer and is not installed")
    rows: dict[str, dict[str, list[float]]] = {"orca": {}, "tmux": {}}
    for _ in range(ROUNDS):
        for name, make in (("tmux", Tmux), ("orca", Orca)):
            with tempfile.TemporaryDirectory(prefix="orca-bench-idle-") as tmp:
                base = Path(tmp)
                (base / "user").mkdir(exist_ok=True)
                tree = make(base)
                try:
                    figures = measure(tree)
                finally:
                    tree.down()
                if "actors_running" in figures:  # once the tree is down: no page shared
                    figures["floor_pss_mib"] = shape_floor_pss_mib(int(figures["actors_running"]))
                for key, value in figures.items():
                    rows[name].setdefault(key, []).append(value)
    where = f"{WORKTREES} worktree{'s' if WORKTREES != 1 else ''} of {REPO or 'a one-file repo'}"
    print(f"idle cost, {ROUNDS} rounds (min / median / max), {TERMINALS} idle shells in {where},")
    print(f"CPU over {SECONDS:g} s after {SETTLE:g} s of settling; the shells not counted")
    labels = {
        "pss_up_mib": "PSS right after start, MiB",
        "cpu_up_pct": "idle CPU right after start, % of a core",
        "pss_terms_mib": f"PSS with {TERMINALS} terminals, MiB",
        "cpu_terms_pct": f"idle CPU with {TERMINALS} terminals, % of a core",
        "cpu_quiet_pct": f"... {COLD_AFTER_S:g} s after their last output, %",
        "pss_quiet_mib": "PSS then (the tree at rest), MiB",
        "actors_running": "... of it actors running (forked), count",
        "floor_pss_mib": "the same processes with nothing in them, PSS",
        "keeper_rss_mib": "the keeper's RSS, MiB",
        "keeper_pss_mib": "the keeper's PSS, MiB",
        "bare_rss_mib": "python -I -S, nothing imported: RSS, MiB",
        "bare_pss_mib": "python -I -S, nothing imported: PSS, MiB",
        "stdlib_rss_mib": "python, the keeper's stdlib imports: RSS, MiB",
        "stdlib_pss_mib": "python, the keeper's stdlib imports: PSS, MiB",
    }
    for key, label in labels.items():
        orca = rows["orca"].get(key)
        tmux = rows["tmux"].get(key)
        who = "python" if key.startswith(("bare_", "stdlib_", "floor_")) else "orca"
        line = f"{label:48} {who:>6} {spread(orca) if orca else '-':>24}"
        if tmux:
            line += f"   tmux {spread(tmux):>24}"
            if statistics.median(tmux) > 0 and orca:
                line += f"   ({statistics.median(orca) / statistics.median(tmux):.1f}x)"
        print(line)


if __name__ == "__main__":
    main()
