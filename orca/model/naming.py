"""Worktree names and paths: the mint of worktree identity (seed 01 §5.4, §8.7).

Because a worktree's path *is* its id, the functions here decide identities:

* :func:`sanitize_worktree_name` turns a user- or agent-supplied name (often a
  slug of a prompt) into one directory name that is also a valid git branch
  name. Unicode letters, marks and digits survive (people name workspaces in
  Chinese or with accents); every other character becomes ``-``. Dot runs
  collapse to one dot because ``git check-ref-format`` refuses ``..`` -- a
  prompt like ``../../foo`` would otherwise reach git as ``..-..-foo`` and the
  branch would not be created.
* :func:`ensure_path_within_workspace` refuses any path that escapes the
  workspace root (directory traversal).
* :func:`compute_worktree_path`: ``<root>/<repoDir>/<name>`` when
  ``nestWorkspaces`` is on, ``<root>/<name>`` otherwise, with root =
  ``repo.worktreeBasePath`` (relative values resolve from the repo) or
  ``settings.workspaceDir``.

Pure string work: no symlink resolution (that needs the file system).
"""

from __future__ import annotations

import os
import unicodedata
from typing import Final

from orca.model.state import GlobalSettings
from orca.model.types_repo import Repo

__all__ = [
    "MAX_WORKTREE_NAME_BYTES",
    "InvalidWorktreeName",
    "PathOutsideWorkspace",
    "WorkspaceRootUnset",
    "compute_workspace_root",
    "compute_worktree_path",
    "ensure_path_within_workspace",
    "sanitize_worktree_name",
]

# File systems cap one name at 255 bytes; 200 leaves room for "-2"-style
# de-duplication suffixes and for git's ".lock" files next to refs.
MAX_WORKTREE_NAME_BYTES: Final = 200
# Characters kept besides Unicode letters, marks and digits.
_KEPT_PUNCTUATION: Final = frozenset("._-")
# Names git refuses as a whole even when every character is allowed.
_REFUSED_WHOLE_NAMES: Final = frozenset({"HEAD", "@"})


class InvalidWorktreeName(ValueError):
    """The requested worktree name has no usable characters or is refused by git (caller's fault)."""


class PathOutsideWorkspace(ValueError):
    """A computed or requested path escapes the workspace root (caller's fault)."""


class WorkspaceRootUnset(ValueError):
    """Neither the repo nor the settings name a workspace root (configuration is at fault)."""


def _kept(ch: str) -> bool:
    return ch in _KEPT_PUNCTUATION or unicodedata.category(ch)[0] in "LMN"


def _collapse(text: str, ch: str) -> str:
    double = ch + ch
    while double in text:
        text = text.replace(double, ch)
    return text


def _truncate_utf8(text: str, limit: int) -> str:
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    return encoded[:limit].decode("utf-8", "ignore")


def sanitize_worktree_name(name: str) -> str:
    """A directory/branch-safe form of ``name``; raises InvalidWorktreeName if nothing usable is left.

    The result contains only Unicode letters, marks, digits, ``.``, ``_`` and ``-``;
    never ``..``; does not start or end with ``.`` or ``-``; does not end in ``.lock``;
    and is at most MAX_WORKTREE_NAME_BYTES of UTF-8.
    """
    text = unicodedata.normalize("NFC", name)
    text = "".join(ch if _kept(ch) else "-" for ch in text)
    text = _collapse(_collapse(text, "."), "-")
    text = text.strip(".-")
    text = _truncate_utf8(text, MAX_WORKTREE_NAME_BYTES).strip(".-")
    if not text:
        raise InvalidWorktreeName(
            f"worktree name {name!r} has no letters or digits left after sanitising"
        )
    if text.endswith(".lock"):
        raise InvalidWorktreeName(f"git refuses names ending in '.lock': {name!r}")
    if text in _REFUSED_WHOLE_NAMES:
        raise InvalidWorktreeName(f"git refuses the branch name {text!r}")
    return text


def ensure_path_within_workspace(root: str, path: str) -> str:
    """Normalised absolute ``path`` (relative paths resolve from ``root``) strictly inside ``root``.

    Raises PathOutsideWorkspace when it escapes or equals the root, WorkspaceRootUnset
    when ``root`` is not absolute.
    """
    if not os.path.isabs(root):
        raise WorkspaceRootUnset(f"workspace root must be an absolute path: {root!r}")
    norm_root = os.path.normpath(root)
    candidate = os.path.normpath(os.path.join(norm_root, path))
    rel = os.path.relpath(candidate, norm_root)
    if rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep):
        raise PathOutsideWorkspace(f"{path!r} is not inside the workspace root {root!r}")
    return candidate


def compute_workspace_root(repo: Repo, settings: GlobalSettings) -> str:
    """``repo.worktreeBasePath`` (relative to the repo) or ``settings.workspaceDir``, normalised."""
    if repo.worktree_base_path:
        return os.path.normpath(os.path.join(repo.path, repo.worktree_base_path))
    if not settings.workspace_dir:
        raise WorkspaceRootUnset(
            "settings.workspaceDir is empty and the repo sets no worktreeBasePath"
        )
    return os.path.normpath(settings.workspace_dir)


def _repo_dir_name(repo: Repo) -> str:
    base = os.path.basename(os.path.normpath(repo.path))
    if base in ("", os.curdir, os.pardir):
        return sanitize_worktree_name(repo.display_name or repo.id)
    return base


def compute_worktree_path(repo: Repo, name: str, settings: GlobalSettings) -> str:
    """Where a new worktree called ``name`` goes (nested or flat, see module docstring)."""
    root = compute_workspace_root(repo, settings)
    leaf = sanitize_worktree_name(name)
    relative = os.path.join(_repo_dir_name(repo), leaf) if settings.nest_workspaces else leaf
    return ensure_path_within_workspace(root, relative)
