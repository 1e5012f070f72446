"""Finding transcript files under the agents' directories (file-system reads only).

Layouts (see each parser's module for its source):

* Claude Code: ``<root>/projects/<encoded cwd>/<session>.jsonl`` and a session's
  subagents, ``<root>/projects/<encoded cwd>/<session>/subagents/<agent>.jsonl``;
* Codex: ``<root>/sessions/YYYY/MM/DD/rollout-*.jsonl`` and the same under
  ``<root>/archived_sessions/``;
* Gemini CLI: ``<root>/tmp/<project hash>/chats/session-*.jsonl`` (``.json``: the
  older whole-document format) and subagents' ``chats/<session>/<id>.jsonl``.

Sources come back oldest first (by mtime), so rows of newer files get higher ids and
searches that list newest first show recent work first.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from actors.vault.step import Source

# Bounds on one walk: a directory tree under a root that is not what we expect (a
# home directory given as a root) is cut, not walked whole.
MAX_FILES_PER_ROOT = 200_000
# The directories under an agent's root that its walker reads (module docstring).
TRANSCRIPT_DIRS: dict[str, tuple[str, ...]] = {
    "claude": ("projects",),
    "codex": ("sessions", "archived_sessions"),
    "gemini": ("tmp",),
}


def transcript_dirs(agent: str, root: str) -> list[str]:
    """Where the vault looks for ``agent``'s transcripts under ``root``."""
    return [os.path.join(root, name) for name in TRANSCRIPT_DIRS.get(agent, ())]


def _scandir(path: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as it:
            return list(it)
    except OSError:
        return []


def _dirs(path: str) -> Iterator[str]:
    for entry in _scandir(path):
        if entry.is_dir(follow_symlinks=False):
            yield entry.path


def _files(path: str, suffixes: tuple[str, ...], prefix: str = "") -> Iterator[tuple[str, float]]:
    for entry in _scandir(path):
        name = entry.name
        if name.endswith(suffixes) and name.startswith(prefix):
            try:
                if entry.is_file(follow_symlinks=False):
                    yield entry.path, entry.stat(follow_symlinks=False).st_mtime
            except OSError:
                continue


def _claude(root: str) -> Iterator[tuple[Source, float]]:
    [projects] = transcript_dirs("claude", root)
    for project in _dirs(projects):
        for path, mtime in _files(project, (".jsonl",)):
            yield Source("claude", path), mtime
        for session in _dirs(project):
            for path, mtime in _files(os.path.join(session, "subagents"), (".jsonl",)):
                yield Source("claude", path), mtime


def _codex(root: str) -> Iterator[tuple[Source, float]]:
    for base in transcript_dirs("codex", root):
        for path, mtime in _files(base, (".jsonl",), "rollout-"):
            yield Source("codex", path), mtime
        for year in _dirs(base):
            for month in _dirs(year):
                for day in _dirs(month):
                    for path, mtime in _files(day, (".jsonl",), "rollout-"):
                        yield Source("codex", path), mtime


def _gemini(root: str) -> Iterator[tuple[Source, float]]:
    [tmp] = transcript_dirs("gemini", root)
    for project in _dirs(tmp):
        chats = os.path.join(project, "chats")
        for path, mtime in _files(chats, (".jsonl", ".json")):
            yield Source("gemini", path, whole=path.endswith(".json")), mtime
        for parent in _dirs(chats):
            for path, mtime in _files(parent, (".jsonl",)):
                yield Source("gemini", path), mtime


_WALKERS = {"claude": _claude, "codex": _codex, "gemini": _gemini}


def discover(roots: dict[str, list[str]], bound: Iterable[Source] = ()) -> list[Source]:
    """Every transcript under ``roots``, then the ``bound`` ones found nowhere else."""
    found: dict[str, tuple[Source, float]] = {}
    for agent, dirs in roots.items():
        walker = _WALKERS.get(agent)
        if walker is None:
            continue
        for root in dirs:
            for count, (source, mtime) in enumerate(walker(root)):
                if count >= MAX_FILES_PER_ROOT:
                    break
                found.setdefault(source.path, (source, mtime))
    for source in bound:
        if source.path in found:
            continue
        try:
            mtime = os.stat(source.path).st_mtime
        except OSError:
            continue
        found[source.path] = (source, mtime)
    return [s for s, _ in sorted(found.values(), key=lambda item: (item[1], item[0].path))]


def bound_source(agent: str, path: str) -> Source | None:
    """A hook's ``transcript_path`` as a source, if it can be one (absolute, a JSONL or
    JSON file name, an agent we parse); read only if the file is ours (``step``)."""
    if agent not in _WALKERS or not path.startswith("/") or "\x00" in path:
        return None
    if path.endswith(".jsonl"):
        return Source(agent, path, owned_only=True)  # type: ignore[arg-type]
    if path.endswith(".json") and agent == "gemini":
        return Source("gemini", path, whole=True, owned_only=True)
    return None
