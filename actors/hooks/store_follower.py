"""Following the ``store`` actor: pane retirements and worktree renames (thin, trio).

``store`` owns pane topology and worktree identity; hooks only mirrors the two facts
that change which rows may exist and where they are filed:

* ``session.paneRetired {hostId, tabId, leafId, revision}`` - the pane closed
  (architecture §3.2 pane retirement fences): handled exactly like
  ``agentStatus.retire_pane``, including the synchronous flush of the fence.
* ``worktree.renamed {oldId, newId}`` - ``git worktree move`` changed the id; rows
  and remembered panes of ``oldId`` move to ``newId``.

Events missed while hooks was down are recovered once at start:
:meth:`StoreFollower.resolve_restored_worktrees` asks ``identity.resolve`` for each
worktree id the restored rows name and re-keys the aliases, before the ops answer.
A store that does not answer leaves the rows as they are (no answer is not "unknown").

A malformed event is the publisher's fault: it is logged and dropped, never raised.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import trio
import zmq

from actors.hooks.service import HooksService
from orca.actor import ActorContext
from orca.actor.zsocket import ZSocket, new_socket
from orca.wire.envelope import Event, decode_event
from orca.wire.errors import BadFrame, OrcaError, Timeout

log = logging.getLogger(__name__)

PANE_RETIRED_EVENT = "session.paneRetired"
WORKTREE_RENAMED_EVENT = "worktree.renamed"
# identity.resolve deadline at start; a slow store means "no answer", never "unknown".
RESOLVE_TIMEOUT_S = 2.0
# The whole start-up catch-up delays readiness; bound it so a store that answers
# slowly for hundreds of worktrees cannot hold hooks down (the rest stay as they are).
RESOLVE_BUDGET_S = 3.0


@dataclass(frozen=True)
class PaneRetired:
    host_id: str
    tab_id: str
    leaf_id: str


@dataclass(frozen=True)
class WorktreeRenamed:
    old_id: str
    new_id: str


def _text(data: dict[str, Any], name: str) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value


def parse_store_event(event: Event) -> PaneRetired | WorktreeRenamed | None:
    """The fact an event carries; ``None`` for other types; ``ValueError`` if malformed."""
    if event.type not in (PANE_RETIRED_EVENT, WORKTREE_RENAMED_EVENT):
        return None
    data = event.data
    if not isinstance(data, dict):
        raise ValueError(f"{event.type} data is not a map: {data!r}")
    if event.type == PANE_RETIRED_EVENT:
        return PaneRetired(_text(data, "hostId"), _text(data, "tabId"), _text(data, "leafId"))
    return WorktreeRenamed(_text(data, "oldId"), _text(data, "newId"))


def parse_resolution(answer: object) -> str | None:
    """The current id when ``identity.resolve`` says the asked id is an alias, else None."""
    if not isinstance(answer, dict) or answer.get("status") != "alias":
        return None
    current = answer.get("worktreeId")
    return current if isinstance(current, str) and current else None


class StoreFollower:
    """Applies the store's facts to the hooks service; ``flush`` makes a fence durable."""

    def __init__(
        self, ctx: ActorContext, service: HooksService, flush: Callable[[], object]
    ) -> None:
        self.ctx = ctx
        self.service = service
        self.flush = flush
        self.malformed = 0

    def on_event(self, event: Event) -> None:
        try:
            fact = parse_store_event(event)
        except ValueError as exc:
            self.malformed += 1
            log.warning("ignoring a malformed %s event from store: %s", event.type, exc)
            return
        if isinstance(fact, PaneRetired):
            effects = self.service.retire_from_store(fact.host_id, fact.tab_id, fact.leaf_id)
            if effects.outcome == "rejected":
                log.warning("store retired an unusable pane key: %s", fact)
                return
            # Seed 02 §9: a retirement is flushed at once, not debounced.
            self.flush()
        elif isinstance(fact, WorktreeRenamed):
            self.service.rekey_worktree(fact.old_id, fact.new_id)
            log.info("re-keyed agent status %s -> %s", fact.old_id, fact.new_id)

    def _on_message(self, frames: list[bytes]) -> None:
        try:
            event = decode_event(frames[-1])
        except BadFrame as exc:
            self.malformed += 1
            log.warning("ignoring an undecodable store event: %s", exc)
            return
        self.on_event(event)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Subscribe to the store's PUB socket and apply its events until cancelled."""
        sock = new_socket(zmq.SUB)
        sock.setsockopt(zmq.SUBSCRIBE, PANE_RETIRED_EVENT.encode())
        sock.setsockopt(zmq.SUBSCRIBE, WORKTREE_RENAMED_EVENT.encode())
        sock.connect(self.ctx.paths.ipc_endpoint("store", "pub"))
        zs = ZSocket(sock, self._on_message)
        try:
            await zs.run(task_status=task_status)
        finally:
            zs.close()

    async def resolve_restored_worktrees(self) -> None:
        """Catch up on renames missed while down: re-key every id the store calls an alias.

        Run once at start, before the ops answer, so the first snapshot is already
        filed under current ids. Bounded by ``RESOLVE_BUDGET_S`` in all; the first
        unanswered call ends it (the store is down: leave the rows as they are).
        """
        worktree_ids = self.service.store.worktree_ids()
        if not worktree_ids:
            return
        store = self.ctx.connect("store")
        with trio.move_on_after(RESOLVE_BUDGET_S) as budget:
            for worktree_id in worktree_ids:
                try:
                    answer = await store.call(
                        "identity.resolve", {"worktreeId": worktree_id}, timeout=RESOLVE_TIMEOUT_S
                    )
                except Timeout as exc:
                    log.info("store did not answer (%s); restored rows left as they are", exc)
                    return
                except OrcaError as exc:
                    log.info("store refused to resolve %s: %s", worktree_id, exc)
                    continue
                current = parse_resolution(answer)
                if current is not None and current != worktree_id:
                    self.service.rekey_worktree(worktree_id, current)
                    log.info("re-keyed restored agent status %s -> %s", worktree_id, current)
        if budget.cancelled_caught:
            log.info("identity.resolve budget spent; remaining restored rows left as they are")
