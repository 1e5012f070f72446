"""Token and cost totals of all three agents, checked against totals computed by hand.

The transcripts hold every case the counting rules are about: a streamed Claude
response written twice (a partial copy first), a resumed session replaying a message,
a sidechain replaying a main-chain message under another request id (dropped) next to
a genuine sidechain request (counted), an old line without the cache-lifetime split,
a cut last line, a model no price table knows (unpriced, never $0); a Codex session
whose cumulative counts repeat, and a fork replaying its parent's history; a Gemini
message rewritten once its tokens arrived, and a prompt over the long-context threshold.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from support.vault import (
    claude_assistant,
    claude_path,
    claude_tool_result,
    claude_usage,
    claude_user,
    codex_agent,
    codex_meta,
    codex_path,
    codex_tokens,
    codex_turn,
    codex_user,
    gemini_header,
    gemini_path,
    gemini_reply,
    gemini_tokens,
    gemini_user,
    write_jsonl,
)

from actors.vault.attribution import Workspaces
from actors.vault.indexdb import Binding
from actors.vault.pricing import load_prices
from actors.vault.queries import usage
from orca.contracts import vault as contract

ALPHA = "/work/r/alpha"
BETA = "/work/r/beta"
PANE = "tab-1:8f14e45f-ceea-467f-a9f0-1f2a7a9d0c11"
WORKSPACES = Workspaces.build([("r1", ALPHA, "alpha"), ("r2", BETA, "beta")], [])


def write_fixtures(index: object) -> None:
    roots = index.agent_root  # type: ignore[attr-defined]
    c, x, g = roots["claude"], roots["codex"], roots["gemini"]
    sonnet = "claude-sonnet-4-5-20250929"
    m1_full = claude_assistant("C1", ALPHA, message_id="m1", request_id="r1", model=sonnet,
                               tool=("Bash", {"command": "pytest -x"}),
                               usage=claude_usage(100, 200, cache_5m=1000), second=3)  # fmt: skip
    write_jsonl(
        claude_path(c, ALPHA, "C1"),
        [
            claude_user("C1", ALPHA, "fix the login bug"),
            # streamed: a partial copy of m1/r1 first, then the whole one
            claude_assistant("C1", ALPHA, message_id="m1", request_id="r1", model=sonnet,
                             text="Looking", usage=claude_usage(100, 5, cache_5m=1000), second=2),
            m1_full,
            claude_tool_result("C1", ALPHA, "2 failed, 40 passed"),
            claude_assistant("C1", ALPHA, message_id="m2", request_id="r2", model=sonnet,
                             text="Fixed", usage=claude_usage(50, 300, cache_1h=2000, cache_read=10000), second=5),
            # an old line: no cache_creation split, so its writes are 5-minute ones
            claude_assistant("C1", ALPHA, message_id="m3", request_id="r3", model=sonnet,
                             text="Done", usage=claude_usage(20, 100, cache_5m=400, cache_read=5000, split=False), second=6),
            # a sidechain replaying the main chain's m2 under another request id: dropped
            claude_assistant("C1", ALPHA, message_id="m2", request_id="r9", model=sonnet,
                             text="Fixed", usage=claude_usage(50, 300, cache_1h=2000, cache_read=10000),
                             second=7, sidechain=True),
            # a genuine sidechain request: counted
            claude_assistant("C1", ALPHA, message_id="m4", request_id="r4", model=sonnet,
                             text="sub-agent answer", usage=claude_usage(30, 40), second=8, sidechain=True),
            claude_assistant("C1", ALPHA, message_id="m6", request_id="r6", model="claude-nonexistent-9",
                             text="?", usage=claude_usage(1000, 1000), second=9),
        ],
        tail=b'{"type":"assistant","sessionId":"C1","message":{"id":"m7","usage":{"input_tok',
    )  # fmt: skip
    # the session resumed in a new file: it replays m1/r1 and a partial copy of m2/r2
    # (the smaller copy: not the one counted), then one new request
    write_jsonl(
        claude_path(c, ALPHA, "C2"),
        [
            m1_full | {"sessionId": "C2"},
            claude_assistant("C2", ALPHA, message_id="m2", request_id="r2", model=sonnet,
                             text="Fixed", usage=claude_usage(50, 10, cache_1h=2000, cache_read=10000), second=5),
            claude_assistant("C2", ALPHA, message_id="m5", request_id="r5", model=sonnet,
                             text="again", usage=claude_usage(10, 10), second=10),
        ],
    )  # fmt: skip
    parent = [
        codex_meta("X1", ALPHA + "/sub"),
        codex_turn(ALPHA + "/sub", "gpt-5-codex"),
        codex_user("add a flag to the parser"),
        codex_tokens(1000, 200, 100, 40, second=4),
        codex_tokens(1000, 200, 100, 40, second=5),  # the same totals again: nothing new
        codex_agent("added --json"),
        codex_tokens(2500, 1200, 300, 90, second=6),
    ]
    write_jsonl(codex_path(x, "X1"), parent)
    # a fork: its file starts with the parent's lines, then its own request
    write_jsonl(
        codex_path(x, "X2"),
        [codex_meta("X2", ALPHA + "/sub", forked_from="X1"), *parent[1:],
         codex_tokens(3000, 1500, 350, 90, second=8)],
    )  # fmt: skip
    write_jsonl(
        gemini_path(g, BETA, "G1aaaaaaaa"),
        [
            gemini_header("G1aaaaaaaa", BETA),
            gemini_user("u1", "explain the build"),
            gemini_reply("g1", "It uses make", tokens=None),
            # the same message rewritten once its tokens arrived
            gemini_reply("g1", "It uses make", tokens=gemini_tokens(4000, 500, cached=1000, thoughts=200, tool=100)),
            gemini_reply("g2", "long answer", tokens=gemini_tokens(250_000, 1000), second=3),
        ],
    )  # fmt: skip


def report(index: object, by: str, **filters: str) -> contract.UsageReport:
    conn = index.conn  # type: ignore[attr-defined]
    return usage(conn, WORKSPACES, load_prices(None), contract.UsageArgs(by=by, **filters))  # type: ignore[arg-type]


@pytest.fixture
def filled(index: object) -> object:
    write_fixtures(index)
    index.scan()  # type: ignore[attr-defined]
    index.scanner.writer.bind(  # type: ignore[attr-defined]
        [Binding("claude", "C1", "", PANE, "tab-1", f"r1::{ALPHA}", 1)]
    )
    return index


def test_totals_per_agent_match_the_hand_computed_costs(filled: object) -> None:
    """Every agent's tokens and dollars equal the sums worked out below."""
    rows = {row.key: row for row in report(filled, "agent").rows}
    claude, codex, gemini = rows["claude"], rows["codex"], rows["gemini"]
    # Claude, claude-sonnet-4-5 ($3 in, $15 out, 5m write $3.75, 1h write $6, read $0.30 /MTok):
    #   m1  100*3 + 200*15 + 1000*3.75                 =  7050   (partial copy and C2's replay not counted)
    #   m2   50*3 + 300*15 + 2000*6 + 10000*0.30       = 19650   (its sidechain replay dropped,
    #                                                              C2's smaller copy not counted)
    #   m3   20*3 + 100*15 +  400*3.75 + 5000*0.30     =  4560   (no split: writes are 5-minute)
    #   m4   30*3 +  40*15                             =   690   (a genuine sidechain request)
    #   m5   10*3 +  10*15                             =   180   (C2's own request)
    #                                          total  = 32130 µ$ = $0.032130
    assert claude.cost_usd == pytest.approx(0.032130, abs=1e-12)
    assert (claude.input_tokens, claude.output_tokens) == (100 + 50 + 20 + 30 + 10 + 1000, 200 + 300 + 100 + 40 + 10 + 1000)
    assert (claude.cache_write_5m_tokens, claude.cache_write_1h_tokens) == (1000 + 400, 2000)
    assert claude.cache_read_tokens == 10000 + 5000
    assert claude.requests == 6  # m1 m2 m3 m4 m5 m6
    # m6's model is in no price table: its 2000 tokens are counted, never priced at $0
    assert claude.unpriced_models == ["claude-nonexistent-9"]
    assert claude.unpriced_tokens == 2000
    # Codex, gpt-5-codex ($1.25 in, $0.125 cached, $10 out; input includes cached):
    #   1st   (1000-200)*1.25 + 200*0.125 + 100*10     = 1000 + 25 + 1000  = 2025
    #   2nd   (1500-1000)*1.25 + 1000*0.125 + 200*10   =  625 + 125 + 2000 = 2750
    #   fork  (500-300)*1.25 + 300*0.125 + 50*10       =  250 + 37.5 + 500 = 787.5
    #                                          total  = 5562.5 µ$ = $0.0055625
    assert codex.cost_usd == pytest.approx(0.0055625, abs=1e-12)
    assert (codex.input_tokens, codex.cache_read_tokens) == (800 + 500 + 200, 200 + 1000 + 300)
    assert (codex.output_tokens, codex.reasoning_tokens) == (100 + 200 + 50, 40 + 50)
    assert codex.requests == 3 and codex.unpriced_models == []
    # Gemini, gemini-2.5-pro ($1.25 in, $0.125 cached, $10 out; over 200K: $2.50 / $15):
    #   g1  (4000-1000+100 tool)*1.25 + 1000*0.125 + (500+200 thoughts)*10 = 3875 + 125 + 7000 = 11000
    #   g2  250000 > 200K: 250000*2.50 + 1000*15                           = 625000 + 15000    = 640000
    #                                          total  = 651000 µ$ = $0.651
    assert gemini.cost_usd == pytest.approx(0.651, abs=1e-12)
    assert (gemini.input_tokens, gemini.cache_read_tokens, gemini.output_tokens) == (3100 + 250_000, 1000, 700 + 1000)
    assert gemini.requests == 2
    total = report(filled, "agent").total
    # 32130 + 5562.5 + 651000 = 688692.5 µ$
    assert total.cost_usd == pytest.approx(0.6886925, abs=1e-12)
    assert Decimal(str(total.cost_usd)) == Decimal("0.6886925")


def test_repos_and_worktrees_are_bound_or_unbound_as_the_bindings_say(filled: object) -> None:
    """C1 is bound to its pane; C2, the Codex sessions (by cwd) and Gemini (by project hash)
    are attributed by their directories and counted as unbound."""
    rows = {row.key: row for row in report(filled, "repo").rows}
    assert set(rows) == {"r1", "r2"}
    alpha, beta = rows["r1"], rows["r2"]
    assert alpha.label == "alpha" and beta.label == "beta"
    # C1 + C2 + X1 + X2 in alpha: only C1 is bound
    assert (alpha.sessions, alpha.unbound_sessions) == (4, 3)
    assert (beta.sessions, beta.unbound_sessions) == (1, 1)
    assert alpha.cost_usd == pytest.approx(0.032130 + 0.0055625, abs=1e-12)
    panes = {row.key: row for row in report(filled, "pane").rows}
    assert panes[PANE].cost_usd == pytest.approx(0.032130 - 0.000180, abs=1e-12)  # C1 without C2's m5
    assert panes[""].label == "(no pane: unbound)"


def test_one_day_and_filters(filled: object) -> None:
    """Every request was at noon UTC on 2026-03-10; filters narrow by agent, repo, date."""
    days = report(filled, "day").rows
    assert [d.key for d in days] == ["2026-03-10"]
    assert report(filled, "day", since="2026-03-11").rows == []
    only = report(filled, "model", agent="codex").rows
    assert [r.key for r in only] == ["gpt-5-codex"]
    beta = report(filled, "agent", repo="beta").rows
    assert [r.key for r in beta] == ["gemini"]


def test_the_cut_last_line_is_read_once_it_is_whole(filled: object) -> None:
    """The truncated line was left unread; completed, it counts (and nothing twice)."""
    index = filled
    path = claude_path(index.agent_root["claude"], ALPHA, "C1")  # type: ignore[attr-defined]
    with path.open("ab") as fh:
        fh.write(b'ens":7,"output_tokens":3},"model":"claude-sonnet-4-5","role":"assistant","content":[]},"requestId":"r7"}\n')
    index.scan()  # type: ignore[attr-defined]
    claude = {r.key: r for r in report(index, "agent").rows}["claude"]
    # + m7: 7*3 + 3*15 = 66 µ$
    assert claude.cost_usd == pytest.approx(0.032130 + 0.000066, abs=1e-12)
    assert claude.requests == 7


def test_when_a_copy_goes_the_next_best_copy_counts(filled: object) -> None:
    """Which copy counts is decided again when rows go: with C1's file deleted, C2's
    replayed m1 and its smaller copy of m2 are the only ones left, and count."""
    index = filled
    claude_path(index.agent_root["claude"], ALPHA, "C1").unlink()  # type: ignore[attr-defined]
    index.scan()  # type: ignore[attr-defined]
    claude = {r.key: r for r in report(index, "agent").rows}["claude"]
    #   m1 (C2's replay)  100*3 + 200*15 + 1000*3.75          =  7050
    #   m2 (C2's copy)     50*3 +  10*15 + 2000*6 + 10000*0.30 = 15300
    #   m5                 10*3 +  10*15                       =   180
    #                                                   total  = 22530 µ$
    assert claude.cost_usd == pytest.approx(0.022530, abs=1e-12)
    assert claude.requests == 3 and claude.unpriced_models == []


def test_two_codex_sessions_with_equal_totals_both_count(index: object) -> None:
    """Issue 40 item 8: a second Codex session whose cumulative totals equal an earlier
    session's was dropped as if it were a fork's replay; the key names the lineage
    (the session, or the one it was forked from), so only a fork's replay is one copy."""
    x = index.agent_root["codex"]  # type: ignore[attr-defined]
    for sid in ("Y1", "Y2"):
        write_jsonl(
            codex_path(x, sid),
            [codex_meta(sid, ALPHA), codex_turn(ALPHA, "gpt-5-codex"), codex_user("same"),
             codex_tokens(1000, 200, 100, 40, second=4)],
        )  # fmt: skip
    index.scan()  # type: ignore[attr-defined]
    rows = {row.key: row for row in report(index, "session").rows}
    assert {k: r.requests for k, r in rows.items()} == {"codex:Y1": 1, "codex:Y2": 1}
