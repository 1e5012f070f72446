"""The vault's settings: where each agent's transcripts are looked for (config.py)."""

from __future__ import annotations

from pathlib import Path

from actors.vault.config import load_config


def test_an_agent_with_no_directory_says_why(tmp_path: Path) -> None:
    """Under ORCA_HOME only named directories are read: an agent none names says how to
    name one; an emptied override says so; the agents' defaults need no reason."""
    isolated = load_config(
        tmp_path, {"ORCA_HOME": str(tmp_path), "CODEX_HOME": "/c", "ORCA_VAULT_GEMINI_DIRS": ""}
    )
    assert isolated.roots == {"claude": [], "codex": ["/c"], "gemini": []}
    assert isolated.no_roots == {
        "claude": "under ORCA_HOME only directories named are read: CLAUDE_CONFIG_DIR or `claude = [...]` in vault.toml",
        "gemini": "ORCA_VAULT_GEMINI_DIRS is empty",
    }
    assert load_config(tmp_path, {"HOME": "/home/u"}).no_roots == {}
