"""``orca vault``: search every agent's transcripts, and what they cost.

    orca vault search QUERY... [--repo R] [--worktree W] [--agent A] [--limit N]
                      [--cursor C] [--raw] [--host H] [--json]
    orca vault usage [--by agent|session|pane|worktree|repo|day|model] [--repo R]
                     [--worktree W] [--agent A] [--since DATE] [--until DATE]
                     [--host H] [--json]
    orca vault status [--host H] [--json]
    orca vault rebuild

The vault actor answers (``orca/contracts/vault.py``); ``--host`` asks a remote host's
vault through its gateway, if that host shares it (``share_vault``, docs/remote.md).
Rows whose session no hook bound to a pane are attributed by their working directory
and say so: ``(unbound)`` in tables, ``"bound": false`` in JSON. A model the price
table lacks shows ``unpriced``, never $0.

Import-light: the contract and the client are imported inside the commands.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

from orca.cli.output import EXIT_OK, EXIT_USAGE, fail, print_json, print_table

if TYPE_CHECKING:
    from orca.contracts.base import Op
    from orca.contracts.vault import AgentDirectories, UsageRow

USAGE_BY = ("agent", "session", "pane", "worktree", "repo", "day", "model")
AGENTS = ("claude", "codex", "gemini")
# A search or usage report over a large index takes a few hundred ms; leave room.
VAULT_TIMEOUT_S = 15.0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    vault = sub.add_parser("vault", help="search agents' transcripts; tokens and cost")
    cmds = vault.add_subparsers(dest="vault_command", metavar="COMMAND")

    def scoped(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--repo", help="only this repo (its name or id)")
        parser.add_argument("--worktree", help="only this worktree (its name, directory or id)")
        parser.add_argument("--agent", choices=AGENTS, help="only this agent's transcripts")
        parser.add_argument("--host", help="ask this remote host (`orca host add`)")
        parser.add_argument("--json", action="store_true", help="print JSON")

    search = cmds.add_parser("search", help="full-text search, newest first")
    search.add_argument("query", nargs="+", metavar="QUERY", help="words that must all occur")
    scoped(search)
    search.add_argument("--limit", type=int, default=20, help="hits per page (1-200, default 20)")
    search.add_argument("--cursor", help="the next page of an earlier search (its nextCursor)")
    search.add_argument("--raw", action="store_true", help="QUERY is FTS5 syntax (fix* NOT test)")
    search.set_defaults(func=cmd_search)

    usage = cmds.add_parser("usage", help="tokens and cost")
    usage.add_argument(
        "--by", choices=USAGE_BY, default="agent", help="group rows by (default agent)"
    )
    scoped(usage)
    usage.add_argument("--since", metavar="YYYY-MM-DD", help="from this local date on")
    usage.add_argument("--until", metavar="YYYY-MM-DD", help="up to this local date, included")
    usage.set_defaults(func=cmd_usage)

    status = cmds.add_parser("status", help="what the index holds, files it cannot read")
    status.add_argument("--host", help="ask this remote host")
    status.add_argument("--json", action="store_true", help="print JSON")
    status.set_defaults(func=cmd_status)

    rebuild = cmds.add_parser("rebuild", help="drop the index and read every transcript again")
    rebuild.set_defaults(func=cmd_rebuild)


def _ask(op: Op[Any, Any], args: Any, host: str | None) -> Any:
    """``op`` on the local vault, or on ``host``'s through its gateway."""
    if host is None:
        from orca.client.sync import invoke

        return invoke(op, args, timeout=VAULT_TIMEOUT_S)
    from orca.paths import resolve_paths
    from orca.remote.client import remote_invoke
    from orca.remote.hosts import load_hosts
    from orca.wire.errors import NotFound

    paths = resolve_paths()
    known = load_hosts(paths)
    if host not in known:
        raise NotFound(f"no remote host named {host!r} (see `orca host ls`)")
    return remote_invoke(known[host], op, args, timeout=VAULT_TIMEOUT_S, paths=paths)


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ms / 1000)) if ms else "-"


def _where(label: str, bound: bool, attributed: bool) -> str:
    if not attributed:
        return "(unattributed)"
    return label if bound else f"{label} (unbound)"


def cmd_search(args: argparse.Namespace) -> int:
    from msgspec import to_builtins

    from orca.contracts import vault

    if not 1 <= args.limit <= vault.MAX_SEARCH_LIMIT:
        return fail(f"--limit must be between 1 and {vault.MAX_SEARCH_LIMIT}", EXIT_USAGE)
    request = vault.SearchArgs(
        query=" ".join(args.query),
        repo=args.repo,
        worktree=args.worktree,
        agent=args.agent,
        limit=args.limit,
        cursor=args.cursor,
        raw=args.raw,
    )
    page: vault.SearchPage = _ask(vault.SEARCH, request, args.host)
    if args.json:
        print_json(
            "hits",
            to_builtins(page.hits),
            {
                "nextCursor": page.next_cursor,
                "generation": page.generation,
                "host": args.host or "local",
            },
        )
        return EXIT_OK
    rows = [
        (
            _when(h.ts_ms),
            h.agent,
            _where(h.worktree, h.bound, bool(h.worktree_id)),
            h.kind,
            h.snippet,
        )
        for h in page.hits
    ]
    if not rows:
        print("no matches")
        return EXIT_OK
    print_table(("WHEN", "AGENT", "WORKTREE", "KIND", "TEXT"), rows)
    if page.next_cursor:
        words = " ".join(args.query)
        print(f"more: orca vault search {words!r} --cursor {page.next_cursor}", file=sys.stderr)
    return EXIT_OK


def _count(n: int) -> str:
    if n < 10_000:
        return str(n)
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


def _cost(row: UsageRow) -> str:
    """``$1.23``; ``unpriced`` when nothing of the row has a price; both when part has."""
    if row.cost_usd is None:
        return "unpriced" if row.unpriced_models else "$0"
    text = f"${row.cost_usd:.4f}" if row.cost_usd < 1 else f"${row.cost_usd:,.2f}"
    return f"{text} + unpriced" if row.unpriced_models else text


def _sessions(row: UsageRow) -> str:
    if not row.unbound_sessions:
        return str(row.sessions)
    return f"{row.sessions} ({row.unbound_sessions} unbound)"


def cmd_usage(args: argparse.Namespace) -> int:
    from msgspec import to_builtins

    from orca.contracts import vault

    request = vault.UsageArgs(
        by=args.by,
        repo=args.repo,
        worktree=args.worktree,
        agent=args.agent,
        since=args.since,
        until=args.until,
    )
    report: vault.UsageReport = _ask(vault.USAGE, request, args.host)
    if args.json:
        print_json(
            "rows",
            to_builtins(report.rows),
            {
                "total": to_builtins(report.total),
                "prices": to_builtins(report.prices),
                "host": args.host or "local",
            },
        )
        return EXIT_OK
    header = (
        args.by.upper(),
        "SESSIONS",
        "REQUESTS",
        "INPUT",
        "CACHE-W",
        "CACHE-R",
        "OUTPUT",
        "COST",
    )

    def line(row: UsageRow, total: bool = False) -> tuple[Any, ...]:
        label = row.label
        if args.by == "session" and row.unbound_sessions and not total:
            label = f"{label} (unbound)"
        return (
            label,
            _sessions(row),
            row.requests,
            _count(row.input_tokens),
            _count(row.cache_write_5m_tokens + row.cache_write_1h_tokens),
            _count(row.cache_read_tokens),
            _count(row.output_tokens),
            _cost(row),
        )

    if not report.rows:
        print("no usage recorded")
        return EXIT_OK
    print_table(header, [*[line(r) for r in report.rows], line(report.total, total=True)])
    unpriced = report.total.unpriced_models
    if unpriced:
        print(f"unpriced (no price in the table): {', '.join(unpriced)}", file=sys.stderr)
    if report.prices.errors:
        for error in report.prices.errors:
            print(f"price table: {error}", file=sys.stderr)
    return EXIT_OK


def _directories(looked: AgentDirectories | None, roots: list[str]) -> str:
    """Where an agent's transcripts are read from, or where the vault looked for them."""
    if looked is None:  # an older host: its roots only
        return ", ".join(roots) or "no directory named"
    if looked.found:
        return ", ".join(looked.found)
    if looked.looked_in:
        return "no directory at " + " or ".join(looked.looked_in)
    return "no directory named" + (f" ({looked.none_named})" if looked.none_named else "")


def cmd_status(args: argparse.Namespace) -> int:
    from msgspec import to_builtins

    from orca.cli.output import human_bytes
    from orca.contracts import vault

    status: vault.VaultStatus = _ask(vault.STATUS, None, args.host)
    if args.json:
        print_json("vault", to_builtins(status))
        return EXIT_OK
    print(
        f"{status.transcripts} transcripts, {status.entries} rows ({human_bytes(status.text_bytes)}),"
        f" {status.usage_rows} usage rows; index {human_bytes(status.db_bytes)}"
    )
    print(
        f"bindings: {status.bindings}; unbound transcripts: {status.unbound_transcripts};"
        f" ending in an unfinished line: {status.pending_files};"
        f" text evicted (over the budget): {status.evicted_transcripts}"
    )
    print(f"damaged lines skipped: {status.bad_lines}; overlong lines skipped: {status.skipped_lines}")
    if status.search_pending:
        print(
            f"search: {status.search_pending} of {status.entries} rows still being indexed"
            " (usage already counts them)"
        )
    looked = {d.agent: d for d in status.directories}
    for agent, roots in status.roots.items():
        print(f"{agent}: {_directories(looked.get(agent), roots)}")
    for error in status.errors:
        print(f"cannot read {error.path}: {error.error}", file=sys.stderr)
    return EXIT_OK


def cmd_rebuild(args: argparse.Namespace) -> int:
    from orca.client.sync import invoke
    from orca.contracts import vault

    rebuilt = invoke(vault.REBUILD, timeout=VAULT_TIMEOUT_S)
    print(f"index dropped (generation {rebuilt.generation}); every transcript is being read again")
    return EXIT_OK
