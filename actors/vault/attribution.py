"""Which pane, worktree and repo a transcript belongs to. Pure.

Exact first: hooks binds an agent session to the pane it runs in (the hook payload's
``session_id`` and ``transcript_path``, ``agentSession.bound``), and the pane's
worktree id names its repo (``<repoId>::<path>``, ``orca.model.ids``). A transcript
is *bound* when a binding names its session id (or its path): pane -> session ->
transcript -> worktree -> repo, no guessing.

A transcript no binding names (an agent started outside Orca, or before its hooks were
installed) is still counted, and attributed *unbound*: to the known worktree whose
directory contains the transcript's working directory (the longest such path), or for
Gemini, whose chat files carry no cwd, to the worktree whose path hashes to the
file's project hash (Gemini's ``getProjectHash``: SHA-256 of the project root).
Reports say which rows are unbound. Nothing known matches: unattributed.

Worktree renames: the store keeps a renamed worktree's old ids (``priorWorktreeIds``),
so a binding made before the rename is filed under the current id.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from actors.vault.indexdb import Binding
from orca.model.ids import (
    make_worktree_id,
    repo_id_of_worktree_id,
    split_worktree_id_for_filesystem,
)


@dataclass(frozen=True, slots=True)
class Place:
    worktree_id: str = ""
    repo_id: str = ""
    pane_key: str = ""
    bound: bool = False


@dataclass(frozen=True, slots=True)
class TranscriptFacts:
    """The columns of a transcript attribution reads."""

    id: int
    agent: str
    session_id: str
    path: str
    cwd: str
    project_hash: str


@dataclass(frozen=True)
class Workspaces:
    """What the store says exists: worktree directories, renamed ids, repo labels."""

    worktree_paths: Mapping[str, str] = field(default_factory=dict)  # directory -> worktree id
    current_ids: Mapping[str, str] = field(default_factory=dict)  # prior id -> current id
    repo_names: Mapping[str, str] = field(default_factory=dict)  # repo id -> display name
    worktree_names: Mapping[str, str] = field(default_factory=dict)  # worktree id -> name

    @classmethod
    def build(
        cls,
        repos: Iterable[tuple[str, str, str]],
        worktrees: Iterable[tuple[str, str, Iterable[str]]],
    ) -> Workspaces:
        """``repos``: (id, path, display name); ``worktrees``: (id, display name, prior ids)."""
        paths: dict[str, str] = {}
        names: dict[str, str] = {}
        repo_names: dict[str, str] = {}
        current: dict[str, str] = {}
        for repo_id, path, display in repos:
            repo_names[repo_id] = display or os.path.basename(path.rstrip("/")) or repo_id
            try:
                paths.setdefault(os.path.normpath(path), make_worktree_id(repo_id, path))
            except ValueError:
                continue
        for worktree_id, display, prior in worktrees:
            parts = split_worktree_id_for_filesystem(worktree_id)
            if parts is None:
                continue
            paths[os.path.normpath(parts.path)] = worktree_id
            names[worktree_id] = display or os.path.basename(parts.path.rstrip("/"))
            for old in prior:
                current[old] = worktree_id
        return cls(paths, current, repo_names, names)

    def current(self, worktree_id: str) -> str:
        return self.current_ids.get(worktree_id, worktree_id)

    def worktree_of_dir(self, directory: str) -> str:
        """The worktree whose directory contains ``directory`` (the deepest one)."""
        if not directory:
            return ""
        probe = os.path.normpath(directory)
        while True:
            found = self.worktree_paths.get(probe)
            if found is not None:
                return found
            parent = os.path.dirname(probe)
            if parent == probe:
                return ""
            probe = parent

    def worktree_of_project_hash(self, project_hash: str) -> str:
        if not project_hash:
            return ""
        for path, worktree_id in self.worktree_paths.items():
            if hashlib.sha256(path.encode()).hexdigest() == project_hash:
                return worktree_id
        return ""

    def worktree_label(self, worktree_id: str) -> str:
        if not worktree_id:
            return "(unattributed)"
        name = self.worktree_names.get(worktree_id)
        if name:
            return name
        parts = split_worktree_id_for_filesystem(worktree_id)
        return os.path.basename(parts.path.rstrip("/")) if parts else worktree_id

    def repo_label(self, repo_id: str) -> str:
        if not repo_id:
            return "(unattributed)"
        return self.repo_names.get(repo_id, repo_id)


def repo_of(worktree_id: str) -> str:
    """A worktree id's repo (``folder:<id>`` workspaces are their own repo)."""
    if worktree_id.startswith("folder:"):
        return worktree_id
    return repo_id_of_worktree_id(worktree_id) or ""


def attribute(
    transcript: TranscriptFacts,
    by_session: Mapping[tuple[str, str], Binding],
    by_path: Mapping[str, Binding],
    workspaces: Workspaces,
) -> Place:
    """The transcript's place (module docstring)."""
    binding = None
    if transcript.session_id:
        binding = by_session.get((transcript.agent, transcript.session_id))
    if binding is None:
        binding = by_path.get(transcript.path)
    if binding is not None:
        # A pane outside any worktree (no worktree id on its hooks) still ran somewhere:
        # its directory says where, the pane is the binding's.
        worktree_id = workspaces.current(binding.worktree_id) if binding.worktree_id else ""
        worktree_id = worktree_id or workspaces.worktree_of_dir(transcript.cwd)
        return Place(worktree_id, repo_of(worktree_id), binding.pane_key, True)
    worktree_id = workspaces.worktree_of_dir(transcript.cwd)
    if not worktree_id and transcript.agent == "gemini":
        worktree_id = workspaces.worktree_of_project_hash(transcript.project_hash)
    return Place(worktree_id, repo_of(worktree_id), "", False)


def matching_worktrees(ref: str, workspaces: Workspaces, known: Iterable[str]) -> set[str]:
    """The worktree ids ``ref`` names: an id, a directory, a display name or the
    directory's last component (``known``: ids attributed so far, named or not)."""
    ids = set(known) | set(workspaces.worktree_paths.values())
    exact = {w for w in ids if w == ref or workspaces.current(ref) == w}
    if exact:
        return exact
    directory = (
        workspaces.worktree_paths.get(os.path.normpath(ref)) if ref.startswith("/") else None
    )
    if directory:
        return {directory}
    return {w for w in ids if w and workspaces.worktree_label(w) == ref}


def matching_repos(ref: str, workspaces: Workspaces, known: Iterable[str]) -> set[str]:
    """The repo ids ``ref`` names: an id or a display name."""
    ids = set(known) | set(workspaces.repo_names)
    if ref in ids:
        return {ref}
    return {r for r in ids if r and workspaces.repo_label(r) == ref}
