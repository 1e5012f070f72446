"""Z85 keys may start with '-' (one in 85): the key ``orca host key`` prints works pasted
bare into ``authorize``, ``revoke`` and ``add --server-key`` (argparse would read it as
an unknown option)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.procs import run_cli

from orca.cli.host import protect_keys
from orca.keys import KeyPair
from orca.paths import resolve_paths
from orca.remote import access
from orca.remote.hosts import load_hosts


def _dash_key() -> str:
    while True:
        pair = KeyPair.generate()
        if pair.public.startswith(b"-"):
            return pair.public.decode()


def test_a_key_starting_with_a_dash_is_added_authorized_and_revoked(tmp_path: Path) -> None:
    key = _dash_key()
    done = run_cli(tmp_path, "host", "add", "box", "tcp://127.0.0.1:7799", "--server-key", key)
    assert done.returncode == 0, done.stderr
    paths = resolve_paths({"ORCA_HOME": str(tmp_path)})
    assert load_hosts(paths)["box"].server_key == key.encode()
    done = run_cli(tmp_path, "host", "authorize", key, "--read-only", "--name", "peer")
    assert done.returncode == 0, done.stderr
    assert access.AccessTable(paths).lookup(key.encode()) is not None
    done = run_cli(tmp_path, "host", "revoke", key)
    assert done.returncode == 0, done.stderr
    assert access.AccessTable(paths).lookup(key.encode()) is None


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--read-only", "K"], ["--read-only", "K"]),
        (["-K", "--read-only"], ["--read-only", "--", "-K"]),
        (["x", "--server-key", "-K"], ["x", "--server-key=-K"]),
        (["--", "-K"], ["--", "-K"]),
        (["-K", "--", "-y"], ["--", "-K", "-y"]),
        (["--read-only"], ["--read-only"]),
    ],
)
def test_only_whole_keys_are_protected(args: list[str], expected: list[str]) -> None:
    key = "-" + "a" * 39
    swap = {"-K": key, "K": key[1:] + "b"}

    def real(words: list[str]) -> list[str]:
        return [swap.get(w, w).replace("=-K", "=" + key) for w in words]

    assert protect_keys(real(args)) == real(expected)
