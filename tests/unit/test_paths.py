"""Where Orca's files go, and the checks on every directory it uses (orca.paths)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from orca import fsio, paths


@pytest.fixture
def tmp_root(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A stand-in for the system temp dir (sticky, world-writable, like /tmp), as short
    as a real one so socket paths below it fit the kernel's limit as they would."""
    root = Path(tempfile.mkdtemp(prefix="ot-", dir="/tmp"))
    root.chmod(0o1777)
    monkeypatch.setenv("TMPDIR", str(root))
    try:
        yield root
    finally:
        shutil.rmtree(root)


def test_without_a_session_runtime_dir_sockets_go_to_a_per_user_dir_without_warnings(
    tmp_root: Path,
) -> None:
    """No XDG_RUNTIME_DIR (ssh, root, containers): /tmp/orca-<uid>/default, no warning."""
    resolved = paths.resolve_paths({"HOME": str(tmp_root)})
    assert resolved.runtime_dir == tmp_root / f"orca-{os.getuid()}" / "default"


def test_a_session_runtime_dir_is_used_when_there_is_one(tmp_path: Path) -> None:
    """$XDG_RUNTIME_DIR/orca when the login session provides one."""
    resolved = paths.resolve_paths({"XDG_RUNTIME_DIR": str(tmp_path)})
    assert resolved.runtime_dir == tmp_path / "orca"


def test_each_orca_home_has_its_own_sockets_even_when_its_path_is_long(tmp_root: Path) -> None:
    """A short home keeps home/run; a long one maps to a per-user hashed dir, stably."""
    short = paths.resolve_paths({"ORCA_HOME": str(tmp_root / "h")})
    assert short.runtime_dir == tmp_root / "h" / "run"
    deep_a = str(tmp_root / ("a" * 90))
    deep_b = str(tmp_root / ("b" * 90))
    a1 = paths.resolve_paths({"ORCA_HOME": deep_a}).runtime_dir
    a2 = paths.resolve_paths({"ORCA_HOME": deep_a}).runtime_dir
    b = paths.resolve_paths({"ORCA_HOME": deep_b}).runtime_dir
    assert a1 == a2 != b and a1.parent == tmp_root / f"orca-{os.getuid()}"
    assert len(a1.name) == 16  # /tmp/orca-<uid>/<16 hex>/supervisor.rpc fits sun_path


def test_ensure_creates_every_directory_private(tmp_root: Path) -> None:
    """data, runtime, logs and config are created 0700."""
    resolved = paths.resolve_paths({"ORCA_HOME": str(tmp_root / ("h" * 90))}).ensure()
    for d in (resolved.data_dir, resolved.runtime_dir, resolved.log_dir, resolved.config_dir):
        assert d.stat().st_mode & 0o777 == 0o700 and d.stat().st_uid == os.geteuid()


@pytest.mark.skipif(os.geteuid() != 0, reason="planting another user's directory needs root")
def test_a_runtime_dir_planted_by_another_user_is_refused(tmp_root: Path) -> None:
    """Another local user creating /tmp/orca-<uid> first cannot get our sockets."""
    planted = tmp_root / f"orca-{os.getuid()}"
    planted.mkdir(mode=0o777)
    planted.chmod(0o777)
    os.chown(planted, 65534, 65534)
    resolved = paths.resolve_paths({"ORCA_HOME": str(tmp_root / ("h" * 90))})
    with pytest.raises(fsio.UnsafeDirectory, match="owned by uid 65534"):
        resolved.ensure()
    assert not any(planted.iterdir())


def test_a_directory_below_a_world_writable_non_sticky_parent_is_refused(tmp_path: Path) -> None:
    """Another user could rename our directory away and put theirs in its place."""
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    with pytest.raises(fsio.UnsafeDirectory, match="writable by other users"):
        paths.resolve_paths({"ORCA_HOME": str(open_dir / "home")}).ensure()


def test_waker_of_names_the_actor_and_orcads_socket_beside_it() -> None:
    """Whom a client asks to start an actor whose socket is missing (issue 36)."""
    from orca.paths import waker_of

    assert waker_of("/run/u/orca/vault.rpc") == ("vault", "/run/u/orca/supervisor.rpc")
    assert waker_of("/run/u/orca/supervisor.rpc") is None  # orcad wakes nobody for itself
    assert waker_of("/run/u/orca/vault.pub") is None  # events wake nobody
    assert waker_of("/run/u/orca/gateway.remote") is None
    assert waker_of("/run/u/orca/noext") is None
