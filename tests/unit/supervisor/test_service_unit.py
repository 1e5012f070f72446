"""`orca service install|uninstall` (orca/cli/service_unit.py) through the CLI: the
systemd user unit's content, and that the command says what it did (no systemd here)."""

from __future__ import annotations

from pathlib import Path

from support.procs import child_env, run_cli

from orca.cli.service_unit import render_unit, systemd_available


def test_install_writes_the_unit_and_uninstall_removes_it(orca_home: Path, tmp_path: Path) -> None:
    """The unit runs orcad in the foreground for this ORCA_HOME, Restart=always,
    KillMode=process; without systemd nothing is enabled and the output says so."""
    user_home = tmp_path / "user"
    env = child_env(orca_home, {"HOME": str(user_home)})
    env.pop("XDG_CONFIG_HOME", None)
    unit = user_home / ".config" / "systemd" / "user" / "orca.service"
    result = run_cli(orca_home, "service", "install", env=env)
    assert result.returncode == 0, result.stderr
    assert f"wrote {unit}" in result.stdout
    text = unit.read_text()
    lines = text.splitlines()
    assert any(
        line.startswith("ExecStart=") and line.endswith(" -P -m actors.supervisor")
        for line in lines
    ), text
    assert f"Environment=ORCA_HOME={orca_home.resolve()}" in lines
    assert {"Restart=always", "KillMode=process", "WantedBy=default.target"} <= set(lines)
    if not systemd_available():
        assert "nothing enabled" in result.stdout
    result = run_cli(orca_home, "service", "uninstall", env=env)
    assert result.returncode == 0, result.stderr
    assert f"removed {unit}" in result.stdout and not unit.exists()
    again = run_cli(orca_home, "service", "uninstall", env=env)
    assert again.returncode == 0 and "nothing to remove" in again.stdout


def test_unit_quotes_a_home_with_spaces_and_percent() -> None:
    """systemd would split an unquoted path and expand %: both are quoted/escaped."""
    text = render_unit("/opt/py thon/bin/python", "/home/a b/100%")
    assert 'ExecStart="/opt/py thon/bin/python" -P -m actors.supervisor' in text
    assert 'Environment="ORCA_HOME=/home/a b/100%%"' in text
