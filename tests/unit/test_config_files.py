"""orca.config_files: the shipped file then the user's, with the caller's error policy."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from orca.config_files import ConfigFileError, layered, read_toml, shipped_path


def test_shipped_then_user_missing_is_empty(tmp_path: Path) -> None:
    shipped = tmp_path / "shipped.toml"
    shipped.write_text("a = 1\n")
    layers = list(layered("x.toml", tmp_path / "conf", on_error="raise", shipped_file=shipped))
    assert layers == [(shipped, {"a": 1}), (tmp_path / "conf" / "x.toml", {})]
    assert shipped_path("ptyd.toml").exists()


def test_log_policy_reads_an_unreadable_file_as_empty(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("this is = not toml [")
    with caplog.at_level(logging.ERROR):
        assert read_toml(bad, on_error="log") == {}
    assert "not read" in caplog.text and str(bad) in caplog.text


def test_raise_policy_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"a = '\xe9'\n")
    with pytest.raises(ConfigFileError, match="not UTF-8") as info:
        read_toml(bad, on_error="raise")
    assert info.value.path == bad
    with pytest.raises(ConfigFileError, match="cannot read"):
        read_toml(tmp_path / "absent.toml", on_error="raise", missing_ok=False)
