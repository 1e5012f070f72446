"""Issue 16 item 2: sockets lived in a predictable directory under the system temp dir
that Orca accepted even when another user had created it (0777), so that user could
swap ``ptyd.rpc`` and read every ``term.spawn`` env and keystroke.

Now the per-user ``<tmp>/orca-<uid>`` must be ours and 0700: a directory planted by
another (real, unprivileged) user is refused with a clear error and nothing is bound.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.procs import child_env

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")

NOBODY = 65534


def _as_nobody(*argv: str) -> None:
    def drop() -> None:
        os.setgid(NOBODY)
        os.setuid(NOBODY)

    subprocess.run(argv, check=True, preexec_fn=drop)


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A stand-in for /tmp that another user can reach: sticky and world-writable."""
    base = Path(tempfile.mkdtemp(prefix="orca-security-"))
    base.chmod(0o755)
    tmp = base / "tmp"
    tmp.mkdir()
    tmp.chmod(0o1777)
    try:
        yield tmp
    finally:
        shutil.rmtree(base)


def test_a_runtime_dir_planted_by_another_user_is_refused(
    tmp_path: Path, shared_tmp: Path
) -> None:
    """`orca up` with a deep ORCA_HOME refuses another user's /tmp/orca-<uid>; binds nothing."""
    tmp = shared_tmp
    planted = tmp / f"orca-{os.getuid()}"
    _as_nobody("mkdir", "-m", "0777", str(planted))
    assert planted.stat().st_uid == NOBODY
    home = tmp_path / ("h" * 90)  # too deep for sun_path: sockets go under <tmp>/orca-<uid>
    env = child_env(home, {"TMPDIR": str(tmp)})
    up = subprocess.run(
        [sys.executable, "-m", "orca.cli.main", "up"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert up.returncode == 1, up.stderr
    assert "unsafe directory" in up.stderr and f"owned by uid {NOBODY}" in up.stderr
    assert "Traceback" not in up.stderr
    assert list(planted.iterdir()) == []  # no socket, no lock handed to the other user


def test_our_own_per_user_dir_is_private(tmp_path: Path) -> None:
    """Without a planted directory the per-user dir is created 0700 and used."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    tmp.chmod(0o1777)
    home = tmp_path / ("h" * 90)
    env = child_env(home, {"TMPDIR": str(tmp)})
    status = subprocess.run(
        [sys.executable, "-m", "orca.cli.main", "status"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert status.returncode == 3, status.stderr  # not running, said plainly
    assert "Warning" not in status.stderr and "Traceback" not in status.stderr
