"""Pane retirement as ``ptyd`` sees it (ARCHITECTURE §3.2; seed 02 §9).

Two directions, both keyed by the pane key ``<tabId>:<leafId>``:

* in: ``store`` publishes ``session.paneRetired {hostId, tabId, leafId, revision}``;
  every live session of that host whose pane key matches is ended (like ``term.kill``);
* out: ``term.close`` is a pane close; after ending the PTY ``ptyd`` asks ``store`` to
  retire the pane (revision bump + flush) and ``hooks`` to fence it;
* catch-up: an event published while ``ptyd`` was down is lost, so after adopting the
  keeper's sessions ``ptyd`` asks ``session.retired_since {revision: 0}`` (the store's
  bounded log) and ends every adopted session whose pane was retired *after* the
  session was created (a pane key may be reused by a later spawn).

The parsing and matching here are pure; the two I/O helpers (store calls) are
best effort: they log, never raise (the catch-up one retries until answered).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import trio

from actors.ptyd.info import SessionInfo
from actors.ptyd.session import Session
from orca.actor import RpcClient
from orca.model.panes import parse_pane_key
from orca.wire.errors import OrcaError

log = logging.getLogger(__name__)

PANE_RETIRED_EVENT = "session.paneRetired"
RENAMED_EVENT = "worktree.renamed"
# The store saves before it answers session.retire_pane: a few ms, a flush on a slow
# disk maybe a second. Beyond this the close goes on without the store's revision.
STORE_RETIRE_TIMEOUT_S = 2.0
# Catch-up at start while the store is down: the supervisor restarts it within a second
# or two; retry quickly at first, then every few seconds.
CATCH_UP_FIRST_RETRY_S = 0.2
CATCH_UP_MAX_RETRY_S = 5.0
# session.retired_since reads memory only; longer means busy or down.
CATCH_UP_TIMEOUT_S = 2.0


class MalformedStoreEvent(ValueError):
    """A store event whose data does not have the documented shape (store is at fault)."""


@dataclass(frozen=True)
class RetiredPane:
    """One pane the store retired: its host and pane key."""

    host_id: str
    pane_key: str


def parse_pane_retired(data: Any) -> RetiredPane:
    """``session.paneRetired`` data → RetiredPane; raises MalformedStoreEvent."""
    if not isinstance(data, dict):
        raise MalformedStoreEvent(f"session.paneRetired data is not a map: {data!r}")
    host, tab, leaf = data.get("hostId"), data.get("tabId"), data.get("leafId")
    if not (isinstance(host, str) and host):
        raise MalformedStoreEvent(f"session.paneRetired without a hostId: {data!r}")
    if not (isinstance(tab, str) and tab and ":" not in tab):
        raise MalformedStoreEvent(f"session.paneRetired with a bad tabId: {data!r}")
    if not (isinstance(leaf, str) and leaf):
        raise MalformedStoreEvent(f"session.paneRetired with a bad leafId: {data!r}")
    return RetiredPane(host, f"{tab}:{leaf}")


def parse_renamed(data: Any) -> tuple[str, str]:
    """``worktree.renamed`` data → (oldId, newId); raises MalformedStoreEvent."""
    old = data.get("oldId") if isinstance(data, dict) else None
    new = data.get("newId") if isinstance(data, dict) else None
    if not (isinstance(old, str) and old and isinstance(new, str) and new):
        raise MalformedStoreEvent(f"worktree.renamed without oldId/newId: {data!r}")
    return old, new


def sessions_in_pane(sessions: Iterable[Session], pane: RetiredPane) -> list[Session]:
    """The still-running sessions of ``pane`` (same host, same pane key)."""
    return [
        s
        for s in sessions
        if s.info.pane_key == pane.pane_key
        and s.info.host_id == pane.host_id
        and not s.exited.is_set()
    ]


def store_retire_args(info: SessionInfo) -> dict[str, object] | None:
    """``session.retire_pane`` args for the session's pane; None for a legacy numeric key
    (the store's topology only holds UUID leaves, so there is nothing to retire there)."""
    parts = parse_pane_key(info.pane_key)
    if parts is None:
        return None
    return {"hostId": info.host_id, "tabId": parts.tab_id, "leafId": parts.leaf_id}


def hooks_retire_args(info: SessionInfo) -> dict[str, object]:
    """``agentStatus.retire_pane`` args: the fence is keyed by the pane key alone."""
    return {"paneKey": info.pane_key}


async def retire_in_store(store: RpcClient, info: SessionInfo) -> int | None:
    """Ask the store to retire the session's pane; its new topology revision, or None
    when there was nothing to retire or the store did not answer (logged, not raised)."""
    args = store_retire_args(info)
    if args is None:
        return None
    try:
        reply = await store.call("session.retire_pane", args, timeout=STORE_RETIRE_TIMEOUT_S)
    except OrcaError as exc:
        log.warning("store did not retire pane %s: %s", info.pane_key, exc)
        return None
    revision = reply.get("revision") if isinstance(reply, dict) else None
    return revision if isinstance(revision, int) else None


@dataclass(frozen=True)
class LoggedRetirement:
    """One entry of the store's retirement log: the pane and when it was retired."""

    pane: RetiredPane
    retired_at_ms: int


def parse_retired_since(answer: Any, host_id: str) -> list[LoggedRetirement]:
    """``session.retired_since`` answer → its entries; MalformedStoreEvent if it is not a
    map with a ``panes`` list. Malformed entries are skipped (logged by the caller)."""
    panes = answer.get("panes") if isinstance(answer, dict) else None
    if not isinstance(panes, list):
        raise MalformedStoreEvent(f"session.retired_since answer without panes: {answer!r}")
    entries = []
    for entry in panes:
        at = entry.get("retiredAtMs") if isinstance(entry, dict) else None
        if type(at) is not int:
            continue
        try:
            pane = parse_pane_retired({**entry, "hostId": host_id})
        except MalformedStoreEvent:
            continue
        entries.append(LoggedRetirement(pane, at))
    return entries


def retired_after_spawn(
    infos: Iterable[SessionInfo], log_entries: Sequence[LoggedRetirement]
) -> set[str]:
    """Ids of the sessions whose pane (same host, same key) the store retired after the
    session was created; a spawn later than the retirement reused the key and lives on."""
    retired_at: dict[tuple[str, str], int] = {}
    for entry in log_entries:
        key = (entry.pane.host_id, entry.pane.pane_key)
        retired_at[key] = max(retired_at.get(key, 0), entry.retired_at_ms)
    return {
        info.session_id
        for info in infos
        if info.created_at * 1000 < retired_at.get((info.host_id, info.pane_key), 0)
    }


async def fetch_retirement_log(store: RpcClient, host_id: str) -> list[LoggedRetirement]:
    """The host's whole retirement log; retries with backoff while the store is down."""
    delay = CATCH_UP_FIRST_RETRY_S
    while True:
        try:
            answer = await store.call(
                "session.retired_since",
                {"hostId": host_id, "revision": 0},
                timeout=CATCH_UP_TIMEOUT_S,
            )
            return parse_retired_since(answer, host_id)
        except (OrcaError, MalformedStoreEvent) as exc:
            log.info("retirement catch-up: no answer from store (%s); retrying", exc)
        await trio.sleep(delay)
        delay = min(delay * 2, CATCH_UP_MAX_RETRY_S)
