"""An index on a temp dir, filled by the real scanner from transcripts the test wrote."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.vault import Index


@pytest.fixture
def index(tmp_path: Path) -> Iterator[Index]:
    built = Index(tmp_path)
    yield built
    built.conn.close()
