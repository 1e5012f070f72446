"""A transcript's life in the index: new, growing, rewritten, vanished, over budget;
the file's schema versions (step.py, indexdb.py, schema.py)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from support.vault import (
    claude_path,
    claude_user,
    gemini_header,
    gemini_path,
    gemini_user,
    write_jsonl,
)

from actors.vault.attribution import Workspaces
from actors.vault.schema import SCHEMA_VERSION, ensure_text_rules, open_index
from actors.vault.step import Source, index_step

CWD = "/w/a"


def counts(conn: sqlite3.Connection) -> tuple[int, int, int]:
    entries = conn.execute("SELECT count(*) FROM entries").fetchone()[0]
    fts = conn.execute("SELECT count(*) FROM entries_fts WHERE entries_fts MATCH 'prompt'").fetchone()[0]
    generation = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0]
    return entries, fts, generation


def test_a_file_larger_than_one_step_is_read_whole_in_one_pass(tmp_path: Path) -> None:
    """A pass steps a file again while it has more to read: the step that stopped at
    its budget must not make the next one take the unchanged file for done (it did:
    the recorded size was the file's, so a 200 MB file stopped after one step)."""
    from support.vault import Index

    index = Index(tmp_path, step_bytes=4096)
    path = claude_path(index.agent_root["claude"], CWD, "L")
    write_jsonl(path, [claude_user("L", CWD, f"prompt {n} " + "x" * 100, second=n % 3000) for n in range(500)])
    report = index.scan()
    assert report.steps > 10
    assert counts(index.conn)[:2] == (500, 500)
    index.conn.close()


def test_a_vanished_transcript_takes_its_rows_along(index: object) -> None:
    path = claude_path(index.agent_root["claude"], CWD, "V")  # type: ignore[attr-defined]
    write_jsonl(path, [claude_user("V", CWD, "prompt one"), claude_user("V", CWD, "prompt two")])
    index.scan()  # type: ignore[attr-defined]
    assert counts(index.conn) == (2, 2, 1)  # type: ignore[attr-defined]
    path.unlink()
    report = index.scan()  # type: ignore[attr-defined]
    assert report.forgotten == 1
    assert counts(index.conn) == (0, 0, 2)  # type: ignore[attr-defined]


def test_a_legacy_gemini_document_being_rewritten_keeps_its_rows(index: object) -> None:
    """A whole-document chat caught half written is not a reason to drop what it said."""
    path = gemini_path(index.agent_root["gemini"], "/w/p", "G0000000", ".json")  # type: ignore[attr-defined]
    doc = {**gemini_header("G0000000", "/w/p"), "messages": [gemini_user("u", "prompt kept")]}
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc))
    index.scan()  # type: ignore[attr-defined]
    path.write_text(json.dumps(doc)[:40])
    index.scan()  # type: ignore[attr-defined]
    assert counts(index.conn)[:2] == (1, 1)  # type: ignore[attr-defined]
    [error] = [r[0] for r in index.conn.execute("SELECT error FROM transcripts")]  # type: ignore[attr-defined]
    assert "not a whole JSON document" in error
    doc["messages"].append(gemini_user("u2", "prompt added"))
    path.write_text(json.dumps(doc))
    index.scan()  # type: ignore[attr-defined]
    assert counts(index.conn)[:2] == (2, 2)  # type: ignore[attr-defined]


def test_bound_paths_must_be_regular_files_of_ours(index: object, tmp_path: Path) -> None:
    """A hook may name any path: a FIFO there is refused without being opened blocking."""
    fifo = tmp_path / "x.jsonl"
    os.mkfifo(fifo)
    result = index_step(index.scanner.writer, None, Source("claude", str(fifo), owned_only=True), 1 << 20)  # type: ignore[attr-defined]
    assert (result.outcome, result.error) == ("error", "not a regular file")


def test_over_budget_the_oldest_text_goes_and_the_tokens_stay(index: object) -> None:
    from support.vault import claude_assistant, claude_usage

    root = index.agent_root["claude"]  # type: ignore[attr-defined]
    for n in range(3):
        write_jsonl(claude_path(root, CWD, f"B{n}"), [
            claude_user(f"B{n}", CWD, f"prompt {n}", second=n * 10),
            claude_assistant(f"B{n}", CWD, message_id=f"m{n}", request_id="r", text="ok",
                             usage=claude_usage(1, 1), second=n * 10 + 1),
        ])  # fmt: skip
    index.scan()  # type: ignore[attr-defined]
    evicted = index.scanner.enforce_budget(max_entries=4, max_text_bytes=1 << 30)  # type: ignore[attr-defined]
    assert evicted == 1
    conn = index.conn  # type: ignore[attr-defined]
    assert conn.execute("SELECT path LIKE '%B0.jsonl' FROM transcripts WHERE text_evicted = 1").fetchall() == [(1,)]
    assert conn.execute("SELECT count(*) FROM usage").fetchone()[0] == 3
    assert counts(conn) == (4, 2, 2)
    index.scan()  # type: ignore[attr-defined]  # an evicted transcript is not read again
    assert counts(conn)[0] == 4


def test_the_file_is_private_and_a_newer_schema_is_set_aside(tmp_path: Path) -> None:
    directory = tmp_path / "vault"
    path, conn = open_index(directory)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert oct(path.stat().st_mode & 0o777) == "0o600" and oct(directory.stat().st_mode & 0o777) == "0o700"
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    path, conn = open_index(directory)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert [p.name for p in directory.glob("index.sqlite3.aside-*") if not p.name.endswith(("-wal", "-shm"))]
    conn.close()


def read_all(conn: sqlite3.Connection, root: Path) -> None:
    """One whole pass of a scanner over the Claude transcripts under ``root`` (a new
    scanner, as the actor makes one for a file it has just opened)."""
    from actors.vault.scanner import PassReport, Scanner

    scanner = Scanner(conn, {"claude": [str(root)]}, 1 << 20)
    queue, report = scanner.sources([]), PassReport()
    while queue:
        scanner.step_group(queue, report)
    while scanner.index_text_group():  # the full-text table follows the rows
        pass


def test_an_index_of_schema_1_is_read_again_under_the_new_search_rules(tmp_path: Path) -> None:
    """A file a build before schema 2 filled (``walrus.`` indexed as one token, so
    ``walrus`` found nothing) is emptied when opened and every transcript read again:
    the same rows and tokens, now found; a cursor into the old rows is refused."""
    from support.vault import claude_assistant, claude_usage

    from actors.vault.queries import search
    from actors.vault.schema import INDEX_NAME, MIGRATIONS, connect
    from orca import sqlite_schema
    from orca.contracts import vault as contract
    from orca.wire.errors import Conflict

    root, directory = tmp_path / "claude", tmp_path / "vault"
    write_jsonl(claude_path(root, CWD, "W"), [
        claude_user("W", CWD, "The flaky test lives in the walrus."),
        claude_assistant("W", CWD, message_id="m", request_id="r", text="found it.", usage=claude_usage(7, 3)),
    ])  # fmt: skip
    directory.mkdir()
    conn = connect(directory / INDEX_NAME)
    assert sqlite_schema.migrate(conn, MIGRATIONS[:1], INDEX_NAME)
    read_all(conn, root)

    def walrus(conn: sqlite3.Connection, cursor: str | None = None) -> list[str]:
        args = contract.SearchArgs(query="walrus", cursor=cursor)
        return [h.snippet for h in search(conn, Workspaces.build([], []), args).hits]

    assert walrus(conn) == [] and counts(conn)[2] == 1  # the defect, as such a file holds it
    conn.close()
    _, conn = open_index(directory)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert counts(conn) == (0, 0, 2)
    read_all(conn, root)
    assert walrus(conn) == ["The flaky test lives in the walrus."]
    assert conn.execute("SELECT count(*), sum(total) FROM usage").fetchone() == (1, 10)
    with pytest.raises(Conflict):
        walrus(conn, cursor="1.99")
    conn.close()


def test_an_index_built_under_other_search_rules_is_emptied_and_read_again(tmp_path: Path) -> None:
    """Rows indexed under other rules (another build's hidden tags, say) could not be
    removed from the full-text table with today's tokens: when the file is opened they
    are dropped and read again, never left to corrupt it; rows indexed under today's
    rules are kept, and removed with the tokens they were given."""
    from actors.vault.terms import TEXT_RULES

    root = tmp_path / "claude"
    path = claude_path(root, CWD, "R")
    write_jsonl(path, [claude_user("R", CWD, "prompt kept"), claude_user("R", CWD, "prompt two")])
    _, conn = open_index(tmp_path / "vault")
    read_all(conn, root)
    assert ensure_text_rules(conn) is False and counts(conn) == (2, 2, 1)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'text_rules'", (TEXT_RULES + 1,))
    conn.close()
    _, conn = open_index(tmp_path / "vault")
    assert counts(conn) == (0, 0, 2)
    assert conn.execute("SELECT count(*) FROM transcripts").fetchone()[0] == 0
    read_all(conn, root)
    assert counts(conn) == (2, 2, 2)
    path.unlink()
    read_all(conn, root)
    assert counts(conn) == (0, 0, 3)  # no token of the removed rows is left to match
    conn.close()
