"""`orca watch` imports its remote part only when a remote host is known."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from support.procs import child_env

from orca.paths import resolve_paths
from orca.remote.hosts import add_host

PROBE = """
import json, sys
from orca.cli.main import main
code = main(sys.argv[1:])
print("\\n" + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""
REMOTE_MODULES = ("orca.cli.remote.watch", "orca.cli.remote.readers", "orca.contracts.gateway")


def _watch_modules(home: Path) -> list[str]:
    """What `orca watch` loaded before failing (no tree runs: hooks never publishes)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "watch", "--json"],
        env=child_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    report = json.loads(done.stdout.rstrip().rsplit("\n", 1)[-1])
    assert report["code"] != 0 and "not publishing" in done.stderr, done.stderr
    return [m for m in REMOTE_MODULES if m in report["modules"]]


def test_watch_without_a_known_host_imports_nothing_remote(tmp_path: Path) -> None:
    assert _watch_modules(tmp_path) == []


def test_watch_with_a_known_host_follows_the_mirrors(tmp_path: Path) -> None:
    paths = resolve_paths({"ORCA_HOME": str(tmp_path)})
    add_host(paths, "box", "tcp://127.0.0.1:7799", "SzI*Z9{qke+o{X>uTW)LY4H?2oPImj8/gBp0?DRj")
    assert _watch_modules(tmp_path) == list(REMOTE_MODULES)
