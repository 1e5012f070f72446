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
Retirements missed while down are replayed from the store's bounded log:
:meth:`StoreFollower.catch_up` asks ``session.retired_since`` from the last ``local``
topology revision hooks applied (persisted in ``last-status.json``) and applies each
entry exactly like a live ``session.paneRetired``. It runs in the background at start
(retrying with a short backoff while the store is down, never delaying readiness) and
again whenever a live event's revision shows that earlier ones were lost (a gap).

A malformed event is the publisher's fault: it is logged and dropped, never raised.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import trio
import zmq

from actors.hooks.retirement_cursor import RetirementCursor
from actors.hooks.service import HooksService
from orca.actor import ActorContext
from orca.actor.zsocket import ZSocket, new_socket
from orca.model.hosts import LOCAL_HOST_ID
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
# Catch-up retry while the store is down: it is restarted by the supervisor within a
# second or two; start quick, back off to a few seconds so a long outage costs little.
CATCH_UP_FIRST_RETRY_S = 0.2
CATCH_UP_MAX_RETRY_S = 5.0
# session.retired_since reads memory only; a store that takes longer is busy or down.
CATCH_UP_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class PaneRetired:
    host_id: str
    tab_id: str
    leaf_id: str
    # The host's topology revision after this retirement (None: an older store).
    revision: int | None = None


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
        revision = data.get("revision")
        return PaneRetired(
            _text(data, "hostId"),
            _text(data, "tabId"),
            _text(data, "leafId"),
            revision if type(revision) is int else None,
        )
    return WorktreeRenamed(_text(data, "oldId"), _text(data, "newId"))


def parse_retired_since(answer: object) -> tuple[int, list[PaneRetired]]:
    """``session.retired_since`` (local host) → (current revision, retirements oldest
    first); ``ValueError`` if the answer is malformed. Malformed entries are skipped."""
    if not isinstance(answer, dict) or type(answer.get("revision")) is not int:
        raise ValueError(f"session.retired_since answer without a revision: {answer!r}")
    panes = answer.get("panes")
    facts: list[PaneRetired] = []
    for entry in panes if isinstance(panes, list) else ():
        if not isinstance(entry, dict) or type(entry.get("revision")) is not int:
            continue
        try:
            tab_id, leaf_id = _text(entry, "tabId"), _text(entry, "leafId")
        except ValueError:
            continue
        facts.append(PaneRetired(LOCAL_HOST_ID, tab_id, leaf_id, entry["revision"]))
    return answer["revision"], facts


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
        # Local topology revisions applied (persisted by the actor in last-status.json;
        # restored from the file before run/run_catch_up start).
        self.cursor = RetirementCursor()
        self._catch_up_wanted = trio.Event()
        self._catch_up_wanted.set()  # once at start
        self.catch_ups = 0

    def _apply_retirement(self, fact: PaneRetired) -> bool:
        effects = self.service.retire_from_store(fact.host_id, fact.tab_id, fact.leaf_id)
        if effects.outcome == "rejected":
            log.warning("store retired an unusable pane key: %s", fact)
            return False
        return True

    def apply_catch_up(self, revision: int, facts: list[PaneRetired]) -> int:
        """Apply the replayed retirements not applied yet, then record ``revision``.
        Returns how many were applied."""
        applied = 0
        for fact in facts:
            if fact.revision is not None and self.cursor.wants(fact.revision):
                applied += self._apply_retirement(fact)
        self.cursor.settle(revision)
        # Seed 02 §9: fences (and the revision they bring) are flushed at once.
        self.flush()
        return applied

    def on_event(self, event: Event) -> None:
        try:
            fact = parse_store_event(event)
        except ValueError as exc:
            self.malformed += 1
            log.warning("ignoring a malformed %s event from store: %s", event.type, exc)
            return
        if isinstance(fact, PaneRetired):
            revision = fact.revision if fact.host_id == LOCAL_HOST_ID else None
            if revision is not None and self.cursor.on_live(revision):
                self._catch_up_wanted.set()  # earlier retirements were lost
            if not self._apply_retirement(fact):
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

    async def run_catch_up(self) -> None:
        """Replay missed retirements whenever wanted (at start, after a gap); forever."""
        while True:
            await self._catch_up_wanted.wait()
            self._catch_up_wanted = trio.Event()
            await self._catch_up_once()

    async def _catch_up_once(self) -> None:
        store = self.ctx.connect("store")
        delay = CATCH_UP_FIRST_RETRY_S
        while True:
            args = {"hostId": LOCAL_HOST_ID, "revision": self.cursor.revision}
            try:
                answer = await store.call("session.retired_since", args, timeout=CATCH_UP_TIMEOUT_S)
                revision, facts = parse_retired_since(answer)
            except (OrcaError, ValueError) as exc:
                log.info("retirement catch-up: store did not answer (%s); retrying", exc)
                await trio.sleep(delay)
                delay = min(delay * 2, CATCH_UP_MAX_RETRY_S)
                continue
            if answer.get("truncated"):
                log.warning(
                    "store's retirement log no longer reaches revision %d", args["revision"]
                )
            applied = self.apply_catch_up(revision, facts)
            self.catch_ups += 1
            log.info("retirement catch-up to revision %d: %d panes retired", revision, applied)
            return

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
