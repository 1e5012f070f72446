"""Where a new worktree goes: the model's path, made unique per repo (pure).

``orca.model.naming.compute_worktree_path`` nests worktrees under
``<root>/<repo folder name>/``. Two repos whose folders share a name (``~/work/api``
and ``~/oss/api``) would then share ``<root>/api/``, and the second one's worktree
names collide with the first's ("already exists"; issue 15 item 4).

Rule: among the repos that would share a workspace folder (same root, same folder
name), the one added first (``addedAt``, then id) keeps ``<name>``; every other gets
``<name>-<first 8 characters of its repo id>``. Readable, and stable for as long as
the first repo is registered. Only new worktrees are placed by it: an existing one
keeps its path (the path is its identity). The flat layout (``nestWorkspaces`` off)
puts every repo's worktrees in one folder by the user's choice and is left as it is.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from orca.model import naming
from orca.model.state import GlobalSettings
from orca.model.types_repo import Repo

__all__ = ["SHORT_REPO_ID", "compute_unique_worktree_path", "workspace_folder"]

# Eight characters of a UUID4 repo id: 4 billion values, readable in a path.
SHORT_REPO_ID = 8


def _shared_folder(repo: Repo, settings: GlobalSettings) -> tuple[str, str] | None:
    """(root, folder name) the model nests this repo's worktrees in; None when unset."""
    try:
        probe = naming.compute_worktree_path(repo, "x", settings)
    except (naming.WorkspaceRootUnset, naming.PathOutsideWorkspace, naming.InvalidWorktreeName):
        return None
    folder = os.path.dirname(probe)
    return os.path.dirname(folder), os.path.basename(folder)


def workspace_folder(repo: Repo, repos: Iterable[Repo], settings: GlobalSettings) -> str | None:
    """The folder name (under the root) for ``repo``'s new worktrees in the nested layout,
    or None when the model's own folder is ``repo``'s alone (or the layout is flat)."""
    if not settings.nest_workspaces:
        return None
    mine = _shared_folder(repo, settings)
    if mine is None:
        return None
    sharing = [r for r in repos if r.id != repo.id and _shared_folder(r, settings) == mine]
    if all((repo.added_at, repo.id) < (r.added_at, r.id) for r in sharing):
        return None
    short = naming.sanitize_worktree_name(repo.id[:SHORT_REPO_ID])
    return f"{mine[1]}-{short}"


def compute_unique_worktree_path(
    repo: Repo, name: str, repos: Iterable[Repo], settings: GlobalSettings
) -> str:
    """``compute_worktree_path`` with the repo's folder made unique (module docstring).

    Raises the model's InvalidWorktreeName / PathOutsideWorkspace / WorkspaceRootUnset.
    """
    path = naming.compute_worktree_path(repo, name, settings)
    folder = workspace_folder(repo, repos, settings)
    if folder is None:
        return path
    root = naming.compute_workspace_root(repo, settings)
    leaf = naming.sanitize_worktree_name(name)
    return naming.ensure_path_within_workspace(root, os.path.join(folder, leaf))
