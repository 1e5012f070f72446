"""Usage first, text behind (issue 36, vault cold): the scan's steps write rows and
usage; the full-text table is given the rows afterwards (``IndexWriter.index_text``).

So usage counts a transcript as soon as it is read, a search finds it once its text is
indexed, ``vault status`` says how many rows wait, and rows dropped before they were
indexed (a transcript started over) never reach the full-text table's delete, which
would corrupt a contentless FTS5 table.
"""

from __future__ import annotations

from pathlib import Path

from support.vault import (
    Index,
    claude_assistant,
    claude_path,
    claude_usage,
    claude_user,
    write_jsonl,
)

from actors.vault.attribution import Workspaces
from actors.vault.pricing import load_prices
from actors.vault.queries import search, usage
from actors.vault.scanner import PassReport
from orca.contracts import vault as contract

CWD = "/work/r/alpha"
WS = Workspaces.build([("r1", CWD, "alpha")], [])


def steps_only(index: Index) -> None:
    queue, report = index.scanner.sources([]), PassReport()
    while queue:
        index.scanner.step_group(queue, report)


def pending(index: Index) -> int:
    row = index.conn.execute(
        "SELECT count(*) FROM entries WHERE id > (SELECT value FROM meta WHERE key = 'text_upto')"
    ).fetchone()
    return int(row[0])


def hits(index: Index, query: str) -> int:
    return len(search(index.conn, WS, contract.SearchArgs(query=query, limit=50)).hits)


def test_usage_counts_what_was_read_before_search_finds_it(tmp_path: Path) -> None:
    index = Index(tmp_path)
    try:
        path = claude_path(index.agent_root["claude"], CWD, "S")
        lines = [claude_user("S", CWD, f"prompt {n} about the walrus", second=n) for n in range(450)]
        lines.append(
            claude_assistant("S", CWD, message_id="m", request_id="r", text="ok", usage=claude_usage(7, 3))
        )
        write_jsonl(path, lines)
        steps_only(index)
        report = usage(index.conn, WS, load_prices(None), contract.UsageArgs(by="agent"))
        assert (report.total.requests, report.total.total_tokens) == (1, 10)  # counted at once
        assert hits(index, "walrus") == 0 and pending(index) == 451

        assert index.scanner.writer.index_text(200) == 200  # one commit's worth
        assert pending(index) == 251
        while index.scanner.index_text_group():
            pass
        assert pending(index) == 0 and hits(index, "walrus") == 50

        # Started over (the file replaced): the indexed rows leave the table with their
        # tokens; rows read but not indexed yet leave without touching it.
        write_jsonl(path, [claude_user("S", CWD, "a new walrus", second=1)])
        steps_only(index)
        write_jsonl(path, [claude_user("S", CWD, "only the narwhal now", second=2)])
        steps_only(index)
        assert pending(index) == 1
        while index.scanner.index_text_group():
            pass
        assert hits(index, "walrus") == 0 and hits(index, "narwhal") == 1
        index.conn.execute("INSERT INTO entries_fts (entries_fts, rank) VALUES ('integrity-check', 1)")
    finally:
        index.conn.close()
