"""Pane retirement as ``ptyd`` sees it (docs/protocols.md §2; seed 02 §9).

Two directions, both keyed by the pane key ``<tabId>:<leafId>``:

* in: ``store`` publishes ``session.paneRetired {hostId, tabId, leafId, revision}``
  (decoded by the store contract's ``PaneRetired``: a ``tabId`` with a ``:`` or an
  empty id is malformed there, once for every consumer); every live session of that
  host whose pane key matches is ended (like ``term.kill``);
* out: ``term.close`` is a pane close; after ending the PTY ``ptyd`` asks ``store`` to
  retire the pane (revision bump + flush) and ``hooks`` to fence it;
* a PTY that exits on its own (its shell or agent ended, not ``term.close``) keeps its
  pane - the pane shows the ended terminal and runs it again - but ``ptyd`` asks
  ``store`` to drop the bindings to it (``session.retire_pty``, seed 02 §9; revision
  bump + flush, so a crash right after leaves no ghost binding, §13);
* catch-up: an event published while ``ptyd`` was down is lost, so after adopting the
  keeper's sessions ``ptyd`` asks ``session.retired_since {revision: 0}`` (the store's
  bounded log) and ends every adopted session whose pane was retired *after* the
  session was created (a pane key may be reused by a later spawn).

The matching here is pure; the I/O helpers (store calls) are best effort: they log,
never raise (the catch-up one retries until answered, the exit one for a while).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

import trio

from actors.ptyd.info import SessionInfo
from actors.ptyd.session import Session
from orca.actor import RpcClient
from orca.contracts import store
from orca.model.panes import parse_pane_key
from orca.wire.errors import OrcaError, Unavailable

log = logging.getLogger(__name__)

# The store saves before it answers session.retire_pane: a few ms, a flush on a slow
# disk maybe a second. Beyond this the close goes on without the store's revision.
STORE_RETIRE_TIMEOUT_S = 2.0
# Catch-up at start while the store is down: the supervisor restarts it within a second
# or two; retry quickly at first, then every few seconds.
CATCH_UP_FIRST_RETRY_S = 0.2
CATCH_UP_MAX_RETRY_S = 5.0
# session.retired_since reads memory only; longer means busy or down.
CATCH_UP_TIMEOUT_S = 2.0
# An exited PTY's bindings while the store is down: it is back within a second or two
# (the supervisor restarts it); past this the next ptyd start's verdict covers them.
EXITED_PTY_PATIENCE_S = 30.0


def pane_key_of(tab_id: str, leaf_id: str) -> str:
    """The pane key a store retirement names (the store's ``TabId`` has no ``:``)."""
    return f"{tab_id}:{leaf_id}"


def sessions_in_pane(sessions: Iterable[Session], retired: store.PaneRetired) -> list[Session]:
    """The still-running sessions of the retired pane (same host, same pane key)."""
    pane_key = pane_key_of(retired.tab_id, retired.leaf_id)
    return [
        s
        for s in sessions
        if s.info.pane_key == pane_key
        and s.info.host_id == retired.host_id
        and not s.exited.is_set()
    ]


def store_retire_args(info: SessionInfo) -> store.RetirePaneArgs | None:
    """``session.retire_pane`` args for the session's pane; None for a legacy numeric key
    (the store's topology only holds UUID leaves, so there is nothing to retire there)."""
    parts = parse_pane_key(info.pane_key)
    if parts is None:
        return None
    return store.RetirePaneArgs(host_id=info.host_id, tab_id=parts.tab_id, leaf_id=parts.leaf_id)


async def retire_in_store(client: RpcClient, info: SessionInfo) -> int | None:
    """Ask the store to retire the session's pane; its new topology revision, or None
    when there was nothing to retire or the store did not answer (logged, not raised)."""
    args = store_retire_args(info)
    if args is None:
        return None
    try:
        reply = await client.invoke(store.SESSION_RETIRE_PANE, args, timeout=STORE_RETIRE_TIMEOUT_S)
    except OrcaError as exc:
        log.warning("store did not retire pane %s: %s", info.pane_key, exc)
        return None
    return reply.revision


def ids_of_session(session_id: str, aliases: Mapping[str, str]) -> list[str]:
    """The session's id and every id it had before a rename (``aliases``: old -> the id
    it leads to, possibly through later renames); a binding may name any of them."""
    ids = [session_id]
    for known in ids:  # grows while it is walked: each id's predecessors join the end
        ids.extend(old for old, new in aliases.items() if new == known and old not in ids)
    return ids


async def retire_exited_pty(client: RpcClient, host_id: str, pty_ids: list[str]) -> int | None:
    """Ask the store to drop every binding to a PTY that exited; the host's revision
    (unchanged when nothing was bound), or None when the store did not answer within
    ``EXITED_PTY_PATIENCE_S`` or refused (logged, not raised)."""
    args = store.RetirePtyArgs(host_id=host_id, pty_ids=pty_ids)
    delay = CATCH_UP_FIRST_RETRY_S
    with trio.move_on_after(EXITED_PTY_PATIENCE_S):
        while True:
            try:
                reply = await client.invoke(
                    store.SESSION_RETIRE_PTY, args, timeout=STORE_RETIRE_TIMEOUT_S
                )
            except Unavailable as exc:  # down, restarting or stopping (Timeout included)
                log.info("store did not retire the bindings of %s (%s); retrying", pty_ids[0], exc)
            except OrcaError as exc:  # a refusal: asking again would be refused again
                log.warning("store did not retire the bindings of %s: %s", pty_ids[0], exc)
                return None
            else:
                return reply.revision
            await trio.sleep(delay)
            delay = min(delay * 2, CATCH_UP_MAX_RETRY_S)
    log.warning("store did not retire the bindings of %s: no answer", pty_ids[0])
    return None


def retired_after_spawn(infos: Iterable[SessionInfo], retirements: store.RetiredSince) -> set[str]:
    """Ids of the sessions whose pane (same host, same key) the store retired after the
    session was created; a spawn later than the retirement reused the key and lives on."""
    retired_at: dict[str, int] = {}
    for entry in retirements.panes:
        key = pane_key_of(entry.tab_id, entry.leaf_id)
        retired_at[key] = max(retired_at.get(key, 0), entry.retired_at_ms)
    return {
        info.session_id
        for info in infos
        if info.host_id == retirements.host_id
        and info.created_at * 1000 < retired_at.get(info.pane_key, 0)
    }


async def fetch_retirement_log(client: RpcClient, host_id: str) -> store.RetiredSince:
    """The host's whole retirement log; retries with backoff while the store is down
    (or answers something the contract refuses: ``BadFrame``, logged the same way)."""
    delay = CATCH_UP_FIRST_RETRY_S
    args = store.RetiredSinceArgs(host_id=host_id, revision=0)
    while True:
        try:
            return await client.invoke(
                store.SESSION_RETIRED_SINCE, args, timeout=CATCH_UP_TIMEOUT_S
            )
        except OrcaError as exc:
            log.info("retirement catch-up: no answer from store (%s); retrying", exc)
        await trio.sleep(delay)
        delay = min(delay * 2, CATCH_UP_MAX_RETRY_S)
