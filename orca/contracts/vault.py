"""The ``vault`` wire contract: searching every agent's transcripts, and what they cost.

The vault owns one rebuildable SQLite index (``data/vault/index.sqlite3``) of the
transcripts Claude Code, Codex and Gemini CLI write in their own directories; it
never copies a conversation into Orca's state (seed 02 §11). Sessions are tied to the
panes they ran in by hooks' bindings (``agentSession.bound``: the hook payloads'
``session_id`` and ``transcript_path``), so a row's pane, worktree and repo are known
exactly; a transcript no binding names is attributed by its working directory and
marked ``bound: false`` ("unbound").

Ops (args → result; camelCase on the wire):

``vault.search`` {query, repo?, worktree?, agent?, limit=20, cursor?, raw=false}
    → SearchPage {generation, revision, hits: [SearchHit], nextCursor}
    Full-text search (FTS5, ``unicode61`` with ``_ . - /`` inside tokens: ``src/app.py``
    is one word; full stops that end a word are not part of it, in rows and queries
    alike: ``walrus.`` is ``walrus``). ``query``'s words must all occur (each is matched
    as a whole token, quoted); ``raw`` passes FTS5 query syntax through (``fix* NOT
    test``). Newest rows first. ``repo``/``worktree`` take an id or a display name
    (``worktree`` also a directory); ``agent`` is ``claude | codex | gemini``. Only what
    a hit shows is searched: a hit's ``snippet`` is the visible text around the match
    (hidden blocks removed, and never indexed; at most 160 characters); tool outputs
    are indexed cut at 2,000 characters per row.
    ``nextCursor`` (null on the last page) continues the same search; it is tied to
    the index ``generation`` and refused (``conflict``) once rows were renumbered or
    dropped (a transcript replaced or truncated, text evicted, a rebuild): search again.
    Errors: ``bad_request`` (empty or over-long query, a query of punctuation only,
    FTS5 syntax in raw mode, bad cursor, unknown agent), ``not_found`` (no such repo
    or worktree), ``conflict``.
``vault.usage`` {by="agent", repo?, worktree?, agent?, since?, until?}
    → UsageReport {generation, revision, by, rows: [UsageRow], total: UsageRow, prices}
    Tokens and cost grouped ``by`` ``agent`` (claude/codex/gemini), ``session``,
    ``pane``, ``worktree``, ``repo``, ``day`` (local date) or ``model``; ``since`` and
    ``until`` are local dates (YYYY-MM-DD, both included). Counting rules: a request
    written several times (Claude streams one response as several lines; resumed and
    forked sessions replay their history) is counted once, its largest copy (Claude:
    by message id + request id; Codex: by the cumulative count a delta ends at;
    Gemini: by message id); a sidechain copy of a main-chain message is dropped;
    cache writes cost 1.25x (5 minutes) or 2x (1 hour) the input price, cache reads
    0.1x, unless the price table says otherwise; input that includes cached tokens
    (Codex, Gemini) is counted without them. ``costUsd`` is the priced part (null
    when nothing is priced); ``unpricedModels`` names models the price table lacks,
    whose tokens are counted but never costed at $0. ``sessions``/``unboundSessions``
    say how many sessions make up a row and how many of them no binding names.
``vault.status`` {} → VaultStatus: counters, roots, budgets, files with errors, and
    per agent the directories its transcripts are looked for in and which of them
    exist (``directories``; an agent with no root says why none is named).
``vault.rebuild`` {} → Rebuilt {generation}: drop the index and index everything
    again (local only, never relayed to another machine).

Events: ``vault.changed`` {generation, revision} after a scan step committed rows (at
most a few a second): readers that show usage re-ask then.

Remote hosts: the index stays on its host. Another machine asks ``vault.search``,
``vault.usage``, ``vault.status`` through that host's gateway, read-only keys
included, only when the host allows it (``gateway.toml`` ``[gateway] share_vault =
true``; off by default).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from orca.contracts.base import Args, Contract, NoArgs, Payload
from orca.wire.errors import BadRequest, Conflict, NotFound, Unavailable

AgentName = Literal["claude", "codex", "gemini"]
UsageBy = Literal["agent", "session", "pane", "worktree", "repo", "day", "model"]
USAGE_BY: tuple[str, ...] = ("agent", "session", "pane", "worktree", "repo", "day", "model")
MAX_QUERY_CHARS = 512
MAX_SEARCH_LIMIT = 200
_Date = Annotated[str, msgspec.Meta(pattern=r"^\d{4}-\d{2}-\d{2}$")]


class SearchArgs(Args, frozen=True, kw_only=True):
    query: Annotated[str, msgspec.Meta(max_length=MAX_QUERY_CHARS)]
    repo: str | None = None
    worktree: str | None = None
    agent: AgentName | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=MAX_SEARCH_LIMIT)] = 20
    cursor: str | None = None
    raw: bool = False


class SearchHit(Payload, frozen=True, kw_only=True):
    entry_id: int
    agent: str
    session_id: str
    kind: str  # user | assistant | tool_use | tool_result | summary
    ts_ms: int
    snippet: str
    title: str  # the session's first prompt, filtered and cut
    transcript_path: str
    worktree_id: str
    repo_id: str
    worktree: str  # label
    repo: str  # label
    pane_key: str
    bound: bool


class SearchPage(Payload, frozen=True, kw_only=True):
    generation: int
    revision: int
    hits: list[SearchHit]
    next_cursor: str | None = None


class UsageArgs(Args, frozen=True, kw_only=True):
    by: UsageBy = "agent"
    repo: str | None = None
    worktree: str | None = None
    agent: AgentName | None = None
    since: _Date | None = None
    until: _Date | None = None


class UsageRow(Payload, frozen=True, kw_only=True):
    key: str
    label: str
    requests: int
    input_tokens: int
    cache_write_5m_tokens: int
    cache_write_1h_tokens: int
    cache_read_tokens: int
    output_tokens: int
    reasoning_tokens: int
    total_tokens: int
    cost_usd: float | None
    unpriced_models: list[str]
    unpriced_tokens: int
    sessions: int
    unbound_sessions: int
    # by=session and by=pane rows: where the session ran.
    agent: str = ""
    pane_key: str = ""
    worktree_id: str = ""
    repo_id: str = ""


class Prices(Payload, frozen=True, kw_only=True):
    source: str
    read: str
    files: list[str]
    errors: list[str]


class UsageReport(Payload, frozen=True, kw_only=True):
    generation: int
    revision: int
    by: str
    rows: list[UsageRow]
    total: UsageRow
    prices: Prices


class FileError(Payload, frozen=True, kw_only=True):
    path: str
    agent: str
    error: str


class Budgets(Payload, frozen=True, kw_only=True):
    max_entries: int
    max_text_bytes: int


class AgentDirectories(Payload, frozen=True, kw_only=True):
    """Where the vault looks for one agent's transcripts."""

    agent: str
    looked_in: list[str]  # the directories read under each of the agent's roots
    found: list[str]  # those of them that are directories now
    none_named: str = ""  # no root at all: why (ORCA_HOME isolates, a variable is empty)


class VaultStatus(Payload, frozen=True, kw_only=True):
    generation: int
    revision: int
    transcripts: int
    entries: int
    text_bytes: int
    usage_rows: int
    evicted_transcripts: int
    bad_lines: int
    skipped_lines: int
    # files whose last line is not finished: an agent writing it, or a file cut for good
    pending_files: int
    db_bytes: int
    bindings: int
    unbound_transcripts: int
    roots: dict[str, list[str]]
    budgets: Budgets
    errors: list[FileError]
    last_scan_ms: int
    scans: int
    # Absent from an older host's answer.
    directories: list[AgentDirectories] = msgspec.field(default_factory=list)
    # Rows read (their usage counted) but not yet in the full-text index: a search does
    # not find them yet. 0 once the scan's text indexing has caught up.
    search_pending: int = 0


class Rebuilt(Payload, frozen=True, kw_only=True):
    generation: int


class VaultChanged(Payload, frozen=True, kw_only=True):
    generation: int
    revision: int


CONTRACT = Contract("vault")
SEARCH = CONTRACT.op(
    "vault.search", SearchArgs, SearchPage, BadRequest, NotFound, Conflict, Unavailable,
    doc="full-text search over every agent's transcripts",
)  # fmt: skip
USAGE = CONTRACT.op(
    "vault.usage", UsageArgs, UsageReport, BadRequest, NotFound, Unavailable,
    doc="tokens and cost by agent, session, pane, worktree, repo, day or model",
)  # fmt: skip
STATUS = CONTRACT.op("vault.status", NoArgs, VaultStatus, Unavailable, doc="the index's health")
REBUILD = CONTRACT.op("vault.rebuild", NoArgs, Rebuilt, Unavailable, doc="re-index from scratch")
CHANGED = CONTRACT.event("vault.changed", VaultChanged, doc="rows were committed")
