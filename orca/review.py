"""Review: a worktree's changed files against its base, and one file's diff.

Read by ``orca ui``'s review pane and the web dashboard's review page (issue 27), so
both show the same files from the same git commands.

gitwatch publishes git *facts* (HEAD, branch, dirty counts) but serves no diffs, so the
pane reads them with git itself, read-only: ``--no-optional-locks`` keeps ``git diff``
from refreshing the index (a write into the worktree's git dir, which no reader may
make), and nothing else is run. It re-reads when gitwatch reports the worktree changed
(``worktree.changed``), never on a timer. Git's output is bounded (``MAX_DIFF_BYTES``)
and decoded with replacement, so a binary or non-UTF-8 file cannot break the view.
"""

from __future__ import annotations

from dataclasses import dataclass

import trio

# A diff larger than this is cut (with a note): a view, not an export.
MAX_DIFF_BYTES = 512 * 1024
GIT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class ChangedFile:
    status: str  # git's letter: A, M, D, R...
    path: str


async def _git(cwd: str, *args: str) -> tuple[int, str]:
    argv = ["git", "--no-optional-locks", "-C", cwd, *args]
    with trio.move_on_after(GIT_TIMEOUT_S):
        done = await trio.run_process(argv, capture_stdout=True, capture_stderr=True, check=False)
        out = done.stdout[:MAX_DIFF_BYTES].decode("utf-8", "replace")
        if len(done.stdout) > MAX_DIFF_BYTES:
            out += "\n… (cut: the diff is larger than the view shows)\n"
        return done.returncode, out if done.returncode == 0 else done.stderr.decode(
            "utf-8", "replace"
        )
    return 1, "git did not answer in time"


async def merge_base(cwd: str, base: str) -> str | None:
    code, out = await _git(cwd, "merge-base", base, "HEAD")
    return out.strip() if code == 0 and out.strip() else None


def parse_name_status(text: str) -> list[ChangedFile]:
    """``git diff --name-status`` lines (a rename lists its new path)."""
    files = []
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) >= 2 and parts[0]:
            files.append(ChangedFile(parts[0][0], parts[-1]))
    return files


async def changed_files(cwd: str, base: str) -> tuple[str | None, list[ChangedFile], str]:
    """(merge base, files changed from it to the working tree, error)."""
    point = await merge_base(cwd, base)
    if point is None:
        return None, [], f"no common ancestor with {base!r}"
    code, out = await _git(cwd, "diff", "--name-status", "-M", point)
    if code != 0:
        return point, [], out.strip()
    _c, untracked = await _git(cwd, "ls-files", "--others", "--exclude-standard")
    files = parse_name_status(out) + [ChangedFile("?", p) for p in untracked.splitlines() if p]
    return point, files, ""


async def file_diff(cwd: str, point: str, path: str) -> str:
    code, out = await _git(cwd, "diff", "-M", point, "--", path)
    if code == 0 and not out:
        return f"(untracked or unchanged: {path})"
    return out


async def uncommitted(cwd: str) -> list[str] | None:
    """What removing the worktree would lose: ``git status --porcelain`` lines (staged,
    unstaged and untracked changes, every untracked file named; ignored ones are not
    work). None when git could not tell (the folder is gone, git failed)."""
    code, out = await _git(cwd, "status", "--porcelain=v1", "--untracked-files=all")
    if code != 0:
        return None
    return [line for line in out.splitlines() if line.strip()]
