"""Known remote hosts and this client's key pair (``orca.remote.hosts``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orca.keys import KeyPair
from orca.paths import resolve_paths
from orca.remote import hosts, known_hosts_path


def test_client_key_is_created_once_and_private(tmp_path: Path) -> None:
    paths = resolve_paths({"ORCA_HOME": str(tmp_path)}).ensure()
    first = hosts.client_keys(paths)
    assert hosts.client_keys(paths) == first
    secret = paths.data_dir / "keys" / hosts.CLIENT_SECRET_FILE
    assert secret.stat().st_mode & 0o777 == 0o600


def test_hosts_are_pinned_validated_and_removable(tmp_path: Path) -> None:
    paths = resolve_paths({"ORCA_HOME": str(tmp_path)}).ensure()
    key = KeyPair.generate().public.decode()
    host = hosts.add_host(paths, "box", "tcp://10.0.0.2:7710", key)
    assert host.host_id == "runtime:box"
    assert hosts.load_hosts(paths)["box"].server_key == key.encode()
    assert known_hosts_path(paths).stat().st_mode & 0o777 == 0o600
    for name, endpoint, server in (
        ("local", "tcp://a:1", key),
        ("bad name", "tcp://a:1", key),
        ("ok", "ipc:///x", key),
        ("ok", "tcp://a:99999", key),
        ("ok", "tcp://a:1", "short"),
    ):
        with pytest.raises(hosts.HostConfigError):
            hosts.add_host(paths, name, endpoint, server)
    assert hosts.split_remote_ref(paths, "box:repo:abcd") == (host, "repo:abcd")
    assert hosts.split_remote_ref(paths, "other:repo") is None
    assert hosts.remove_host(paths, "box") and not hosts.load_hosts(paths)


def test_heartbeats_default_to_5_and_20_seconds_and_can_be_shortened() -> None:
    assert hosts.Heartbeats.from_env({}) == hosts.Heartbeats(5.0, 20.0)
    fast = {hosts.HEARTBEAT_IVL_ENV: "0.3", hosts.HEARTBEAT_TIMEOUT_ENV: "1.5"}
    assert hosts.Heartbeats.from_env(fast) == hosts.Heartbeats(0.3, 1.5)
    assert hosts.Heartbeats.from_env({hosts.HEARTBEAT_IVL_ENV: "nan?"}).interval_s == 5.0
