"""What merging a worktree's branch means, decided without git (pure).

``worktree.mergePreview`` and ``worktree.merge`` share these rules, so the preview says
exactly what the merge would refuse:

* the branch merged *into* is a local branch: one the caller names (short or full), or
  the worktree's base (its recorded ``baseRef``, then the repo's ``worktreeBaseRef``,
  read as a local branch: ``origin/main`` means ``main``), or the repo's default branch;
  :func:`into_candidates` lists them in that order and the first that exists wins;
* uncommitted work in the worktree is never merged behind the caller's back: it is
  refused with the changes listed (:func:`dirty_refusal`, bounded);
* a merge that conflicts changes nothing and names the paths (:func:`conflict_refusal`).
"""

from __future__ import annotations

from collections.abc import Sequence

from actors.gitwatch import errors
from orca.contracts.gitwatch import MERGE_LISTED_CHANGES, MergeMode

HEADS = "refs/heads/"
_REMOTES = "refs/remotes/"
# Where no base is recorded, the branch most repos merge into (origin/HEAD comes first).
DEFAULT_BRANCHES = ("main", "master")


def branch_ref(name: str) -> str:
    """The full local ref of a branch named short (``main``) or full (``refs/heads/main``);
    CallerError for a name git would refuse as a branch (``git check-ref-format``'s
    rules: tests check that every name accepted here, git accepts) or read as an option."""
    short = name[len(HEADS) :] if name.startswith(HEADS) else name
    parts = short.split("/")
    if (
        not short
        or short == "@"
        or short.startswith("-")
        or short.endswith(".")
        or ".." in short
        or "@{" in short
        or any(c in short for c in "\0 ~^:?*[\\")
        or any(ord(c) < 32 or ord(c) == 127 for c in short)
        or any(not p or p.startswith(".") or p.endswith(".lock") for p in parts)
    ):
        raise errors.CallerError(f"not a branch name: {name!r}")
    return HEADS + short


def short_name(ref: str) -> str:
    return ref[len(HEADS) :] if ref.startswith(HEADS) else ref


def base_as_local_branch(base: str) -> str | None:
    """The local branch a recorded base names (``origin/main`` → ``refs/heads/main``), or
    None for a base that is no branch (``HEAD``, an option-like string)."""
    if base == "HEAD" or base.startswith("-") or "\0" in base:
        return None
    if base.startswith(HEADS):
        return base
    if base.startswith(_REMOTES):
        _remote, _, rest = base[len(_REMOTES) :].partition("/")
        return HEADS + rest if rest else None
    return HEADS + base


def into_candidates(
    worktree_base: str | None, repo_base: str | None, origin_head: str | None
) -> list[str]:
    """Full refs ``into`` may default to, best first: the worktree's base, its remote
    counterpart's local name, the repo's base, origin/HEAD's branch, main, master."""
    found: list[str] = []
    for base in (worktree_base, repo_base):
        if not base:
            continue
        local = base_as_local_branch(base)
        if local is not None:
            found.append(local)
        if "/" in base and not base.startswith("refs/"):
            found.append(HEADS + base.split("/", 1)[1])  # "origin/main" typed short
    if origin_head:
        local = base_as_local_branch(origin_head)
        if local is not None:
            found.append(local)
    found.extend(HEADS + name for name in DEFAULT_BRANCHES)
    return list(dict.fromkeys(found))


def listed(lines: Sequence[str], at_most: int = MERGE_LISTED_CHANGES) -> list[str]:
    """At most ``at_most`` lines, then ``... and N more``."""
    shown = list(lines[:at_most])
    if len(lines) > at_most:
        shown.append(f"... and {len(lines) - at_most} more")
    return shown


def dirty_refusal(path: str, lines: Sequence[str]) -> errors.WorktreeDirty:
    count = len(lines)
    changes = "\n  ".join(listed(lines))
    return errors.WorktreeDirty(
        f"{path} has {count} uncommitted change{'s' if count != 1 else ''}; commit them "
        f"(or discard them) before merging:\n  {changes}"
    )


def checkout_refusal(path: str, into: str, lines: Sequence[str]) -> errors.WorktreeDirty:
    changes = "\n  ".join(listed(lines))
    return errors.WorktreeDirty(
        f"{short_name(into)} is checked out at {path}, which has uncommitted changes: "
        f"merging would move the branch under them. Commit or stash them first:\n  {changes}"
    )


class MergeConflicts(errors.StateConflict):
    """The merge cannot be made without a person resolving these paths."""

    def __init__(self, message: str, paths: Sequence[str]) -> None:
        super().__init__(message)
        self.paths = list(paths)


def conflict_refusal(
    branch: str, into: str, mode: MergeMode, paths: Sequence[str]
) -> MergeConflicts:
    shown = "\n  ".join(listed(paths))
    how = {"merge": "merging", "squash": "squashing", "rebase": "rebasing"}[mode]
    return MergeConflicts(
        f"{how} {short_name(branch)} into {short_name(into)} conflicts in {len(paths)} "
        f"path{'s' if len(paths) != 1 else ''}; nothing was changed:\n  {shown}",
        paths,
    )


def default_message(mode: MergeMode, branch: str, into: str, subjects: Sequence[str]) -> str:
    """The commit message of a merge or squash nobody wrote one for."""
    if mode == "squash":
        body = "\n".join(f"* {s}" for s in listed(subjects))
        head = f"Squashed branch '{short_name(branch)}' into {short_name(into)}"
        return f"{head}\n\n{body}\n" if body else head + "\n"
    return f"Merge branch '{short_name(branch)}' into {short_name(into)}\n"


def numstat_totals(numstat: str) -> tuple[int, int, int]:
    """(files, insertions, deletions) of ``git diff --numstat`` output (a binary file
    counts as a file with no lines)."""
    files = insertions = deletions = 0
    for line in numstat.splitlines():
        added, _, rest = line.partition("\t")
        removed, _, _path = rest.partition("\t")
        if not _path:
            continue
        files += 1
        insertions += int(added) if added.isdigit() else 0
        deletions += int(removed) if removed.isdigit() else 0
    return files, insertions, deletions


def untracked_paths(status_lines: Sequence[str]) -> list[str]:
    """The untracked files of ``git status --porcelain=v1`` lines (a quoted path, one
    with characters git escapes, is left out: it is counted, not read)."""
    return [ln[3:] for ln in status_lines if ln.startswith("?? ") and not ln[3:].startswith('"')]
