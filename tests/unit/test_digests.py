"""``orca.digests.sha256_hex``: hashlib's digest, without OpenSSL in the process."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

from orca.digests import sha256_hex


@pytest.mark.parametrize(
    "data", [b"", b"/tmp/pytest-of-root/pytest-1/popen-gw2/home/run", bytes(range(256)) * 9]
)
def test_the_same_digest_as_hashlib(data: bytes) -> None:
    assert sha256_hex(data) == hashlib.sha256(data).hexdigest()


def test_a_runtime_folder_for_a_long_home_loads_no_openssl() -> None:
    """The fd keeper resolves its paths like every process; under a long ORCA_HOME that
    takes a digest, which loaded libcrypto there (CI's paths are long)."""
    home = "/tmp/" + "long-orca-home-" * 8
    probe = (
        "import os, sys\n"
        "from orca.paths import resolve_paths\n"
        f"paths = resolve_paths({{'ORCA_HOME': {home!r}}})\n"
        "assert len(str(paths.home)) > 100 and not str(paths.runtime_dir).startswith(str(paths.home))\n"
        "print('hashlib' in sys.modules, 'libcrypto' in open('/proc/self/maps').read())\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"], out.stdout + out.stderr
