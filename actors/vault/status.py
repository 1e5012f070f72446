"""``vault.status``: what the index holds and how healthy it is (reader connection)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from actors.vault.attribution import Workspaces
from actors.vault.config import VaultConfig
from actors.vault.discovery import transcript_dirs
from actors.vault.queries import counters, load_catalogue
from orca.contracts import vault as contract

# Files with errors listed in one status (the count is complete).
MAX_ERRORS_LISTED = 50


def _file_bytes(path: Path | None) -> int:
    if path is None:
        return 0
    total = 0
    for suffix in ("", "-wal", "-shm"):
        try:
            total += os.stat(f"{path}{suffix}").st_size
        except OSError:
            continue
    return total


def agent_directories(config: VaultConfig) -> list[contract.AgentDirectories]:
    """Per agent, the directories looked in (under each root) and those that exist."""
    out = []
    for agent, roots in config.roots.items():
        looked = [d for root in roots for d in transcript_dirs(agent, root)]
        out.append(
            contract.AgentDirectories(
                agent=agent,
                looked_in=looked,
                found=[d for d in looked if os.path.isdir(d)],
                none_named=config.no_roots.get(agent, ""),
            )
        )
    return out


def read_status(
    conn: sqlite3.Connection,
    path: Path | None,
    workspaces: Workspaces,
    config: VaultConfig,
    scans: int,
    last_scan_ms: int,
) -> contract.VaultStatus:
    generation, revision = counters(conn)
    (transcripts, entries, text, evicted, bad, skipped, pending) = conn.execute(
        "SELECT count(*), coalesce(sum(entries), 0), coalesce(sum(text_bytes), 0),"
        " coalesce(sum(text_evicted), 0), coalesce(sum(bad_lines), 0),"
        " coalesce(sum(skipped_lines), 0), coalesce(sum(size > offset + 0 AND mid_line = 0 AND error = ''), 0)"
        " FROM transcripts"
    ).fetchone()
    usage_rows = conn.execute("SELECT count(*) FROM usage").fetchone()[0]
    search_pending = conn.execute(
        "SELECT count(*) FROM entries"
        " WHERE id > (SELECT coalesce(max(value), 0) FROM meta WHERE key = 'text_upto')"
    ).fetchone()[0]
    bindings = conn.execute("SELECT count(*) FROM bindings").fetchone()[0]
    errors = [
        contract.FileError(path=p, agent=a, error=e)
        for p, a, e in conn.execute(
            "SELECT path, agent, error FROM transcripts WHERE error != '' ORDER BY path LIMIT ?",
            (MAX_ERRORS_LISTED,),
        )
    ]
    catalogue = load_catalogue(conn, workspaces)
    unbound = sum(1 for place in catalogue.places.values() if not place.bound)
    return contract.VaultStatus(
        generation=generation,
        revision=revision,
        transcripts=transcripts,
        entries=entries,
        text_bytes=text,
        usage_rows=usage_rows,
        search_pending=search_pending,
        evicted_transcripts=evicted,
        bad_lines=bad,
        skipped_lines=skipped,
        pending_files=pending,
        db_bytes=_file_bytes(path),
        bindings=bindings,
        unbound_transcripts=unbound,
        roots=config.roots,
        budgets=contract.Budgets(
            max_entries=config.max_entries, max_text_bytes=config.max_text_bytes
        ),
        errors=errors,
        last_scan_ms=last_scan_ms,
        scans=scans,
        directories=agent_directories(config),
    )
