"""The ``last-status.json`` codec (seed 02 §10, seed 03 "只有它持久化"). Pure.

What is written: persistable rows (no structured rows, no legacy numeric keys) without
their terminal handle, plus the launch-token *hashes* of those panes. Never a raw token,
never a handle (it belongs to the runtime that issued it; restoring it would tie a row
to someone else's terminal).

The retired-pane fences are written too, oldest retirement first, each with its
retirement id and time (seed 02 §9, §13): a pane closed before a crash stays closed.
So is ``storeRevision``, the last ``local`` topology revision of ``store`` whose
retirements hooks has applied: after a restart, ``session.retired_since`` from that
revision replays exactly the retirements it missed (docs/protocols.md §2).

What is read back: rows younger than ``HYDRATE_WINDOW_MS``; every non-``done`` row is
stamped ``restoredUnconfirmed`` so no reader takes it for live truth; a structured row
found on disk (it should never be there) is dropped, as is anything malformed and
any row the reading table cannot have written (strict hydrate: its tab is not its pane
key's, or its host is not the table's) - a damaged status file costs stale badges,
never a crash. A file whose document cannot be used at all is named in
``LoadedStatus.damage`` (the loader keeps it aside).

Text (issue 16 item 6): the bytes are UTF-8 JSON and every string is free of lone
surrogates both ways - cleaned when written (a row that slipped past its producer's
boundary) and when read (a file an older build wrote with ``"\\ud800"`` escapes), so
no row from this file can make a reader's encoder fail.

The encoding is canonical (sorted keys, no timestamps of its own), so identical store
content yields identical bytes and the writer can skip unchanged saves.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import msgspec

from actors.hooks.http_request import MAX_JSON_DEPTH, clean_document, exceeds_depth
from actors.hooks.pane_authority import (
    MAX_RETIRE_ID_CHARS,
    RETIRED_FENCE_CAPACITY,
    Fence,
    is_sha256_hex,
    parse_pane_key,
)
from actors.hooks.status_table import is_persistable
from orca.model.agent_status import AgentStatusRow
from orca.model.hosts import LOCAL_HOST_ID
from orca.model.ids import is_terminal_owner_id

FILE_VERSION = 1
# Seed 02 §10: only records from the last seven days are kept across restarts.
HYDRATE_WINDOW_MS = 7 * 24 * 60 * 60 * 1000


@dataclass(frozen=True)
class LoadedStatus:
    rows: list[AgentStatusRow]
    commitments: dict[str, str]
    dropped: int
    fences: list[Fence] = field(default_factory=list)
    store_revision: int = 0
    # Why the whole document was unusable (``bad_json``, ``too_deep``, ``not_an_object``,
    # ``unknown_version``, ``bad_rows``); ``None`` for a usable one.
    damage: str | None = None


def encode_status_file(
    rows: list[AgentStatusRow],
    commitments: dict[str, str],
    fences: list[Fence] | None = None,
    store_revision: int = 0,
) -> bytes:
    """Canonical bytes for the persistable subset of ``rows`` and the fences, in order."""
    kept = sorted((r for r in rows if is_persistable(r)), key=lambda r: r.pane_key)
    panes = {r.pane_key for r in kept}
    wire_rows = []
    for row in kept:
        wire = msgspec.to_builtins(row)
        wire.pop("terminalHandle", None)
        wire.pop("structuredHost", None)
        wire_rows.append(wire)
    document = {
        "version": FILE_VERSION,
        "rows": wire_rows,
        "launchTokenSha256": {p: h for p, h in sorted(commitments.items()) if p in panes},
        "retiredPanes": [
            {"paneKey": f.pane_key, "retireId": f.retire_id, "retiredAtMs": f.retired_at_ms}
            for f in fences or ()
        ],
        "storeRevision": store_revision,
    }
    try:
        return _dump(document)
    except UnicodeEncodeError:  # a lone surrogate in a row: write U+FFFD instead
        return _dump(clean_document(document))


def _dump(document: object) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def decode_status_file(data: bytes, now_ms: int, host_id: str = LOCAL_HOST_ID) -> LoadedStatus:
    """Rows to hydrate into the table of ``host_id`` from ``data``; anything unreadable,
    or not a row that table wrote, is dropped, never raised."""
    try:
        parsed = json.loads(data)
    except RecursionError:
        return LoadedStatus([], {}, 0, damage="too_deep")
    except ValueError:
        return LoadedStatus([], {}, 0, damage="bad_json")
    if exceeds_depth(parsed, MAX_JSON_DEPTH):
        return LoadedStatus([], {}, 0, damage="too_deep")
    if not isinstance(parsed, dict):
        return LoadedStatus([], {}, 0, damage="not_an_object")
    if parsed.get("version") != FILE_VERSION:
        return LoadedStatus([], {}, 0, damage="unknown_version")
    document = clean_document(parsed)
    assert isinstance(document, dict)
    raw_rows = document.get("rows", [])
    if not isinstance(raw_rows, list):
        return LoadedStatus([], {}, 0, damage="bad_rows")
    rows: list[AgentStatusRow] = []
    dropped = 0
    for raw in raw_rows:
        row = _decode_row(raw, now_ms, host_id)
        if row is None:
            dropped += 1
        else:
            rows.append(row)
    panes = {r.pane_key for r in rows}
    raw_hashes = document.get("launchTokenSha256")
    commitments = {
        pane: digest
        for pane, digest in (raw_hashes.items() if isinstance(raw_hashes, dict) else ())
        if pane in panes and isinstance(digest, str) and is_sha256_hex(digest)
    }
    revision = document.get("storeRevision")
    revision = revision if type(revision) is int and revision >= 0 else 0
    fences = _decode_fences(document.get("retiredPanes"))
    return LoadedStatus(rows, commitments, dropped, fences, revision)


def _decode_fences(raw: object) -> list[Fence]:
    """Well-formed fences in file order, the newest ``RETIRED_FENCE_CAPACITY`` of them."""
    fences: list[Fence] = []
    for item in raw if isinstance(raw, list) else ():
        if not isinstance(item, dict):
            continue
        key, retire_id, at = item.get("paneKey"), item.get("retireId"), item.get("retiredAtMs")
        if (
            isinstance(key, str)
            and parse_pane_key(key) is not None
            and isinstance(retire_id, str)
            and isinstance(at, int)
            and not isinstance(at, bool)
        ):
            fences.append(Fence(key, retire_id[:MAX_RETIRE_ID_CHARS], at))
    return fences[-RETIRED_FENCE_CAPACITY:]


def _decode_row(raw: object, now_ms: int, host_id: str) -> AgentStatusRow | None:
    if not isinstance(raw, dict) or raw.get("structuredHost") is not None:
        return None
    try:
        row = msgspec.convert(raw, AgentStatusRow)
    except msgspec.ValidationError:
        return None
    if now_ms - row.updated_at_ms > HYDRATE_WINDOW_MS or not is_persistable(row):
        return None
    # Strict hydrate (seed 02 §10): the row's pane, tab, worktree and host must be ones
    # this table can have written, else it would light a badge no live pane owns. The
    # table files the pane key's own tab (``AgentStatusTable.apply_normalized_status``)
    # and its own host id on every row, so another tab or another host is a row that was
    # never this table's (a hand edit, a file copied from another host). An empty tabId
    # names no tab and is let through.
    pane = parse_pane_key(row.pane_key)
    if pane is None or (row.tab_id and row.tab_id != pane.tab_id):
        return None
    if not is_terminal_owner_id(row.worktree_id) or row.host_id != host_id:
        return None
    return msgspec.structs.replace(
        row,
        terminal_handle=None,
        restored_unconfirmed=row.restored_unconfirmed or row.state != "done",
    )
