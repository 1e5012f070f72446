"""Benchmark gitwatch's in-memory merge (``worktree.mergePreview``'s computation).

One repository of ``--files`` files in 100 directories; a branch ``feat`` with
``--commits`` commits, each changing a few files, and ``main`` moved on by as many
commits elsewhere. Prints the median of ``--samples`` runs of:

* ``compute_merge`` for each mode (merge, squash, rebase: the rebase replays every
  commit), in process, without writing commits (what a preview costs);
* ``git merge-tree --write-tree main feat`` (git's own in-memory merge, a fork+exec),
  the baseline; and the ratio of each mode to it (goal for merge/squash: <= 1).

Twice: with every object loose (a repository just made), then packed (``git gc``: a
real history; an agent's fresh commits are loose, but few). Loose objects are slow for
libgit2: writing a merged tree checks that every entry's object exists (strict object
creation), a stat per loose blob.

Usage: ``.venv/bin/python bench/merge.py [--files 5000] [--commits 20] [--samples 15]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from actors.gitwatch.mergecalc import compute_merge, open_for_merge

ENV = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b",
           GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b")  # fmt: skip


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=ENV)
    return done.stdout.decode()


def make_repo(base: Path, files: int, commits: int) -> Path:
    repo = base / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for i in range(files):
        d = repo / f"d{i % 100}"
        d.mkdir(exist_ok=True)
        (d / f"f{i}.txt").write_text(f"line 1 of {i}\nline 2\nline 3\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    git(repo, "branch", "feat")
    for side, offset in (("feat", 0), ("main", files // 2)):
        git(repo, "checkout", "-q", side)
        for c in range(commits):
            for k in range(3):
                i = (offset + c * 3 + k) % files
                path = repo / f"d{i % 100}" / f"f{i}.txt"
                path.write_text(path.read_text() + f"{side} change {c}\n")
            git(repo, "commit", "-q", "-am", f"{side} {c}")
    git(repo, "checkout", "-q", "main")
    return repo


def median_ms(fn: Callable[[], object], samples: int) -> float:
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--commits", type=int, default=20)
    parser.add_argument("--samples", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo_path = make_repo(Path(tmp), args.files, args.commits)
        print(f"{args.files} files, {args.commits} commits a side, median of {args.samples}")
        for objects in ("loose", "packed"):
            if objects == "packed":
                git(repo_path, "gc", "-q")
            measure(repo_path, objects, args.samples)


def measure(repo_path: Path, objects: str, samples: int) -> None:
    repo = open_for_merge(str(repo_path))
    baseline = median_ms(
        lambda: git(repo_path, "merge-tree", "--write-tree", "main", "feat"), samples
    )
    print(f"{objects} objects:")
    print(f"  git merge-tree --write-tree: {baseline:8.2f} ms (baseline)")
    for mode in ("merge", "squash", "rebase"):
        took = median_ms(
            lambda m=mode: compute_merge(  # type: ignore[misc]
                repo, "refs/heads/feat", "refs/heads/main", m, write=False
            ),
            samples,
        )
        print(f"  compute_merge {mode:<6}:        {took:8.2f} ms  ratio {took / baseline:.2f}")


if __name__ == "__main__":
    main()
