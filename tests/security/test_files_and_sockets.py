"""Issue 16 items 8 (ptyd part) and 12 (modes, paths): files and sockets Orca makes.

- every socket and file in the runtime dir is owner-only, whatever the umask;
- a terminal-history ``*.meta.json`` of ``[]`` or ``null`` crash-looped ptyd into
  ``failed``; now ptyd starts and serves;
- a repo path that is not UTF-8 printed a traceback; now it is a clear answer.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from support.journey import User, make_git_repo

from orca.client.sync import invoke
from orca.contracts import ptyd, supervisor


def test_sockets_and_runtime_files_are_owner_only_under_a_wide_umask(
    orca_home: Path, tmp_path: Path
) -> None:
    """With umask 000, the runtime dir is 0700 and every socket/file in it 0600."""
    user = User(orca_home, tmp_path / "user")
    old = os.umask(0)
    try:
        user.ok("up")
    finally:
        os.umask(old)
    try:
        runtime = user.paths.runtime_dir
        assert stat.S_IMODE(runtime.stat().st_mode) == 0o700
        entries = list(runtime.iterdir())
        assert any(stat.S_ISSOCK(p.lstat().st_mode) for p in entries)
        wide = {p.name: oct(stat.S_IMODE(p.lstat().st_mode)) for p in entries}
        assert {m for m in wide.values()} == {"0o600"}, wide
    finally:
        user.ok("down", "--kill-terminals")


@pytest.mark.parametrize("damaged", [b"[]", b"null", b'{"key": 5, "segments": "x"}'])
def test_a_damaged_history_meta_file_does_not_stop_ptyd(
    orca_home: Path, tmp_path: Path, damaged: bytes
) -> None:
    """ptyd starts over a damaged ``*.meta.json`` (it is swept), answers, never restarts."""
    user = User(orca_home, tmp_path / "user")
    history = user.paths.terminal_history_dir
    history.mkdir(parents=True, mode=0o700)
    (history / ("ab" * 16 + ".meta.json")).write_bytes(damaged)
    user.ok("up")
    try:
        listed = invoke(ptyd.LIST, ptyd.ListArgs(), paths=user.paths)
        assert listed.sessions == []
        status = invoke(supervisor.STATUS, paths=user.paths)
        (row,) = [a for a in status.actors if a.name == "ptyd"]
        assert row.state == "running" and row.restarts == 0
    finally:
        user.ok("down", "--kill-terminals")


def test_a_repo_path_that_is_not_utf8_gets_a_clear_answer(orca_home: Path, tmp_path: Path) -> None:
    """`orca repo add <non-UTF-8 path>` answers without a traceback, and the store lives."""
    user = User(orca_home, tmp_path / "user")
    raw = os.fsencode(tmp_path) + b"/proj-\xfe"
    os.mkdir(raw)
    make_git_repo(Path(os.fsdecode(raw)) / "inner")
    user.ok("up")
    try:
        result = subprocess.run(
            [sys.executable, "-m", "orca.cli.main", "repo", "add", os.fsdecode(raw)],
            env=user.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "Traceback" not in result.stderr
        assert result.returncode in (0, 2), result.stderr
        if result.returncode == 2:
            assert "UTF-8" in result.stderr or "utf-8" in result.stderr
        status = invoke(supervisor.STATUS, paths=user.paths)
        assert all(a.restarts == 0 for a in status.actors)
    finally:
        user.ok("down", "--kill-terminals")
