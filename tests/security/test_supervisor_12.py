"""Issue 16 item 12 (the supervisor's part): a non-UTF-8 ``supervisor.toml`` printed a
traceback; ``heartbeat_timeout_s = 0`` or ``nan`` was accepted (0 kills every actor at
once, nan never kills a hung one).

Through the real CLI: ``orca up`` exits 1 with orcad's one-line "bad configuration"
naming the file and the problem, no traceback, and nothing is started.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.procs import run_cli

from orca.contracts import supervisor as sup
from orca.paths import resolve_paths


def _up_refuses(home: Path, raw: bytes) -> str:
    cfg = home / "config"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "supervisor.toml").write_bytes(raw)
    result = run_cli(home, "up")
    assert result.returncode == 1, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    assert "bad configuration" in result.stderr and "supervisor.toml" in result.stderr
    paths = resolve_paths({"ORCA_HOME": str(home)})
    assert sup.read_lock_info(paths.lock_file) is None, "no orcad kept running"
    assert not [p for p in paths.log_dir.glob("*.log") if p.name != "orcad.log"]
    return result.stderr


def test_non_utf8_supervisor_toml_is_a_clear_error(orca_home: Path) -> None:
    """Latin-1 bytes in the override: "not UTF-8", the offset, no traceback, nothing started."""
    stderr = _up_refuses(orca_home, b"[supervisor]\nintensity = 3  # r\xe9glage\n")
    assert "not UTF-8" in stderr and "offset" in stderr


@pytest.mark.parametrize("value", ["0", "0.0", "nan", "-1", "inf"])
def test_heartbeat_timeout_must_be_a_positive_finite_number(orca_home: Path, value: str) -> None:
    """heartbeat_timeout_s = 0 / nan / negative / inf is refused by name before anything starts."""
    stderr = _up_refuses(orca_home, f"[supervisor]\nheartbeat_timeout_s = {value}\n".encode())
    assert "heartbeat_timeout_s" in stderr
