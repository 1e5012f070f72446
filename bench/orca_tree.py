"""The service as a user starts it, for the benches: a fresh ``ORCA_HOME`` and ``HOME``
(``orca up`` links ``~/.local/bin/orca``: never in the real home), one git repository,
and the CLI run the way a user runs it (``python -m orca.cli.main``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from orca.contracts.fd_keeper import KEEPER_LOCK_NAME
from orca.paths import resolve_paths


class OrcaTree:
    def __init__(self, base: Path) -> None:
        self.home = base / "orca"
        self.user_home = base / "user"
        self.user_home.mkdir(exist_ok=True)
        self.env = dict(os.environ, ORCA_HOME=str(self.home), HOME=str(self.user_home))
        self.env.pop("PYTHONPATH", None)
        self.env.pop("ORCA_SUPERVISOR", None)
        self.repo = base / "repo"  # `orca repo add` names it "repo"
        self.repo.mkdir()
        self.git("init", "-q", "-b", "main")
        (self.repo / "README").write_text("bench\n")
        self.commit_all("init")

    def git(self, *args: str) -> None:
        """git in the bench's repository, as its author."""
        git = ["git", "-C", str(self.repo), "-c", "user.name=b", "-c", "user.email=b@b"]
        subprocess.run([*git, *args], check=True)

    def commit_all(self, message: str) -> None:
        self.git("add", ".")
        self.git("commit", "-qm", message)

    def cli(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "orca.cli.main", *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        if done.returncode != 0:
            raise RuntimeError(f"orca {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def actor_pids(self) -> dict[str, int]:
        """orcad and each actor that runs, by name, as ``orca status`` has them (a dormant
        one has no process: not started until asked)."""
        status = json.loads(self.cli("status", "--json"))
        running = {a["name"]: a["pid"] for a in status["actors"] if a["pid"] is not None}
        return {"orcad": status["orcad"]["pid"], **running}

    def orcad_pid(self) -> int:
        lock = resolve_paths({"ORCA_HOME": str(self.home)}).lock_file
        return int(json.loads(lock.read_text())["pid"])

    def keeper_pid(self) -> int | None:
        lock = resolve_paths({"ORCA_HOME": str(self.home)}).runtime_dir / KEEPER_LOCK_NAME
        try:
            return int(json.loads(lock.read_text())["pid"])
        except (OSError, ValueError, KeyError):
            return None

    def down(self) -> None:
        try:
            self.cli("down", "--kill-terminals")
        except RuntimeError:
            pass
