"""Which filesystem events invalidate which facts (pure)."""

from __future__ import annotations

import pytest

from actors.gitwatch.watchplan import (
    RefreshStatus,
    RescanEverything,
    RescanRepo,
    WatchNewDirectory,
    WatchRole,
    classify_event,
)
from orca.actor.inotifyabi import (
    IN_CLOSE_WRITE,
    IN_CREATE,
    IN_DELETE,
    IN_DELETE_SELF,
    IN_ISDIR,
    IN_MOVED_TO,
    IN_Q_OVERFLOW,
    InotifyEvent,
)

COMMON = WatchRole("common", "r", "/repo/.git", "/repo")
ADMIN = WatchRole("admin", "r", "/repo/.git/worktrees/w", "/w")
TREE = WatchRole("tree", "r", "/w/src", "/w")
REFS = WatchRole("refs", "r", "/repo/.git/refs/heads")
REFS_ROOT = WatchRole("refsroot", "r", "/repo/.git/refs")


def _ev(mask: int, name: str = "") -> InotifyEvent:
    return InotifyEvent(wd=1, mask=mask, cookie=0, name=name)


@pytest.mark.parametrize(
    ("role", "event", "expected"),
    [
        (COMMON, _ev(IN_MOVED_TO, "HEAD"), [RescanRepo("r")]),
        (COMMON, _ev(IN_MOVED_TO, "index"), [RefreshStatus("r", "/repo")]),
        (COMMON, _ev(IN_MOVED_TO, "packed-refs"), [RescanRepo("r")]),
        (COMMON, _ev(IN_CREATE | IN_ISDIR, "worktrees"), [RescanRepo("r")]),
        (COMMON, _ev(IN_CLOSE_WRITE, "FETCH_HEAD"), []),
        (COMMON, _ev(IN_MOVED_TO, "config"), [RescanRepo("r")]),
        (REFS_ROOT, _ev(IN_CREATE | IN_ISDIR, "tags"), []),
        (REFS_ROOT, _ev(IN_MOVED_TO, "stash"), []),
        (
            REFS_ROOT,
            _ev(IN_CREATE | IN_ISDIR, "remotes"),
            [RescanRepo("r"), WatchNewDirectory(WatchRole("refs", "r", "/repo/.git/refs/remotes"))],
        ),
        (
            WatchRole("refs", "r", "/repo/.git/refs/remotes/origin"),
            _ev(IN_MOVED_TO, "main"),
            [RescanRepo("r")],
        ),
        (ADMIN, _ev(IN_MOVED_TO, "HEAD"), [RescanRepo("r")]),
        (ADMIN, _ev(IN_CREATE, "locked"), [RescanRepo("r")]),
        (ADMIN, _ev(IN_MOVED_TO, "index"), [RefreshStatus("r", "/w")]),
        (ADMIN, _ev(IN_DELETE_SELF), [RescanRepo("r")]),
        (
            WatchRole("worktrees", "r", "/repo/.git/worktrees"),
            _ev(IN_DELETE, "w"),
            [RescanRepo("r")],
        ),
        (TREE, _ev(IN_CLOSE_WRITE, "main.py"), [RefreshStatus("r", "/w")]),
        (TREE, _ev(IN_CREATE, ".git"), []),
        (TREE, _ev(IN_DELETE_SELF), [RefreshStatus("r", "/w")]),  # a subdirectory gone
        # The worktree's folder itself deleted (issue 32): git now calls it prunable.
        (WatchRole("tree", "r", "/w", "/w"), _ev(IN_DELETE_SELF), [RescanRepo("r")]),
    ],
)
def test_event_invalidates_the_smallest_fact(
    role: WatchRole, event: InotifyEvent, expected: list[object]
) -> None:
    """Each git write maps to a repo rescan, one worktree's status, or nothing."""
    assert classify_event(role, event) == expected


@pytest.mark.parametrize("role", [COMMON, ADMIN, TREE, REFS, REFS_ROOT])
def test_lockfiles_are_noise(role: WatchRole) -> None:
    """git's X.lock files never invalidate anything; only the renamed X does."""
    assert classify_event(role, _ev(IN_CREATE, "index.lock")) == []


def test_new_tree_directory_gets_a_watch() -> None:
    """A directory created in a worktree invalidates its status and asks for a watch."""
    assert classify_event(TREE, _ev(IN_CREATE | IN_ISDIR, "pkg")) == [
        RefreshStatus("r", "/w"),
        WatchNewDirectory(WatchRole("tree", "r", "/w/src/pkg", "/w")),
    ]


def test_new_ref_namespace_gets_a_watch() -> None:
    """refs/heads/feature/ appearing (first `feature/x` branch) is watched too."""
    assert classify_event(REFS, _ev(IN_CREATE | IN_ISDIR, "feature")) == [
        RescanRepo("r"),
        WatchNewDirectory(WatchRole("refs", "r", "/repo/.git/refs/heads/feature")),
    ]


def test_queue_overflow_rescans_everything() -> None:
    """Lost events (IN_Q_OVERFLOW, no role) force a full rescan."""
    assert classify_event(None, InotifyEvent(-1, IN_Q_OVERFLOW, 0, "")) == [RescanEverything()]


def test_event_for_a_forgotten_watch_is_ignored() -> None:
    """An event whose watch descriptor has no role any more does nothing."""
    assert classify_event(None, _ev(IN_CREATE, "x")) == []
