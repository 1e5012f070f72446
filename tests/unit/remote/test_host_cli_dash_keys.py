"""Z85 keys may start with '-': the forms the CLI prints and documents keep them values."""

from __future__ import annotations

from pathlib import Path

from support.procs import run_cli

from orca.keys import KeyPair
from orca.paths import resolve_paths
from orca.remote import access
from orca.remote.hosts import load_hosts


def _dash_key() -> bytes:
    while True:  # one key in 85 starts with '-'
        pair = KeyPair.generate()
        if pair.public.startswith(b"-"):
            return pair.public


def test_a_key_starting_with_a_dash_is_added_and_authorized(tmp_path: Path) -> None:
    key = _dash_key().decode()
    done = run_cli(tmp_path, "host", "add", "box", "tcp://127.0.0.1:7799", f"--server-key={key}")
    assert done.returncode == 0, done.stderr
    assert "orca host authorize -- '" in done.stdout  # the hint is safe to paste too
    paths = resolve_paths({"ORCA_HOME": str(tmp_path)})
    assert load_hosts(paths)["box"].server_key == key.encode()
    done = run_cli(tmp_path, "host", "authorize", "--name", "peer", "--", key)
    assert done.returncode == 0, done.stderr
    assert access.AccessTable(paths).lookup(key.encode()) is not None
