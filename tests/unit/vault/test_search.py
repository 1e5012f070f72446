"""Searching the index: tokens, order, paging, filters, snippets (queries.py, preview.py)."""

from __future__ import annotations

import pytest
from support.vault import claude_path, claude_tool_result, claude_user, write_jsonl

from actors.vault.attribution import Workspaces
from actors.vault.preview import snippet, title, visible
from actors.vault.queries import search
from orca.contracts import vault as contract
from orca.wire.errors import BadRequest, NotFound

CWD = "/work/r/alpha"
WS = Workspaces.build([("r1", CWD, "alpha")], [])


def find(index: object, query: str, **kw: object) -> contract.SearchPage:
    return search(index.conn, WS, contract.SearchArgs(query=query, **kw))  # type: ignore[attr-defined, arg-type]


@pytest.fixture
def filled(index: object) -> object:
    root = index.agent_root["claude"]  # type: ignore[attr-defined]
    write_jsonl(claude_path(root, CWD, "S1"), [claude_user("S1", CWD, f"prompt {n} about fix-login in src/app.py", second=n) for n in range(7)])
    write_jsonl(claude_path(root, "/elsewhere", "S2"), [
        claude_user("S2", "/elsewhere", "<system-reminder>secret reminder text</system-reminder> look at TOKEN_LIMIT"),
        claude_tool_result("S2", "/elsewhere", "Traceback: ValueError in src/app.py line 3"),
    ])  # fmt: skip
    index.scan()  # type: ignore[attr-defined]
    return index


def test_paths_and_dashed_names_are_single_tokens(filled: object) -> None:
    """``src/app.py`` and ``fix-login`` match whole; a part of them does not."""
    assert len(find(filled, "src/app.py", limit=50).hits) == 8
    assert len(find(filled, "fix-login", limit=50).hits) == 7
    assert find(filled, "app").hits == []
    assert len(find(filled, "TOKEN_LIMIT").hits) == 1


def test_pages_run_newest_first_and_appends_do_not_shift_them(filled: object) -> None:
    first = find(filled, "fix-login", limit=3)
    assert [h.snippet.split()[1] for h in first.hits] == ["6", "5", "4"]
    assert first.next_cursor is not None
    root = filled.agent_root["claude"]  # type: ignore[attr-defined]
    write_jsonl(claude_path(root, CWD, "S3"), [claude_user("S3", CWD, "prompt 99 fix-login")])
    filled.scan()  # type: ignore[attr-defined]
    second = find(filled, "fix-login", limit=3, cursor=first.next_cursor)
    assert [h.snippet.split()[1] for h in second.hits] == ["3", "2", "1"]
    last = find(filled, "fix-login", limit=3, cursor=second.next_cursor)
    assert [h.snippet.split()[1] for h in last.hits] == ["0"] and last.next_cursor is None


def test_filters_and_attribution(filled: object) -> None:
    hits = find(filled, "src/app.py", limit=50, repo="alpha").hits
    assert len(hits) == 7 and all(h.worktree_id == f"r1::{CWD}" and not h.bound for h in hits)
    assert find(filled, "src/app.py", agent="codex").hits == []
    with pytest.raises(NotFound):
        find(filled, "x", repo="nope")


def test_bad_queries_are_the_callers_fault(filled: object) -> None:
    with pytest.raises(BadRequest):
        find(filled, "   ")
    with pytest.raises(BadRequest):
        find(filled, '"unbalanced', raw=True)
    with pytest.raises(BadRequest):
        find(filled, "x", cursor="garbage")
    assert len(find(filled, "Traceback OR TOKEN_LIMIT", raw=True).hits) == 2
    with pytest.raises(BadRequest, match="no word to search for"):
        find(filled, "... !")


def test_a_word_only_a_hidden_block_holds_finds_nothing(filled: object) -> None:
    """What a hit shows is what was searched: a word inside a hidden block is not
    found (it was, and its hit showed no trace of it), the words around it are."""
    assert find(filled, "secret").hits == []
    [only] = find(filled, "Traceback OR reminder", raw=True).hits
    assert only.kind == "tool_result"
    [hit] = find(filled, "TOKEN_LIMIT").hits
    assert hit.snippet == "look at TOKEN_LIMIT"
    assert visible("a <command-name>/x</command-name> b\x1b[31m") == "a b [31m"
    assert title("<environment_context>cwd</environment_context>" + "w" * 200).endswith("…")
    assert snippet("x " * 200 + "needle" + " y" * 200, ["NEEDLE"]).count("needle") == 1


def test_a_word_ending_a_sentence_is_found_and_paths_stay_whole(index: object) -> None:
    """A sentence's final full stop (before a quote or a bracket too) is not part of
    its last word, on either side; a full stop inside a path or a name still is."""
    root = index.agent_root["claude"]  # type: ignore[attr-defined]
    write_jsonl(claude_path(root, CWD, "S4"), [
        claude_user("S4", CWD, "The flaky test lives in the walrus.", second=1),
        claude_user("S4", CWD, 'Ask the narwhal.) Then "the orca." Wait...', second=2),
        claude_user("S4", CWD, "Edit app.py. Then src/app.py, then .gitignore and v1.2.3.", second=3),
    ])  # fmt: skip
    index.scan()  # type: ignore[attr-defined]

    def texts(query: str, raw: bool = False) -> list[str]:
        return [h.snippet for h in find(index, query, raw=raw).hits]

    assert texts("walrus") == texts("walrus.") == ["The flaky test lives in the walrus."]
    assert texts("walrus", raw=True) == texts('"walrus."', raw=True) == texts("walrus")
    assert len(texts("narwhal")) == len(texts("orca")) == len(texts("wait")) == 1
    assert len(texts("app.py")) == len(texts("src/app.py")) == len(texts(".gitignore")) == 1
    assert len(texts("v1.2.3")) == len(texts("v1.2.3.")) == 1
    assert texts("app") == texts("src") == texts("gitignore") == []
