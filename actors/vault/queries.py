"""Reading the index: search pages and usage reports (the query connection, a worker thread).

Both start from the catalogue (:func:`load_catalogue`): every transcript's facts, the
bindings, and each transcript's :class:`~actors.vault.attribution.Place`. Filters on
repo or worktree become sets of transcript ids; agent filters are columns.

Search: FTS5 ``MATCH`` over ``entries_fts``, newest rows first (``rowid DESC``: row
ids grow as lines are read, and files are read oldest first), keyset-paged: a cursor
is ``<generation>.<last row id>``, so rows appended since the first page never shift
the next one; a cursor of another generation is refused (``indexdb``).

Usage: the counted rows (which copy of a request counts was settled when the rows
were written: ``indexdb.settle``) are summed in SQL per (transcript, model, local day,
long-prompt bucket), then priced in Python (prices are the table's, which may change
without a re-index). The bucket is how many of the price table's thresholds the
request's prompt is above, so each model's long-prompt tier applies to exactly its
requests.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal

from actors.vault.attribution import (
    Place,
    TranscriptFacts,
    Workspaces,
    attribute,
    matching_repos,
    matching_worktrees,
)
from actors.vault.indexdb import Binding
from actors.vault.preview import snippet, title
from actors.vault.pricing import PriceTable, TokenSums, cost, dollars
from actors.vault.terms import cut_final_dots, query_words
from orca.contracts import vault as contract
from orca.wire.errors import BadRequest, Conflict, NotFound


@dataclass
class Catalogue:
    facts: dict[int, TranscriptFacts]
    titles: dict[int, str]
    places: dict[int, Place]
    workspaces: Workspaces


def counters(conn: sqlite3.Connection) -> tuple[int, int]:
    rows = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    return int(rows.get("generation", 0)), int(rows.get("revision", 0))


def load_bindings(conn: sqlite3.Connection) -> list[Binding]:
    return [
        Binding(*row)
        for row in conn.execute(
            "SELECT agent, session_id, transcript_path, pane_key, tab_id, worktree_id,"
            " bound_at_ms FROM bindings"
        )
    ]


def load_catalogue(conn: sqlite3.Connection, workspaces: Workspaces) -> Catalogue:
    facts: dict[int, TranscriptFacts] = {}
    titles: dict[int, str] = {}
    for tid, agent, session, path, cwd, phash, raw_title in conn.execute(
        "SELECT id, agent, session_id, path, cwd, project_hash, title FROM transcripts"
    ):
        facts[tid] = TranscriptFacts(tid, agent, session, path, cwd, phash)
        titles[tid] = raw_title
    bindings = load_bindings(conn)
    by_session = {(b.agent, b.session_id): b for b in bindings}
    by_path = {b.transcript_path: b for b in bindings if b.transcript_path}
    places = {tid: attribute(f, by_session, by_path, workspaces) for tid, f in facts.items()}
    return Catalogue(facts, titles, places, workspaces)


def _scope(
    cat: Catalogue, repo: str | None, worktree: str | None, agent: str | None
) -> set[int] | None:
    """The transcripts the filters allow; None: all of them."""
    if repo is None and worktree is None and agent is None:
        return None
    allowed = set(cat.facts)
    if agent is not None:
        allowed = {t for t in allowed if cat.facts[t].agent == agent}
    if repo is not None:
        repos = matching_repos(repo, cat.workspaces, (p.repo_id for p in cat.places.values()))
        if not repos:
            raise NotFound(f"no repo named {repo!r} (see `orca repo ls`)")
        allowed = {t for t in allowed if cat.places[t].repo_id in repos}
    if worktree is not None:
        known = (p.worktree_id for p in cat.places.values())
        worktrees = matching_worktrees(worktree, cat.workspaces, known)
        if not worktrees:
            raise NotFound(f"no worktree named {worktree!r} (see `orca worktree ls`)")
        allowed = {t for t in allowed if cat.places[t].worktree_id in worktrees}
    return allowed


# -- search ---------------------------------------------------------------------------
def fts_query(query: str, raw: bool) -> tuple[str, list[str]]:
    """The MATCH expression and the words to find for snippets. The query is cut as the
    rows were (``terms``: ``walrus.`` looks for ``walrus``, as the index holds it)."""
    if not query.split():
        raise BadRequest("the search query is empty")
    words = query_words(query)
    if not words:
        raise BadRequest(f"no word to search for in {query!r} (punctuation alone is not indexed)")
    if raw:
        shown = [w.strip('"*()') for w in words if w.upper() not in ("AND", "OR", "NOT")]
        return cut_final_dots(query), shown
    return " ".join('"' + w.replace('"', '""') + '"' for w in words), words


def parse_cursor(cursor: str, generation: int) -> int:
    head, dot, tail = cursor.partition(".")
    if not dot or not head.isdigit() or not tail.isdigit():
        raise BadRequest(f"not a search cursor: {cursor!r}")
    if int(head) != generation:
        raise Conflict(
            f"the index changed since this cursor (generation {head}, now {generation}):"
            " run the search again"
        )
    return int(tail)


def search(
    conn: sqlite3.Connection, workspaces: Workspaces, args: contract.SearchArgs
) -> contract.SearchPage:
    generation, revision = counters(conn)
    expression, words = fts_query(args.query, args.raw)
    before = parse_cursor(args.cursor, generation) if args.cursor else None
    cat = load_catalogue(conn, workspaces)
    allowed = _scope(cat, args.repo, args.worktree, args.agent)
    hits: list[contract.SearchHit] = []
    last_id: int | None = None
    more = False
    if allowed is None or allowed:
        for entry_id, tid, ts, kind, text in _matches(conn, expression, before, allowed, args.raw):
            if len(hits) == args.limit:
                more = True
                break
            place = cat.places.get(tid, Place())
            f = cat.facts[tid]
            hits.append(
                contract.SearchHit(
                    entry_id=entry_id,
                    agent=f.agent,
                    session_id=f.session_id,
                    kind=kind,
                    ts_ms=ts,
                    snippet=snippet(text, words),
                    title=title(cat.titles.get(tid, "")),
                    transcript_path=f.path,
                    worktree_id=place.worktree_id,
                    repo_id=place.repo_id,
                    worktree=workspaces.worktree_label(place.worktree_id),
                    repo=workspaces.repo_label(place.repo_id),
                    pane_key=place.pane_key,
                    bound=place.bound,
                )
            )
            last_id = entry_id
    cursor = f"{generation}.{last_id}" if more and last_id is not None else None
    return contract.SearchPage(
        generation=generation, revision=revision, hits=hits, next_cursor=cursor
    )


def _matches(
    conn: sqlite3.Connection,
    expression: str,
    before: int | None,
    allowed: set[int] | None,
    raw: bool,
) -> Iterable[tuple[int, int, int, str, str]]:
    sql = (
        "SELECT e.id, e.transcript_id, e.ts, e.kind, e.text FROM entries_fts"
        " JOIN entries e ON e.id = entries_fts.rowid WHERE entries_fts MATCH ?"
    )
    params: list[object] = [expression]
    if before is not None:
        sql += " AND entries_fts.rowid < ?"
        params.append(before)
    if allowed is not None:
        sql += " AND e.transcript_id IN (SELECT value FROM json_each(?))"
        params.append("[" + ",".join(str(t) for t in sorted(allowed)) + "]")
    sql += " ORDER BY entries_fts.rowid DESC"
    try:
        yield from conn.execute(sql, params)
    except sqlite3.OperationalError as exc:
        if raw:  # the caller's FTS5 syntax (quoted words are always valid)
            raise BadRequest(f"not a search query FTS5 understands: {exc}") from None
        raise


# -- usage ----------------------------------------------------------------------------
# Counted rows only: which copy of a request counts is decided when rows are written
# (``indexdb.settle``), so a report is a plain sum.
_SETTLED = """
SELECT k.transcript_id, k.model, date(k.ts / 1000, 'unixepoch', 'localtime') AS day,
       {bucket} AS bucket, count(*), sum(k.input), sum(k.cache_write_5m),
       sum(k.cache_write_1h), sum(k.cache_read), sum(k.output), sum(k.reasoning)
FROM usage k
WHERE k.counted = 1 AND k.ts >= ? AND k.ts < ?
GROUP BY k.transcript_id, k.model, day, bucket
"""


@dataclass
class _Sum:
    requests: int = 0
    tokens: list[int] = field(
        default_factory=lambda: [0, 0, 0, 0, 0, 0]
    )  # in, 5m, 1h, read, out, reasoning
    cost: Decimal = Decimal(0)
    priced: bool = False
    unpriced_models: set[str] = field(default_factory=set)
    unpriced_tokens: int = 0
    sessions: set[tuple[str, str]] = field(default_factory=set)
    unbound: set[tuple[str, str]] = field(default_factory=set)

    def add(self, other: _Sum) -> None:
        self.requests += other.requests
        self.tokens = [a + b for a, b in zip(self.tokens, other.tokens, strict=True)]
        self.cost += other.cost
        self.priced = self.priced or other.priced
        self.unpriced_models |= other.unpriced_models
        self.unpriced_tokens += other.unpriced_tokens
        self.sessions |= other.sessions
        self.unbound |= other.unbound


def _day_bounds(since: str | None, until: str | None) -> tuple[int, int]:
    low = 0
    high = 2**62
    if since:
        low = int(
            datetime.combine(date.fromisoformat(since), datetime.min.time()).timestamp() * 1000
        )
    if until:
        end = date.fromisoformat(until) + timedelta(days=1)
        high = int(datetime.combine(end, datetime.min.time()).timestamp() * 1000)
    return low, high


def usage(
    conn: sqlite3.Connection,
    workspaces: Workspaces,
    prices: PriceTable,
    args: contract.UsageArgs,
) -> contract.UsageReport:
    generation, revision = counters(conn)
    cat = load_catalogue(conn, workspaces)
    allowed = _scope(cat, args.repo, args.worktree, args.agent)
    thresholds = prices.thresholds()
    bucket = (
        " + ".join(
            f"(k.input + k.cache_write_5m + k.cache_write_1h + k.cache_read > {t})"
            for t in thresholds
        )
        or "0"
    )
    try:
        low, high = _day_bounds(args.since, args.until)
    except ValueError as exc:
        raise BadRequest(f"not a date: {exc}") from None
    groups: dict[str, _Sum] = defaultdict(_Sum)
    meta: dict[str, tuple[str, str, str, str, str]] = {}
    for tid, model, day, level, n, *tokens in conn.execute(
        _SETTLED.format(bucket=bucket), (low, high)
    ):
        if allowed is not None and tid not in allowed:
            continue
        f = cat.facts.get(tid)
        if f is None:
            continue
        place = cat.places.get(tid, Place())
        key, label = _group(args.by, f, place, day, model, cat)
        part = _priced(prices, thresholds, model, level, n, tokens)
        session = (f.agent, f.session_id or f.path)
        part.sessions.add(session)
        if not place.bound:
            part.unbound.add(session)
        groups[key].add(part)
        meta.setdefault(key, (label, f.agent, place.pane_key, place.worktree_id, place.repo_id))
    rows = [
        _row(k, groups[k], meta[k], args.by)
        for k in sorted(groups, key=lambda k: _order(args.by, k, groups[k]))
    ]
    total = _Sum()
    for part in groups.values():
        total.add(part)
    return contract.UsageReport(
        generation=generation,
        revision=revision,
        by=args.by,
        rows=rows,
        total=_row("total", total, ("total", "", "", "", ""), "total"),
        prices=contract.Prices(
            source=prices.source,
            read=prices.read,
            files=list(prices.files),
            errors=list(prices.errors),
        ),
    )


def _priced(
    prices: PriceTable, thresholds: list[int], model: str, level: int, n: int, tokens: list[int]
) -> _Sum:
    part = _Sum(requests=n, tokens=[int(t or 0) for t in tokens])
    price = prices.lookup(model)
    if price is None:
        part.unpriced_models.add(model or "(no model)")
        part.unpriced_tokens = sum(part.tokens[:5])
        return part
    above = price.long_above is not None and level > thresholds.index(price.long_above)
    i, w5, w1, r, o = part.tokens[:5]
    part.cost = cost(price.rates_for(above), TokenSums(i, w5, w1, r, o))
    part.priced = True
    return part


def _group(
    by: str, f: TranscriptFacts, place: Place, day: str, model: str, cat: Catalogue
) -> tuple[str, str]:
    if by == "agent":
        return f.agent, f.agent
    if by == "session":
        key = f"{f.agent}:{f.session_id or f.path}"
        return key, title(cat.titles.get(f.id, "")) or f.session_id or f.path
    if by == "pane":
        return (place.pane_key, place.pane_key) if place.pane_key else ("", "(no pane: unbound)")
    if by == "worktree":
        return place.worktree_id, cat.workspaces.worktree_label(place.worktree_id)
    if by == "repo":
        return place.repo_id, cat.workspaces.repo_label(place.repo_id)
    if by == "day":
        return day, day
    return model, model or "(no model)"


def _order(by: str, key: str, part: _Sum) -> tuple[object, ...]:
    if by == "day":
        return (key,)
    return (-(part.cost if part.priced else Decimal(0)), -sum(part.tokens[:5]), key)


def _row(key: str, part: _Sum, meta: tuple[str, str, str, str, str], by: str) -> contract.UsageRow:
    label, agent, pane_key, worktree_id, repo_id = meta
    i, w5, w1, r, o, reasoning = part.tokens
    per_session = by in ("session", "pane")
    return contract.UsageRow(
        key=key,
        label=label,
        requests=part.requests,
        input_tokens=i,
        cache_write_5m_tokens=w5,
        cache_write_1h_tokens=w1,
        cache_read_tokens=r,
        output_tokens=o,
        reasoning_tokens=reasoning,
        total_tokens=i + w5 + w1 + r + o,
        cost_usd=dollars(part.cost) if part.priced else None,
        unpriced_models=sorted(part.unpriced_models),
        unpriced_tokens=part.unpriced_tokens,
        sessions=len(part.sessions),
        unbound_sessions=len(part.unbound),
        agent=agent if by in ("session", "pane", "agent") else "",
        pane_key=pane_key if per_session else "",
        worktree_id=worktree_id if per_session or by == "worktree" else "",
        repo_id=repo_id if per_session or by in ("worktree", "repo") else "",
    )
