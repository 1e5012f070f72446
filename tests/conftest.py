"""Fixtures shared by every test: an isolated ORCA_HOME and process cleanup by pid."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.procs import FIXTURES, REPO, VAULT_ROOT_ENV, agent_roots, end_profile
from support.tmpfs import mount_tmpfs, umount

from orca.paths import OrcaPaths, resolve_paths


@pytest.fixture
def orca_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh ORCA_HOME for this test; any orcad started in it is killed afterwards."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("ORCA_HOME", str(home))
    # And a HOME of its own: `orca up` links ~/.local/bin/orca (orca/cli/shim.py), agent
    # configs live under it; the real home is never touched.
    user_home = tmp_path / "home-of-user"
    user_home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.delenv("ORCA_TCP_HOST", raising=False)
    for agent, root in agent_roots(home).items():
        monkeypatch.setenv(VAULT_ROOT_ENV[agent], str(root))
    monkeypatch.setenv(
        "PYTHONPATH",
        os.pathsep.join(
            [str(FIXTURES), str(REPO)]
            + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
        ),
    )
    yield home
    # orcad and the fd keeper, which outlives orcad by design (issue 13), with the
    # agents whose masters it still holds.
    end_profile(home)


@pytest.fixture
def orca_paths(orca_home: Path) -> OrcaPaths:
    return resolve_paths({"ORCA_HOME": str(orca_home)}).ensure()


@pytest.fixture
def small_home(orca_home: Path) -> Iterator[Path]:
    """``orca_home`` as a fresh 2 MiB tmpfs (full-disk tests; ``support.tmpfs``)."""
    assert mount_tmpfs(orca_home, "2m")
    try:
        yield orca_home
    finally:
        umount(orca_home)
