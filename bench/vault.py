"""Transcript index benchmarks (issue 25), against a real ``vault`` actor process.

1. Index rate: a 100 MB corpus of Claude Code, Codex and Gemini CLI transcripts
   (written here in their formats, with prompts, answers, tool calls and outputs, a
   mixed vocabulary of words, paths and identifiers) indexed from nothing: MB/s, and
   the vault's peak RSS (sampled every 50 ms) while it does. Baseline: the same bytes
   read and JSON-decoded in this process (the floor any index pays), as a ratio.
2. Query latency on that index, through RPC as ``orca vault`` asks: ``vault.search`` of
   rare tokens, common words and paths (first page, 20 hits) and ``vault.usage`` by
   agent, worktree and day: p50 / p95 / max.
3. A cold first usage report beside ccusage (its pure-JavaScript npm release, run on
   the same Claude Code transcripts): from starting a vault on an empty index to a
   usage answer that counts every byte, against ``ccusage daily --json --offline``.
4. A 200 MB transcript grown while it is indexed: one Claude Code file appended in
   bursts (about 40 MB/s, the last line of a burst often cut and finished by the next)
   while the vault reads it; the lag between the last write and the index holding every
   line, every line counted once (requests = lines written), peak RSS.

Run: ``.venv/bin/python bench/vault.py [--corpus-mb 100] [--grow-mb 200]``. Prints the
figures; exit 0 (1 if a correctness check fails).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import msgspec
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))

from support.agent_clis import CACHE, node_bin_dir, npm_install  # noqa: E402
from support.vault import (  # noqa: E402
    claude_assistant,
    claude_path,
    claude_tool_result,
    claude_usage,
    claude_user,
    codex_agent,
    codex_call,
    codex_meta,
    codex_path,
    codex_tokens,
    codex_turn,
    codex_user,
    gemini_header,
    gemini_path,
    gemini_reply,
    gemini_tokens,
    gemini_user,
)

from orca.client.sync import invoke  # noqa: E402
from orca.contracts import vault  # noqa: E402
from orca.paths import resolve_paths  # noqa: E402

RNG = random.Random(25)
WORDS = [f"w{n:04d}" for n in range(6000)] + [
    "the",
    "fix",
    "test",
    "build",
    "parser",
    "login",
    "deploy",
    "error",
]
PATHS = [f"src/mod_{n}/file_{n % 97}.py" for n in range(800)]
IDS = [f"TOKEN_LIMIT_{n}" for n in range(400)] + [f"fix-login-{n}" for n in range(400)]
RSS_SAMPLE_S = 0.05
QUERIES = 100


def prose(n: int) -> str:
    out = []
    for _ in range(n):
        r = RNG.random()
        out.append(
            RNG.choice(PATHS) if r < 0.05 else RNG.choice(IDS) if r < 0.08 else RNG.choice(WORDS)
        )
    return " ".join(out)


def encode(lines: list[dict[str, Any]]) -> bytes:
    return b"".join(msgspec.json.encode(line) + b"\n" for line in lines)


def claude_session(root: Path, n: int, turns: int) -> int:
    sid, cwd = f"C{n:05d}", f"/work/repo{n % 7}/wt{n % 31}"
    lines: list[dict[str, Any]] = []
    for t in range(turns):
        lines.append(claude_user(sid, cwd, prose(RNG.randint(8, 60)), second=t * 3))
        lines.append(claude_assistant(sid, cwd, message_id=f"{sid}-m{t}", request_id=f"r{t}",
                                      text=prose(RNG.randint(20, 150)),
                                      tool=("Bash", {"command": f"pytest {RNG.choice(PATHS)}"}),
                                      usage=claude_usage(RNG.randint(5, 500), RNG.randint(50, 2000),
                                                         cache_5m=RNG.randint(0, 5000),
                                                         cache_read=RNG.randint(0, 80000)),
                                      second=t * 3 + 1))  # fmt: skip
        lines.append(claude_tool_result(sid, cwd, prose(RNG.randint(50, 1200)), second=t * 3 + 2))
    path = claude_path(root, cwd, sid)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = encode(lines)
    path.write_bytes(data)
    return len(data)


def codex_session(root: Path, n: int, turns: int) -> int:
    sid, cwd = f"X{n:05d}", f"/work/repo{n % 7}/wt{n % 31}"
    lines: list[dict[str, Any]] = [codex_meta(sid, cwd), codex_turn(cwd, "gpt-5.1-codex")]
    total = [0, 0, 0, 0]
    for t in range(turns):
        lines.append(codex_user(prose(RNG.randint(8, 60)), second=t))
        lines.extend(
            codex_call(
                "shell",
                json.dumps({"command": ["rg", RNG.choice(WORDS)]}),
                prose(RNG.randint(40, 800)),
                second=t,
            )
        )
        lines.append(codex_agent(prose(RNG.randint(20, 150)), second=t))
        total = [total[0] + 3000, total[1] + 2500, total[2] + 400, total[3] + 100]
        lines.append(codex_tokens(*total, second=t))
    path = codex_path(root, sid)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = encode(lines)
    path.write_bytes(data)
    return len(data)


def gemini_session(root: Path, n: int, turns: int) -> int:
    sid, project = f"G{n:07d}", f"/work/repo{n % 7}/wt{n % 31}"
    lines: list[dict[str, Any]] = [gemini_header(sid, project)]
    for t in range(turns):
        lines.append(gemini_user(f"{sid}-u{t}", prose(RNG.randint(8, 60)), second=t))
        lines.append(gemini_reply(f"{sid}-g{t}", prose(RNG.randint(20, 150)),
                                  tokens=gemini_tokens(4000, 300, cached=2000, thoughts=100),
                                  tool=("read_file", {"path": RNG.choice(PATHS)}, prose(RNG.randint(40, 600))),
                                  second=t))  # fmt: skip
    path = gemini_path(root, project, sid)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = encode(lines)
    path.write_bytes(data)
    return len(data)


# Sessions of each agent in a corpus: 60 % Claude Code, 25 % Codex, 15 % Gemini CLI.
SHARES = {"claude": 0.6, "codex": 0.25, "gemini": 0.15}


def write_corpus(roots: dict[str, Path], megabytes: int) -> int:
    """Sessions of the agents ``roots`` names, in ``SHARES`` among them, until
    ``megabytes`` are written; the bytes written."""
    makers = {"claude": claude_session, "codex": codex_session, "gemini": gemini_session}
    agents = [a for a in SHARES if a in roots]
    weights = [SHARES[a] for a in agents]
    target = megabytes * 1024 * 1024
    written, n = 0, 0
    while written < target:
        agent = RNG.choices(agents, weights)[0]
        written += makers[agent](roots[agent], n, RNG.randint(5, 60))
        n += 1
    return written


def decode_baseline(roots: dict[str, Path]) -> float:
    """MB/s of reading and JSON-decoding every line in this process."""
    files = [p for root in roots.values() for p in root.rglob("*.jsonl")]
    size = sum(p.stat().st_size for p in files)
    start = time.perf_counter()
    for path in files:
        with path.open("rb") as fh:
            for line in fh:
                msgspec.json.decode(line)
    return size / 1e6 / (time.perf_counter() - start)


class Vault:
    """A vault process on a fresh ORCA_HOME reading ``roots``; RSS sampled."""

    def __init__(self, home: Path, roots: dict[str, Path]) -> None:
        env = dict(os.environ, ORCA_HOME=str(home), PYTHONPATH=str(ROOT), ORCA_LOG_LEVEL="WARNING",
                   ORCA_VAULT_SCAN_S="0.2",
                   **{f"ORCA_VAULT_{a.upper()}_DIRS": str(p) for a, p in roots.items()})  # fmt: skip
        self.paths = resolve_paths({"ORCA_HOME": str(home)})
        with (home / "vault.log").open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "actors.vault"], env=env, stderr=log
            )
        self.peak_rss = 0
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        deadline = time.monotonic() + 30
        while True:
            try:
                invoke(vault.STATUS, paths=self.paths, timeout=1.0)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self._sampler.start()

    def _sample(self) -> None:
        proc = psutil.Process(self.proc.pid)
        while not self._stop.is_set():
            try:
                self.peak_rss = max(self.peak_rss, proc.memory_info().rss)
            except psutil.Error:
                return
            time.sleep(RSS_SAMPLE_S)

    def status(self) -> vault.VaultStatus:
        return invoke(vault.STATUS, paths=self.paths, timeout=30.0)

    def wait_consumed(self, size: int, files: int) -> tuple[float, float]:
        """Seconds until every byte of every file is read (usage counts it all), and
        until the pass has ended (search finds it all too). Polled: a benchmark."""
        start = time.perf_counter()
        read = None
        while True:
            status = self.status()
            if read is None and self.read_all(size, files, status):
                read = time.perf_counter() - start
            if read is not None and status.pending_files == 0 and status.scans >= 1:
                return read, time.perf_counter() - start
            time.sleep(0.05)

    def read_all(self, size: int, files: int, status: vault.VaultStatus | None = None) -> bool:
        """Whether every byte of every file is read (usage counts it all)."""
        status = status or self.status()
        return status.transcripts >= files and self.consumed() >= size

    def consumed(self) -> int:
        import sqlite3

        db = sqlite3.connect(self.paths.data_dir / "vault" / "index.sqlite3")
        try:
            return int(db.execute("SELECT coalesce(sum(offset), 0) FROM transcripts").fetchone()[0])
        finally:
            db.close()

    def stop(self) -> None:
        self._stop.set()
        self.proc.terminate()
        self.proc.wait(10)


def pct(samples: list[float], q: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(q * len(s)))]


def timed(call: Any) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000


def bench_corpus(tmp: Path, megabytes: int) -> bool:
    roots = {a: tmp / "agents" / a for a in ("claude", "codex", "gemini")}
    size = write_corpus(roots, megabytes)
    files = sum(1 for root in roots.values() for _ in root.rglob("*.jsonl"))
    baseline = decode_baseline(roots)
    home = tmp / "home-corpus"
    home.mkdir()
    v = Vault(home, roots)
    try:
        read, seconds = v.wait_consumed(size, files)
        status = v.status()
        rate = size / 1e6 / seconds
        print(f"usage ready: every byte read in {read:.2f} s ({size / 1e6 / read:.1f} MB/s)")
        print(f"index: {size / 1e6:.1f} MB in {files} transcripts, {seconds:.1f} s = {rate:.1f} MB/s"
              f" (decode-only baseline {baseline:.1f} MB/s, ratio {rate / baseline:.2f});"
              f" {status.entries} rows, index file {status.db_bytes / 1e6:.0f} MB;"
              f" vault peak RSS {v.peak_rss / 1e6:.0f} MB")  # fmt: skip
        searches: dict[str, list[float]] = {"rare token": [], "common word": [], "path": []}
        for _ in range(QUERIES):
            for kind, term in (
                ("rare token", RNG.choice(IDS)),
                ("common word", RNG.choice(["the", "fix", "test", "build"])),
                ("path", RNG.choice(PATHS)),
            ):
                args = vault.SearchArgs(query=term, limit=20)
                searches[kind].append(
                    timed(lambda a=args: invoke(vault.SEARCH, a, paths=v.paths, timeout=30.0))
                )
        for kind, samples in searches.items():
            print(
                f"search ({kind}, first page of 20): p50 {pct(samples, 0.5):.1f} ms, p95 {pct(samples, 0.95):.1f} ms, max {max(samples):.1f} ms"
            )
        for by in ("agent", "worktree", "day"):
            samples = [
                timed(
                    lambda b=by: invoke(
                        vault.USAGE, vault.UsageArgs(by=b), paths=v.paths, timeout=30.0
                    )
                )
                for _ in range(20)
            ]
            print(
                f"usage --by {by}: p50 {pct(samples, 0.5):.1f} ms, p95 {pct(samples, 0.95):.1f} ms"
            )
        everything = searches["rare token"] + searches["common word"] + searches["path"]
        print(f"search p95 over all {len(everything)} queries: {pct(everything, 0.95):.1f} ms")
    finally:
        v.stop()
    return True


# The peer for a cold ``orca vault usage``: ccusage, the usage reporter Claude Code users
# run (its pure-JavaScript release: later ones need a native package npm may not have).
CCUSAGE = ("ccusage", "18.0.11")
COLD_ROUNDS = 3


def ccusage_script() -> Path | None:
    """ccusage's entry script, from npm into the agent CLIs' cache (once; None without
    npm), as the real-CLI tests install theirs."""
    package, version = CCUSAGE
    folder = CACHE / package
    return npm_install(
        folder, package, package, version, folder / "node_modules" / package / "dist" / "index.js"
    )


def ccusage_cold(script: Path, config_dir: Path, home: Path) -> tuple[float, int]:
    """Seconds for ``ccusage daily --json --offline`` over ``config_dir``, and its total."""
    newer = node_bin_dir(20)  # ccusage needs Node 20
    node = str(newer / "node") if newer is not None else shutil.which("node") or "node"
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(config_dir), HOME=str(home))
    start = time.perf_counter()
    done = subprocess.run(
        [node, str(script), "daily", "--json", "--offline"],
        env=env,
        capture_output=True,
        timeout=300,
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"ccusage failed: {done.stderr.decode()[-400:]}")
    return seconds, int(json.loads(done.stdout)["totals"]["totalTokens"])


def orca_cold(root: Path, home: Path, size: int, files: int) -> tuple[float, int]:
    """Seconds from starting a vault on a fresh index to its usage answer covering every
    byte (the process's start, the reading, the answer), and that answer's total."""
    start = time.perf_counter()
    v = Vault(home, {"claude": root})
    try:
        while not v.read_all(size, files):
            time.sleep(0.02)
        rows = invoke(vault.USAGE, vault.UsageArgs(by="day"), paths=v.paths, timeout=30.0).rows
        seconds = time.perf_counter() - start
    finally:
        v.stop()
    return seconds, sum(r.total_tokens for r in rows)


def bench_cold_usage(tmp: Path, megabytes: int) -> bool:
    """A first usage report over ``megabytes`` of Claude Code transcripts, cold: Orca's
    vault (a new process, an empty index) beside ccusage, alternating, COLD_ROUNDS each."""
    script = ccusage_script()
    if script is None:
        print("cold usage: no ccusage (npm could not install it): no figure")
        return True
    root = tmp / "cold" / "claude"
    size = write_corpus({"claude": root}, megabytes)
    files = sum(1 for _ in root.rglob("*.jsonl"))
    orca_s: list[float] = []
    peer_s: list[float] = []
    totals: set[tuple[str, int]] = set()
    for i in range(COLD_ROUNDS):
        seconds, total = ccusage_cold(script, root, tmp)
        peer_s.append(seconds)
        totals.add(("ccusage", total))
        home = tmp / f"home-cold-{i}"
        home.mkdir()
        seconds, total = orca_cold(root, home, size, files)
        orca_s.append(seconds)
        totals.add(("orca", total))

    def fig(xs: list[float]) -> str:
        return f"{min(xs):.2f} / {statistics.median(xs):.2f} / {max(xs):.2f} s"

    ratio = statistics.median(orca_s) / statistics.median(peer_s)
    print(f"cold usage, {size / 1e6:.0f} MB of Claude Code transcripts in {files} files"
          f" (min / median / max of {COLD_ROUNDS}, alternating):")  # fmt: skip
    print(f"  orca vault (new process, empty index, every byte counted): {fig(orca_s)}")
    print(f"  ccusage {CCUSAGE[1]} daily --json --offline:               {fig(peer_s)}")
    print(f"  ratio of medians {ratio:.2f}x (goal <= 2x); token totals {sorted(totals)}")
    return True


def bench_growing(tmp: Path, megabytes: int) -> bool:
    roots = {a: tmp / "grow" / a for a in ("claude", "codex", "gemini")}
    for root in roots.values():
        root.mkdir(parents=True)
    home = tmp / "home-grow"
    home.mkdir()
    path = claude_path(roots["claude"], "/work/big", "BIG")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    v = Vault(home, roots)
    target = megabytes * 1024 * 1024
    lines = written = 0
    burst = 2 * 1024 * 1024
    try:
        start = time.perf_counter()
        pending = b""
        with path.open("ab") as fh:
            while written < target:
                chunk = bytearray(pending)
                while len(chunk) < burst:
                    line = claude_assistant("BIG", "/work/big", message_id=f"m{lines}", request_id="r",
                                            text=prose(60), usage=claude_usage(10, 20), second=lines % 3000)  # fmt: skip
                    chunk += msgspec.json.encode(line) + b"\n"
                    lines += 1
                cut = RNG.randint(len(chunk) // 2, len(chunk))  # a burst ends mid-line
                fh.write(chunk[:cut])
                fh.flush()
                pending = bytes(chunk[cut:])
                written += cut
                time.sleep(0.05)
            fh.write(pending)
            written += len(pending)
        wrote_s = time.perf_counter() - start
        _, lag = v.wait_consumed(written, 1)
        report = invoke(vault.USAGE, vault.UsageArgs(), paths=v.paths, timeout=60.0)
        ok = report.total.requests == lines
        print(f"growing: {written / 1e6:.0f} MB written in {wrote_s:.1f} s ({written / 1e6 / wrote_s:.0f} MB/s),"
              f" indexed {lag:.1f} s after the last write; {report.total.requests} of {lines} requests"
              f" counted ({'ok' if ok else 'MISMATCH'}); vault peak RSS {v.peak_rss / 1e6:.0f} MB")  # fmt: skip
        return ok
    finally:
        v.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus-mb", type=int, default=100)
    parser.add_argument("--grow-mb", type=int, default=200)
    parser.add_argument("--cold-mb", type=int, default=105, help="cold usage vs ccusage")
    parser.add_argument("--only-cold", action="store_true", help="only the cold usage figure")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="orca-bench-vault-"))
    try:
        ok = bench_cold_usage(tmp, args.cold_mb)
        if not args.only_cold:
            ok = bench_corpus(tmp, args.corpus_mb) and ok
            ok = bench_growing(tmp, args.grow_mb) and ok
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
