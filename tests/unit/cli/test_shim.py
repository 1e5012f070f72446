"""``orca`` in every new shell (issue 40 item 3): ``orca up`` links ~/.local/bin/orca to
the venv's console script, never over a working one of the user's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from orca.cli.shim import ensure_shim


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    prefix = tmp_path / "checkout" / ".venv"
    (prefix / "bin").mkdir(parents=True)
    script = prefix / "bin" / "orca"
    script.write_text("#!/bin/sh\necho orca-from-the-venv\n")
    script.chmod(0o755)
    return prefix


def test_the_link_is_made_and_a_new_login_shell_finds_orca(venv: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    said = ensure_shim({"HOME": str(home), "PATH": "/usr/bin:/bin"}, prefix=str(venv))
    link = home / ".local" / "bin" / "orca"
    assert link.resolve() == (venv / "bin" / "orca").resolve()
    assert said is not None and "new login shell" in said
    # A new shell, the venv not activated: ~/.local/bin on PATH (as ~/.profile puts it).
    shell = subprocess.run(
        ["sh", "-c", "command -v orca && orca"],
        env={"HOME": str(home), "PATH": f"{home}/.local/bin:/usr/bin:/bin"},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert shell.stdout.splitlines() == [str(link), "orca-from-the-venv"]
    # Again: nothing to do, nothing said.
    assert ensure_shim({"HOME": str(home)}, prefix=str(venv)) is None


def test_a_working_orca_of_the_users_is_left_alone(venv: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    mine = home / ".local" / "bin" / "orca"
    mine.parent.mkdir(parents=True)
    mine.write_text("#!/bin/sh\necho mine\n")
    assert ensure_shim({"HOME": str(home)}, prefix=str(venv)) is None
    assert mine.read_text() == "#!/bin/sh\necho mine\n"


def test_a_dangling_link_is_replaced(venv: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    link = home / ".local" / "bin" / "orca"
    link.parent.mkdir(parents=True)
    link.symlink_to(tmp_path / "removed-checkout" / "orca")
    ensure_shim({"HOME": str(home), "PATH": f"{link.parent}"}, prefix=str(venv))
    assert link.resolve() == (venv / "bin" / "orca").resolve()


def test_no_link_outside_a_virtualenv(tmp_path: Path) -> None:
    assert ensure_shim({"HOME": str(tmp_path)}, prefix=sys.base_prefix) is None
    assert not (tmp_path / ".local").exists()
