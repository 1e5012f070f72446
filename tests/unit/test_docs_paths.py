"""The README and docs/ name only files a clone of the repository has (issue 23: the
README sent readers to ``../shared/ARCHITECTURE.md``, outside every clone)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# A path in backticks or a Markdown link that starts at the repo's top (or leaves it).
NAMED = re.compile(
    r"`((?:\.\./|\./)?(?:orca|actors|tests|bench|config|docs|\.ci)/[^`\s]*|\.\./[^`\s]+)`"
    r"|\]\(((?!https?:|#)[^)\s]+)\)"
)


def named_paths(text: str) -> list[str]:
    found = [m.group(1) or m.group(2) for m in NAMED.finditer(text)]
    return [p for p in found if "<" not in p]  # `actors/<name>/` is a pattern, not a path


def test_the_pattern_finds_what_the_docs_name() -> None:
    assert named_paths("see `config/ptyd.toml` and [x](docs/remote.md), `../y.md`") == [
        "config/ptyd.toml",
        "docs/remote.md",
        "../y.md",
    ]


def test_every_path_the_docs_name_is_in_the_repository() -> None:
    missing = []
    for doc in DOCS:
        for path in named_paths(doc.read_text()):
            target = (doc.parent / path if path.startswith(".") else REPO / path).resolve()
            if not target.is_relative_to(REPO) or not target.exists():
                missing.append(f"{doc.relative_to(REPO)}: {path}")
    assert missing == []
