"""Git facts through the git CLI, for repositories libgit2 cannot open.

libgit2 (pygit2) refuses some repositories git itself handles — a SHA-256 object
format ("unknown object format 'sha256'") or a newer extension. Those repos are not
"unavailable": ``gitfacts`` falls back to this module, which asks git:

* the listing from ``git worktree list --porcelain -z`` (parsed by ``porcelain``), plus
  ``git rev-parse --git-common-dir`` and each linked worktree's ``.git`` file for the
  admin dirs the watcher needs;
* dirty counts from ``git status --porcelain=v1 -z``.

Blocking (``subprocess.run``): callers run these in a worker thread, like the rest of
``gitfacts``. ``GIT_OPTIONAL_LOCKS=0`` keeps ``git status`` from rewriting the index,
which the watcher would otherwise see as a change and answer with another status.
"""

from __future__ import annotations

import os
import subprocess

from actors.gitwatch.errors import RepoUnavailable
from actors.gitwatch.gitcli import GIT_TIMEOUT_S, git_env
from actors.gitwatch.porcelain import parse_worktree_list_z
from actors.gitwatch.records import DirtyCounts, WorktreeFacts

_STAGED_CODES = frozenset("MADRCT")
_CONFLICT_PAIRS = frozenset({"DD", "AU", "UD", "UA", "DU", "AA", "UU"})


def _git(cwd: str, *args: str) -> bytes:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=git_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RepoUnavailable(f"git cannot read {cwd}: {exc}") from exc
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip()
        raise RepoUnavailable(f"git cannot read {cwd}: {message}")
    return done.stdout


def common_dir_cli(repo_path: str) -> str:
    out = _git(repo_path, "rev-parse", "--path-format=absolute", "--git-common-dir")
    return os.path.normpath(os.fsdecode(out.strip()))


def scan_worktrees_cli(repo_path: str) -> list[WorktreeFacts]:
    """The listing of ``gitfacts.scan_worktrees``, read through the git CLI."""
    common = common_dir_cli(repo_path)
    listing = parse_worktree_list_z(_git(repo_path, "worktree", "list", "--porcelain", "-z"))
    facts: list[WorktreeFacts] = []
    for index, wt in enumerate(listing):
        is_main = index == 0  # git always lists the main worktree first
        facts.append(
            WorktreeFacts(
                path=wt.path,
                head=wt.head,
                branch=wt.branch,
                is_main=is_main,
                admin_dir=common if is_main else _admin_dir(wt.path),
                is_bare=wt.is_bare,
                is_detached=wt.is_detached,
                is_locked=wt.is_locked,
                lock_reason=wt.lock_reason,
                is_prunable=wt.is_prunable,
                prune_reason=wt.prune_reason,
            )
        )
    return facts


def _admin_dir(worktree_path: str) -> str:
    """``<worktree>/.git`` holds ``gitdir: <admin dir>``; "" when it cannot be read."""
    try:
        with open(os.path.join(worktree_path, ".git"), "rb") as f:
            text = f.read(64 * 1024).decode("utf-8", "surrogateescape").strip()
    except OSError:
        return ""
    if not text.startswith("gitdir: "):
        return ""
    return os.path.normpath(os.path.join(worktree_path, text[len("gitdir: ") :]))


def count_porcelain_status(output: bytes) -> tuple[int, int, int, int]:
    """(staged, unstaged, untracked, conflicted) from ``git status --porcelain=v1 -z``."""
    staged = unstaged = untracked = conflicted = 0
    entries = output.split(b"\0")
    index = 0
    while index < len(entries):
        entry = entries[index].decode("utf-8", "surrogateescape")
        index += 1
        if len(entry) < 3:
            continue
        x, y = entry[0], entry[1]
        if x in "RC":
            index += 1  # a rename/copy is followed by its source path
        if x + y == "??":
            untracked += 1
        elif x + y in _CONFLICT_PAIRS:
            conflicted += 1
        else:
            staged += x in _STAGED_CODES
            unstaged += y in _STAGED_CODES
    return staged, unstaged, untracked, conflicted


def read_status_cli(worktree_path: str) -> DirtyCounts:
    out = _git(worktree_path, "status", "--porcelain=v1", "-z", "--untracked-files=normal")
    return DirtyCounts(*count_porcelain_status(out))
