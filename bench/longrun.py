"""Memory over a long run of agents at work: does any process of the tree keep growing?

Users leave 5-50 agents working for days; a process whose memory grows with the events
it has seen (a table never pruned, a cache with no bound) eats the machine in the end,
where a bounded one levels off after its first minutes. This bench starts a tree the way
a user does (``orca up``, WORKTREES worktrees, TERMINALS terminals) and runs a stand-in
agent in every terminal (``AGENT`` below) that, once a second, speaks the hook protocol
through the hook script Orca installed (UserPromptSubmit, PreToolUse, PostToolUse,
Stop, and a new session id every 20 turns, as a compacting agent has), prints a screen
of output, edits a file and, every fifth turn, commits it. Beside them a UI-like client
reads ``orca worktree ps --json`` every 5 s and ``orca watch --json`` stays subscribed.

After WARMUP seconds, the unique memory (USS: pages only that process holds) of orcad,
every actor and the keeper is read every INTERVAL seconds for MINUTES minutes. Printed:
each process's USS at the first, middle and last sample, and its growth per 10,000
turns of the agents (a turn is four or five hook events, a screen of output and a file
write) in the first and in the second half: what fills up (a scrollback, a bounded
table, pages of the fork server's image touched for the first time) grows in the first
half and stops, a leak grows in both alike. The peer is the tmux server holding as many
windows running the same agent (its history fills to its limit, then stays).

Measured (2 shared cores, 2026-12-07, ``ORCA_BENCH_MINUTES=20``; 10 agents, ~11,000
turns in each 20-minute run: far more than agents at work make, whose turns take
seconds to minutes), growth per 10,000 turns, first half / second half:

    with the fork server (as shipped): orcad +4.2 / +0.0, store +0.1 / +0.0, hooks
        +2.2 / +2.4, ptyd +18.8 / -4.9 (its scrollbacks fill, then compact), gitwatch
        +4.9 / +5.8, keeper 0 / 0; tmux +3.8 / +0.0
    ORCA_FORKSERVER=0 (every actor a fresh interpreter: no copy-on-write of a shared
        image in the figures): orcad 0 / 0, store 0 / 0, hooks +1.1 / +1.0, ptyd
        +20.6 / -6.6, gitwatch +3.7 / -12.8 (a trim), keeper 0 / 0; tmux +3.5 / 0

Where the growth is, read inside gitwatch and hooks in such a run (``gc`` object counts,
``sys._debugmallocstats``, glibc's ``mallinfo2`` after a ``malloc_trim``, 2,755 turns
apart): the objects the collector tracks did not grow (35,317 -> 35,372 in gitwatch),
pymalloc's allocated blocks grew 0.33 MB in gitwatch (its ahead/behind memo, bounded at
4,096 entries) and 0.07 MB in hooks (its session bindings, bounded at 4,096), malloc's
in-use bytes moved within 8.4-9.3 MiB. In the shipped tree the rest is pages of the
fork server's image an actor writes to for the first time (copy-on-write), bounded by
that image.

Run: ``.venv/bin/python bench/longrun.py`` (MINUTES + WARMUP, about 12 minutes).
Environment: ORCA_BENCH_MINUTES (10), ORCA_BENCH_WARMUP (60), ORCA_BENCH_INTERVAL (60),
ORCA_BENCH_TERMINALS (10), ORCA_BENCH_WORKTREES (5).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from orca_tree import OrcaTree  # bench/orca_tree.py

MINUTES = float(os.environ.get("ORCA_BENCH_MINUTES", "10"))
WARMUP = float(os.environ.get("ORCA_BENCH_WARMUP", "60"))
INTERVAL = float(os.environ.get("ORCA_BENCH_INTERVAL", "60"))
TERMINALS = int(os.environ.get("ORCA_BENCH_TERMINALS", "10"))
WORKTREES = int(os.environ.get("ORCA_BENCH_WORKTREES", "5"))

# The stand-in agent: $1 is where it counts its turns; the hook script is Orca's own
# (absent under tmux: the hooks are then skipped, the output and commits are not).
AGENT = r"""
hook="$ORCA_HOME/data/agent-hooks/orca-agent-hook.sh"
[ -x "$hook" ] || hook=true
turns="$1"; n=0; session="longrun-$$"
post() {
  printf '{"hook_event_name":"%s","session_id":"%s"%s}' "$1" "$session" "$2" | "$hook" claude >/dev/null 2>&1
}
post SessionStart ""
while :; do
  n=$((n + 1))
  [ $((n % 20)) -eq 0 ] && { session="longrun-$$-$n"; post SessionStart ""; }
  post UserPromptSubmit ",\"prompt\":\"turn $n\""
  post PreToolUse ",\"tool_name\":\"Edit\",\"tool_input\":{\"file_path\":\"f.txt\"}"
  i=0; while [ $i -lt 40 ]; do
    printf '\033[1;32mturn %d\033[0m line %d: the quick brown fox jumps over the lazy dog %d\n' $n $i $RANDOM
    i=$((i + 1))
  done
  echo "turn $n $RANDOM" > "longrun-$$.txt"
  post PostToolUse ",\"tool_name\":\"Edit\""
  if [ $((n % 5)) -eq 0 ]; then
    git add "longrun-$$.txt" && git -c user.name=a -c user.email=a@a commit -qm "turn $n" >/dev/null
  fi
  post Stop ""
  echo "$n" >> "$turns"
  sleep 1
done
"""


Sample = tuple[float, int, int, dict[str, float]]  # time, turns (orca, tmux), USS by name


def uss_mib(pid: int) -> float:
    """The process's USS (psutil reads ``/proc/PID/smaps_rollup``); 0 once it is gone."""
    try:
        return psutil.Process(pid).memory_full_info().uss / 2**20
    except psutil.Error:
        return 0.0


class Orca(OrcaTree):
    def __init__(self, base: Path) -> None:
        super().__init__(base)
        self.names = [f"long-{i}" for i in range(1, WORKTREES + 1)]
        self.turns = base / "turns"
        self.turns.mkdir()
        self.clients: list[subprocess.Popen[bytes]] = []

    def start(self, agent: Path) -> None:
        self.cli("up")
        self.cli("repo", "add", str(self.repo))
        for name in self.names:
            self.cli("worktree", "create", "repo", name, "--base", "main")
        for i in range(TERMINALS):
            turns = self.turns / f"t{i}"
            self.cli("term", "new", self.names[i % WORKTREES], "--", "bash", str(agent), str(turns))
        cli = [sys.executable, "-m", "orca.cli.main"]
        watch = subprocess.Popen(
            [*cli, "watch", "--json"],
            env=self.env,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        ps_loop = f"while :; do {sys.executable} -m orca.cli.main worktree ps --json; sleep 5; done"
        poller = subprocess.Popen(
            ["sh", "-c", ps_loop], env=self.env, stdout=subprocess.DEVNULL, start_new_session=True
        )
        self.clients = [watch, poller]

    def processes(self) -> dict[str, int]:
        found = self.actor_pids()
        keeper = self.keeper_pid()
        if keeper is not None:
            found["keeper"] = keeper
        return found

    def stop(self) -> None:
        for client in self.clients:  # each the leader of its own process group
            try:
                os.killpg(client.pid, 9)
            except OSError:
                pass
            client.wait()
        self.down()


class Tmux:
    def __init__(self, base: Path) -> None:
        self.socket = str(base / "tmux.sock")
        self.turns = base / "tmux-turns"
        self.turns.mkdir()
        self.repo = base / "tmux-repo"
        subprocess.run(["git", "init", "-q", "-b", "main", str(self.repo)], check=True)
        self.env = dict(os.environ, HOME=str(base / "user"))

    def start(self, agent: Path) -> None:
        run = ["tmux", "-S", self.socket, "-f", "/dev/null"]
        first = ["bash", str(agent), str(self.turns / "t0")]
        cwd = ["-c", str(self.repo)]
        subprocess.run([*run, "new-session", "-d", *cwd, *first], env=self.env, check=True)
        for i in range(1, TERMINALS):
            window = ["bash", str(agent), str(self.turns / f"t{i}")]
            subprocess.run([*run, "new-window", *cwd, *window], env=self.env, check=True)

    def processes(self) -> dict[str, int]:
        out = subprocess.run(
            ["tmux", "-S", self.socket, "display-message", "-p", "#{pid}"],
            capture_output=True,
            text=True,
            check=True,
        )
        return {"tmux server": int(out.stdout)}

    def stop(self) -> None:
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], check=False)


def turns_so_far(folder: Path) -> int:
    return sum(len(f.read_text().split()) for f in folder.iterdir())


def main() -> None:
    if shutil.which("tmux") is None:
        sys.exit("bench/longrun.py: tmux is the peer and is not installed")
    with tempfile.TemporaryDirectory(prefix="orca-bench-long-") as tmp:
        base = Path(tmp)
        (base / "user").mkdir()
        agent = base / "agent.sh"
        agent.write_text(AGENT)
        orca, tmux = Orca(base), Tmux(base)
        try:
            orca.start(agent)
            tmux.start(agent)
            time.sleep(WARMUP)
            samples: list[Sample] = []
            end = time.monotonic() + MINUTES * 60
            while True:
                pids = {**orca.processes(), **tmux.processes()}
                uss = {name: uss_mib(pid) for name, pid in pids.items()}
                now = time.monotonic()
                samples.append((now, turns_so_far(orca.turns), turns_so_far(tmux.turns), uss))
                line = " ".join(f"{k} {v:.1f}" for k, v in uss.items())
                print(f"t+{now - samples[0][0]:5.0f}s turns {samples[-1][1]}: {line}", flush=True)
                if now >= end:
                    break
                time.sleep(min(INTERVAL, max(0.0, end - now)))
        finally:
            tmux.stop()
            orca.stop()
    report(samples)


def report(samples: list[Sample]) -> None:
    """Each process's growth in the first and in the second half of the samples, per
    10,000 turns: a table that fills up (a scrollback, a bounded cache, pages of the
    shared image touched for the first time) grows in the first half and stops; a leak
    grows in both alike."""
    first, middle, last = samples[0], samples[len(samples) // 2], samples[-1]
    minutes = (last[0] - first[0]) / 60
    print(
        f"\nUSS over {minutes:.1f} min after {WARMUP:g} s of warm-up; {TERMINALS} agents, "
        f"{last[1] - first[1]} turns in Orca, {last[2] - first[2]} in tmux"
    )
    print(
        f"  {'':12} {'first':>7} {'middle':>7} {'last':>7} MiB   growth per 10k turns: 1st half, 2nd half"
    )
    for name in last[3]:
        column = 2 if name == "tmux server" else 1

        def per_10k(a: Sample, b: Sample, name: str = name, column: int = column) -> float:
            turns = b[column] - a[column]
            return (b[3][name] - a[3].get(name, 0.0)) / turns * 10_000 if turns else 0.0

        print(
            f"  {name:12} {first[3].get(name, 0.0):7.1f} {middle[3][name]:7.1f} "
            f"{last[3][name]:7.1f}       {per_10k(first, middle):+7.2f}  {per_10k(middle, last):+7.2f}"
        )


if __name__ == "__main__":
    main()
