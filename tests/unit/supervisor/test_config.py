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
        paths_with(
            tmp_path, '[supervisor]\nintensity = 9\n[[child]]\nname = "x"\nmodule = "a.b"\n'
        ),
        environ={},
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
        ("[supervisor]\nintensity = 2.5\n", "intensity must be an integer"),
        ("[supervisor]\nheartbeat_interval_s = 0\n", "heartbeat_interval_s must be > 0"),
        ("[supervisor]\nheartbeat_timeout_s = 0\n", "heartbeat_timeout_s must be > 0"),
        ("[supervisor]\nready_timeout_s = 0.0\n", "ready_timeout_s must be > 0"),
        ("[supervisor]\nheartbeat_timeout_s = inf\n", "heartbeat_timeout_s must be a finite"),
        ("[supervisor]\nready_timeout_s = nan\n", "ready_timeout_s must be a finite"),
        ("[supervisor]\nperiod_s = -inf\n", "period_s must be a finite"),
        ("[supervisor]\nheartbeat_interval_s = 2.0\nheartbeat_timeout_s = 2.0\n", "longer than"),
        ('[[child]]\nname = "a"\nmodule = "m"\nshutdown_grace_s = inf\n', "shutdown_grace_s"),
        ("[supervisor]\ntcp_host = 1\n", "tcp_host must be a string"),
    ],
)
def test_bad_config_is_a_clear_error(tmp_path: Path, text: str, needle: str) -> None:
    """Every invalid setting is refused with a message naming the file and the key."""
    with pytest.raises(ConfigError, match=needle) as info:
        load_config(paths_with(tmp_path, text), environ={})
    assert "supervisor.toml" in str(info.value)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.1", "localhost", "::1", "127.0.0.1 "])
def test_non_loopback_tcp_host_is_refused(tmp_path: Path, host: str) -> None:
    """tcp_host must be an IPv4 loopback address: plaintext tcp elsewhere would serve sup.stop."""
    with pytest.raises(ConfigError, match="tcp_host") as info:
        load_config(paths_with(tmp_path, f"[supervisor]\ntcp_host = '{host}'\n"), environ={})
    assert "supervisor.toml" in str(info.value) and repr(host) in str(info.value)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.1.2.3", ""])
def test_loopback_tcp_host_is_accepted(tmp_path: Path, host: str) -> None:
    """Any 127/8 address (or "" for ipc only) is a valid tcp_host."""
    spec = load_config(paths_with(tmp_path, f"[supervisor]\ntcp_host = '{host}'\n"), environ={})
    assert spec.tcp_host == host


def test_orca_tcp_host_in_the_environment_overrides_and_is_checked(tmp_path: Path) -> None:
    """ORCA_TCP_HOST given to orcad is its tcp_host (and its actors'); a bad one is refused."""
    paths = paths_with(tmp_path, "[supervisor]\ntcp_host = '127.0.0.1'\n")
    assert load_config(paths, environ={"ORCA_TCP_HOST": "127.0.0.2"}).tcp_host == "127.0.0.2"
    assert load_config(paths, environ={"ORCA_TCP_HOST": ""}).tcp_host == "127.0.0.1"
    with pytest.raises(ConfigError, match=r"ORCA_TCP_HOST.*not a loopback"):
        load_config(paths, environ={"ORCA_TCP_HOST": "0.0.0.0"})


@pytest.mark.parametrize(
    "raw",
    [b"[supervisor]\nintensity = 3 # caf\xe9\n", b"\xff\xfe[\x00s\x00", b"# \xed\xa0\x80\n"],
)
def test_non_utf8_override_is_a_clear_error(tmp_path: Path, raw: bytes) -> None:
    """A supervisor.toml that is not UTF-8 is refused by name, not a UnicodeDecodeError."""
    paths = paths_with(tmp_path, None)
    (paths.config_dir / "supervisor.toml").write_bytes(raw)
    with pytest.raises(ConfigError, match="not UTF-8") as info:
        load_config(paths, environ={})
    assert "supervisor.toml" in str(info.value)


def test_unreadable_override_is_a_clear_error(tmp_path: Path) -> None:
    """A supervisor.toml that is a directory or a dangling symlink is refused by name."""
    paths = paths_with(tmp_path, None)
    (paths.config_dir / "supervisor.toml").mkdir()
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(paths, environ={})
    (paths.config_dir / "supervisor.toml").rmdir()
    (paths.config_dir / "supervisor.toml").symlink_to(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(paths, environ={})


def test_web_is_off_unless_enabled(tmp_path: Path) -> None:
    """Issue 27: the shipped tree lists ``web`` off; ``[enable] web = true`` in the user's
    file turns it on without restating the children; a name that is no child is refused."""
    shipped = load_config(paths_with(tmp_path / "a", None), environ={})
    assert "web" not in [c.name for c in shipped.children]
    assert [c.name for c in shipped.children] == [
        "store",
        "hooks",
        "ptyd",
        "gitwatch",
        "orch",
        "gateway",
        "vault",
    ]
    enabled = load_config(paths_with(tmp_path / "b", "[enable]\nweb = true\n"), environ={})
    assert [c.name for c in enabled.children][-1] == "web"
    assert enabled.child("web").module == "actors.web"
    off = load_config(paths_with(tmp_path / "c", "[enable]\ngateway = false\n"), environ={})
    assert "gateway" not in [c.name for c in off.children]
    for text, needle in (("[enable]\nnope = true\n", "names no child"), ("[enable]\nweb = 1\n", "true or false")):
        with pytest.raises(ConfigError, match=needle):
            load_config(paths_with(tmp_path / needle.replace(" ", "_"), text), environ={})
