"""An index on a temp dir, filled by the real scanner from transcripts the test wrote."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.vault.scanner import PassReport, Scanner
from actors.vault.schema import open_index


class Index:
    def __init__(self, root: Path, step_bytes: int = 1 << 20) -> None:
        self.roots = {agent: [str(root / agent)] for agent in ("claude", "codex", "gemini")}
        self.agent_root = {agent: root / agent for agent in ("claude", "codex", "gemini")}
        self.path, self.conn = open_index(root / "vault")
        self.scanner = Scanner(self.conn, self.roots, step_bytes)

    def scan(self) -> PassReport:
        """One whole pass, as the actor runs it (groups until the queue is empty)."""
        queue = self.scanner.sources([])
        report = PassReport()
        while queue:
            self.scanner.step_group(queue, report)
        return report

    def reader(self) -> sqlite3.Connection:
        from actors.vault.schema import connect

        return connect(self.path)


@pytest.fixture
def index(tmp_path: Path) -> Iterator[Index]:
    built = Index(tmp_path)
    yield built
    built.conn.close()
