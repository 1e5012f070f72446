"""Fixtures of the UI tests: a real Orca tree, and a bounded way to drive ``OrcaApp`` headless.

pytest runs in trio mode, and Textual's pilot is asyncio: a UI test is a plain
(sync) test that runs one ``asyncio.run`` around ``App.run_test``, bounded by
``asyncio.wait_for``. The tree is started with the CLI (``orca up``) in the test's
ORCA_HOME and stopped with ``orca down --kill-terminals``; conftest's ``orca_home``
kills anything left by pid.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.journey import User, make_git_repo

from actors.ui.app import OrcaApp

UI_SIZE = (150, 44)


@dataclass
class Tree:
    user: User
    repo_id: str
    worktrees: dict[str, str]  # name → worktree id
    paths: dict[str, str]  # name → path


@pytest.fixture
def tree(orca_home: Path, tmp_path: Path) -> Iterator[Tree]:
    """``orca up`` in the test's home, a repo and two worktrees (alpha, beta)."""
    with running_tree(orca_home, tmp_path) as running:
        yield running


@contextmanager
def running_tree(
    orca_home: Path, tmp_path: Path, names: tuple[str, ...] = ("alpha", "beta")
) -> Iterator[Tree]:
    user = User(orca_home, tmp_path / "user")
    project = make_git_repo(tmp_path / "project")
    assert "every actor ready" in user.ok("up")
    try:
        user.ok("repo", "add", str(project))
        (repo,) = user.json("repo", "ls")["repos"]
        worktrees, paths = {}, {}
        for name in names:
            row = user.json("worktree", "create", repo["id"], name, "--setup", "skip")["worktree"]
            worktrees[name] = row["worktreeId"]
            paths[name] = row["path"]
        yield Tree(user, repo["id"], worktrees, paths)
    finally:
        user.run("down", "--kill-terminals")


@pytest.fixture
def drive() -> Callable[..., None]:
    return drive_app


def drive_app(
    app: OrcaApp, scenario: Callable[[OrcaApp, Any], Awaitable[None]], timeout: float = 60.0
) -> None:
    """Run ``scenario(app, pilot)`` headless, bounded by ``timeout`` seconds."""

    async def main() -> None:
        async with app.run_test(size=UI_SIZE) as pilot:
            await asyncio.wait_for(scenario(app, pilot), timeout)

    asyncio.run(main())


def screen_of(app: OrcaApp, pane_key: str) -> str:
    view = app.pane_view(pane_key)
    return "" if view is None else view.screen_text()
