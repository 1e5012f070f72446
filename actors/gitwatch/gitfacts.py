"""Read git facts for one repository: its worktrees and their dirty counts.

Every function here is synchronous and blocking (file reads, libgit2); the trio shell
calls them through :func:`trio.to_thread.run_sync` so the event loop never waits on
a disk. The ``*_async`` twins do exactly that.

How a listing is read, and why not only pygit2 or only ``git worktree list``:

* pygit2 opens the repository, gives the main worktree's HEAD, resolves refs and
  computes status. It has no lock or prune reasons, and ``list_worktrees`` /
  ``lookup_worktree`` re-validate every worktree (5 ms and 10 ms for 200, measured),
  so for each linked worktree we read the three small admin files git itself reads
  (``gitdir``, ``HEAD``, ``locked``) from ``<common>/worktrees/<name>/``. These are
  the same files the watcher watches, so what we read is what changed.
* The git CLI listing (``git worktree list --porcelain -z``, see ``porcelain``) costs a
  fork+exec; a full scan here must be no slower than it (bench/gitwatch.py measures
  both), and the tests check both agree on real repositories.
* Repositories libgit2 cannot open (SHA-256 object format, newer extensions) fall
  back to the git CLI for listing and status (``clifacts``); only when git cannot
  read them either are they unavailable.

A repository whose directory vanished raises :class:`RepoUnavailable`; the caller
reports it instead of crashing.

Admin files hold arbitrary bytes (a path git wrote from a non-UTF-8 name, or garbage):
they are decoded with ``surrogateescape`` so paths survive to the file system, and any
content that does not parse (a NUL, a HEAD that is neither a ref nor an id) reads as
git reads it: an invalid entry, never an exception out of a scan (issue 16 item 8).
"""

from __future__ import annotations

import os

import pygit2
import trio
from pygit2.enums import FileStatus

from actors.gitwatch.clifacts import common_dir_cli, read_status_cli, scan_worktrees_cli
from actors.gitwatch.errors import RepoUnavailable
from actors.gitwatch.records import DirtyCounts, WorktreeFacts

__all__ = [
    "common_dir",
    "folder_facts",
    "open_repository",
    "read_dirty_counts",
    "scan_worktrees",
]

_STAGED = (
    FileStatus.INDEX_NEW
    | FileStatus.INDEX_MODIFIED
    | FileStatus.INDEX_DELETED
    | FileStatus.INDEX_RENAMED
    | FileStatus.INDEX_TYPECHANGE
)
_UNSTAGED = (
    FileStatus.WT_MODIFIED
    | FileStatus.WT_DELETED
    | FileStatus.WT_TYPECHANGE
    | FileStatus.WT_RENAMED
    | FileStatus.WT_UNREADABLE
)
# git's own wording (worktree.c, should_prune_worktree), so our reasons match the CLI's.
_PRUNE_NO_GITDIR = "gitdir file does not exist"
_PRUNE_INVALID_GITDIR = "invalid gitdir file"
_PRUNE_MISSING_TARGET = "gitdir file points to non-existent location"
# Admin files hold a ref name, a path or a lock reason; a 64 KiB read covers any of them.
_MAX_ADMIN_FILE = 64 * 1024


def open_repository(repo_path: str) -> pygit2.Repository | None:
    """Open the repository with libgit2; None when libgit2 cannot (git may still).

    Raises RepoUnavailable when the directory itself is gone.
    """
    if not os.path.isdir(repo_path):
        raise RepoUnavailable(f"repository directory is gone: {repo_path}")
    try:
        return pygit2.Repository(repo_path)
    except (pygit2.GitError, KeyError, ValueError):
        # Not a repository at all, or one libgit2 does not support (e.g. SHA-256):
        # the CLI fallback tells the two apart.
        return None


def common_dir(repo_path: str) -> str:
    """The repo's shared git dir (refs, packed-refs, worktrees/): what the watcher watches.

    RepoUnavailable when it cannot be read or names no usable directory.
    """
    repo = open_repository(repo_path)
    if repo is None:
        return common_dir_cli(repo_path)
    admin = repo.path.rstrip("/")
    try:
        common = _read_text(os.path.join(admin, "commondir"))
    except OSError as exc:
        raise RepoUnavailable(f"cannot read {repo_path}: {exc}") from exc
    found = os.path.normpath(os.path.join(admin, common.strip())) if common else admin
    if "\0" in found:
        raise RepoUnavailable(f"cannot read {repo_path}: its commondir file holds a NUL byte")
    return found


def scan_worktrees(repo_path: str) -> list[WorktreeFacts]:
    """The main worktree first, then every linked worktree git knows about.

    Any OS or libgit2 failure while reading (permissions, a corrupt HEAD, a directory
    removed mid-scan) becomes RepoUnavailable: reported, never a crashed watcher.
    """
    repo = open_repository(repo_path)
    if repo is None:
        return scan_worktrees_cli(repo_path)
    try:
        common = common_dir(repo_path)
        facts = [_main_worktree(repo, common)]
        for name in sorted(_admin_names(common)):
            facts.append(_linked_worktree(repo, os.path.join(common, "worktrees", name)))
    except (OSError, pygit2.GitError, KeyError, ValueError) as exc:
        # ValueError: an embedded NUL or an undecodable name reached an OS or libgit2 call.
        raise RepoUnavailable(f"cannot read {repo_path}: {exc}") from exc
    return facts


def linked_worktree_at(repo_path: str, common: str, worktree_path: str) -> WorktreeFacts | None:
    """One linked worktree's facts, read from the admin dir its ``.git`` file names (a
    create knows which worktree it made: reading the other N costs N times as much);
    ``common`` is the repo's :func:`common_dir`. None when it cannot be read so (libgit2
    cannot open the repo, the ``.git`` file names no admin dir of this repo, a read
    fails): the caller scans the whole repo."""
    try:
        repo = open_repository(repo_path)
        if repo is None:
            return None
        admins = os.path.join(common, "worktrees")
        text = _read_text(os.path.join(worktree_path, ".git"))
        if text is None or not text.startswith("gitdir: "):
            return None
        admin = os.path.normpath(os.path.join(worktree_path, text[len("gitdir: ") :].strip()))
        if os.path.dirname(admin) != admins:
            return None
        return _linked_worktree(repo, admin)
    except (RepoUnavailable, OSError, pygit2.GitError, KeyError, ValueError):
        return None


def _admin_names(common_dir: str) -> list[str]:
    """Names of ``<common>/worktrees/*`` dirs, as git reads them.

    Not ``Repository.list_worktrees()``: libgit2 validates each entry there (5 ms for
    200, measured), and an invalid entry is exactly what we must report as prunable.
    """
    try:
        with os.scandir(os.path.join(common_dir, "worktrees")) as entries:
            return [e.name for e in entries if e.is_dir(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []


def folder_facts(folder_path: str) -> WorktreeFacts:
    """A folder (non-git) repo projects to one row with no git facts (seed 01 §5.2)."""
    if not os.path.isdir(folder_path):
        raise RepoUnavailable(f"folder is gone: {folder_path}")
    return WorktreeFacts(path=folder_path, head=None, branch=None, is_main=True, admin_dir="")


def read_dirty_counts(worktree_path: str) -> DirtyCounts:
    """Count changed paths in one worktree (one libgit2 status; never writes the index)."""
    try:
        repo = pygit2.Repository(worktree_path)
        if repo.is_bare:
            return DirtyCounts()
        entries = repo.status(untracked_files="normal")
    except (pygit2.GitError, KeyError, ValueError, OSError) as exc:
        if os.path.isdir(worktree_path):
            return read_status_cli(worktree_path)  # libgit2 cannot read it; git can
        raise RepoUnavailable(f"cannot read status of {worktree_path}") from exc
    staged = unstaged = untracked = conflicted = 0
    for flags in entries.values():
        if flags & FileStatus.CONFLICTED:
            conflicted += 1
            continue
        staged += bool(flags & _STAGED)
        unstaged += bool(flags & _UNSTAGED)
        untracked += bool(flags & FileStatus.WT_NEW)
    return DirtyCounts(staged, unstaged, untracked, conflicted)


async def scan_worktrees_async(repo_path: str) -> list[WorktreeFacts]:
    return await trio.to_thread.run_sync(scan_worktrees, repo_path)


async def read_dirty_counts_async(worktree_path: str) -> DirtyCounts:
    return await trio.to_thread.run_sync(read_dirty_counts, worktree_path)


def _main_worktree(repo: pygit2.Repository, common: str) -> WorktreeFacts:
    if repo.is_bare:
        return WorktreeFacts(
            path=common, head=None, branch=None, is_main=True, admin_dir=common, is_bare=True
        )
    workdir = (repo.workdir or "").rstrip("/")
    if repo.head_is_unborn:
        head_ref = _read_text(os.path.join(common, "HEAD")) or ""
        branch = head_ref[5:].strip() if head_ref.startswith("ref: ") else None
        return WorktreeFacts(path=workdir, head=None, branch=branch, is_main=True, admin_dir=common)
    detached = repo.head_is_detached
    return WorktreeFacts(
        path=workdir,
        head=str(repo.head.target),
        branch=None if detached else repo.head.name,
        is_main=True,
        admin_dir=common,
        is_detached=detached,
    )


def _linked_worktree(repo: pygit2.Repository, admin_dir: str) -> WorktreeFacts:
    gitdir = _read_text(os.path.join(admin_dir, "gitdir"))
    lock_text = _read_text(os.path.join(admin_dir, "locked"))
    is_locked = lock_text is not None
    path, prune_reason = _worktree_path(admin_dir, gitdir)
    head, branch, detached = _read_head(repo, admin_dir)
    return WorktreeFacts(
        path=path,
        head=head,
        branch=branch,
        is_main=False,
        admin_dir=admin_dir,
        is_detached=detached,
        is_locked=is_locked,
        # git writes the reason with a trailing newline and prints it without.
        lock_reason=(lock_text.removesuffix("\n") or None) if lock_text else None,
        # git never calls a locked worktree prunable, whatever its gitdir says.
        is_prunable=prune_reason is not None and not is_locked,
        prune_reason=None if is_locked else prune_reason,
    )


def _worktree_path(admin_dir: str, gitdir: str | None) -> tuple[str, str | None]:
    """The worktree's path from its ``gitdir`` file, and git's prune reason if any."""
    if gitdir is None:
        return admin_dir, _PRUNE_NO_GITDIR
    target = gitdir.strip()
    if not target:
        return admin_dir, _PRUNE_INVALID_GITDIR
    # The file names "<worktree>/.git"; newer git may write it relative to the admin dir.
    dotgit = os.path.normpath(os.path.join(admin_dir, target))
    path = os.path.dirname(dotgit)
    return path, (None if os.path.exists(dotgit) else _PRUNE_MISSING_TARGET)


def _read_head(repo: pygit2.Repository, admin_dir: str) -> tuple[str | None, str | None, bool]:
    """(commit id, branch ref, detached) from a linked worktree's HEAD file."""
    text = (_read_text(os.path.join(admin_dir, "HEAD")) or "").strip()
    if not text.startswith("ref: "):
        # A detached HEAD is a commit id; anything else is a broken HEAD: no commit.
        return (text if _is_object_id(text) else None), None, bool(text)
    ref_name = text[5:].strip()
    if "\0" in ref_name:
        return None, None, False  # no ref can be named so: reads as unborn
    try:
        ref = repo.references.get(ref_name)
        target = ref.resolve().target if ref is not None else None
    except (pygit2.GitError, KeyError):
        target = None  # a dangling symbolic ref reads as unborn
    return (str(target) if target is not None else None), ref_name, False


_HEX = frozenset("0123456789abcdef")


def _is_object_id(text: str) -> bool:
    return len(text) in (40, 64) and set(text) <= _HEX


def _read_text(path: str) -> str | None:
    """A small file's text, None when absent. Raw os.open/os.read: a TextIOWrapper costs
    more than the read itself, and a scan reads three files per worktree."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        data = os.read(fd, _MAX_ADMIN_FILE)
    except IsADirectoryError:
        return ""
    finally:
        os.close(fd)
    return data.decode("utf-8", "surrogateescape")
