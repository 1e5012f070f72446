"""Which copy of a request counts: decided when usage rows are written or dropped.

One billed request may be in the index several times: Claude Code writes a streamed
response as several lines, a resumed session's new file replays earlier messages, a
Codex fork starts with its parent's history, a sidechain may replay its parent's
messages. Every usage row carries ``counted``; after any write or drop, every group of
rows it touched (agent, message key) is decided again, in the same transaction, by
these rules (as public usage tools learnt them on Claude Code's files, ccusage
github.com/ccusage/ccusage: message id + request id dedupe, pull 29; the streamed
copies' first one is often partial, so keep the largest, issues 705 and 888; sidechain
replays of parent messages, pull 1155):

1. one copy per request: among rows with the same (agent, message key, request key),
   the main-chain copy if there is one, else the largest (``total``), else the first;
2. a sidechain copy whose message key a main-chain row also has is a replay: not counted;
3. rows without a message key always count.

So a usage report is a plain sum of counted rows, and the answer does not depend on the
order files were read in.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

# Keys settled per query (SQLite's bound-parameter limit is 32766; far below it).
SETTLE_CHUNK = 500


def by_agent(rows: Iterable[tuple[str, str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for agent, key in rows:
        out.setdefault(agent, set()).add(key)
    return out


def settle(conn: sqlite3.Connection, agent: str, keys: Iterable[str]) -> int:
    """Decide ``counted`` again for every row of ``agent`` with one of ``keys`` (the
    module docstring's rules); returns how many rows changed."""
    changed: list[tuple[int, int]] = []
    wanted = sorted(keys)
    for start in range(0, len(wanted), SETTLE_CHUNK):
        chunk = wanted[start : start + SETTLE_CHUNK]
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(
            f"SELECT id, msg_key, req_key, sidechain, total, counted FROM usage"
            f" WHERE agent = ? AND msg_key IN ({marks})",
            (agent, *chunk),
        ).fetchall()
        groups: dict[str, list[tuple[int, str, int, int, int]]] = {}
        for rid, key, req, side, total, counted in rows:
            groups.setdefault(key, []).append((rid, req, side, total, counted))
        for members in groups.values():
            has_main = any(side == 0 for _, _, side, _, _ in members)
            best: dict[str, tuple[int, int, int]] = {}
            for rid, req, side, total, _ in members:
                rank = (side, -total, rid)
                if req not in best or rank < best[req]:
                    best[req] = rank
            winners = {rank[2] for rank in best.values() if not (rank[0] and has_main)}
            for rid, _, _, _, counted in members:
                now = 1 if rid in winners else 0
                if now != counted:
                    changed.append((now, rid))
    if changed:
        conn.executemany("UPDATE usage SET counted = ? WHERE id = ?", changed)
    return len(changed)
