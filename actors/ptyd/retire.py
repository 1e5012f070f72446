"""Pane retirement as ``ptyd`` sees it (ARCHITECTURE §3.2; seed 02 §9).

Two directions, both keyed by the pane key ``<tabId>:<leafId>``:

* in: ``store`` publishes ``session.paneRetired {hostId, tabId, leafId, revision}``;
  every live session of that host whose pane key matches is ended (like ``term.kill``);
* out: ``term.close`` is a pane close; after ending the PTY ``ptyd`` asks ``store`` to
  retire the pane (revision bump + flush) and ``hooks`` to fence it.

The parsing and matching here are pure; the one I/O helper (the store call) is a
best-effort call that logs and never raises.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

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
