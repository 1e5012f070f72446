"""``orca folder add|ls|rm`` as a user runs them: a plain directory becomes a folder
workspace that holds a terminal, is listed with its group, refuses removal while the
terminal runs, and with ``--force`` ends it and is forgotten (the directory stays)."""

from __future__ import annotations

from pathlib import Path

from support.journey import User


def test_a_folder_is_added_used_refused_and_removed(orca_home: Path, tmp_path: Path) -> None:
    user = User(orca_home, tmp_path / "user")
    notes = tmp_path / "my notes"
    notes.mkdir()
    user.ok("up")
    try:
        added = user.ok("folder", "add", str(notes), "--group", "research")
        assert "added my notes (folder:" in added and "in research" in added
        again = user.run("folder", "add", str(notes))
        assert again.returncode == 2 and "already a folder workspace" in again.stderr
        missing = user.run("folder", "add", str(tmp_path / "nowhere"))
        assert missing.returncode == 2 and "not a directory" in missing.stderr

        (row,) = user.json("folder", "ls")["folders"]
        assert (row["name"], row["group"], row["folderPath"]) == (
            "my notes",
            "research",
            str(notes),
        )
        assert row["worktreeId"] == f"folder:{row['id']}"
        table = user.ok("folder", "ls")
        assert "research" in table and str(notes) in table

        session = user.new_terminal("my notes", "sleep", "600")["sessionId"]
        assert session.startswith(row["worktreeId"] + "@@")
        assert [s["running"] for s in user.json("term", "ls")["sessions"]] == [True]
        refused = user.run("folder", "rm", "my notes")
        assert refused.returncode == 2 and "1 terminal(s) still running" in refused.stderr
        assert user.json("folder", "ls")["folders"], "a refused rm removed the folder"

        assert "removed my notes" in user.ok("folder", "rm", str(notes), "--force")
        assert user.json("folder", "ls")["folders"] == []
        assert notes.is_dir()
        after = user.json("term", "ls", "--all")["sessions"]
        assert not [s for s in after if s["sessionId"] == session and s["running"]], after
        unknown = user.run("folder", "rm", "my notes")
        assert unknown.returncode == 2, unknown.stderr
    finally:
        user.run("down", "--kill-terminals")
