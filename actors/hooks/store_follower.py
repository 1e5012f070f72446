"""Following the ``store`` actor: pane retirements, worktree renames and removals (thin, trio).

``store`` owns pane topology and worktree identity; hooks only mirrors the facts that
change which rows may exist and where they are filed:

* ``session.paneRetired {hostId, tabId, leafId, revision}`` - the pane closed
  (architecture §3.2 pane retirement fences): handled exactly like
  ``agentStatus.retire_pane``, including the synchronous flush of the fence.
* ``worktree.renamed {oldId, newId}`` - ``git worktree move`` changed the id; rows
  and remembered panes of ``oldId`` move to ``newId``.
* ``worktreeMeta.removed``, ``repo.removed``, ``folderWorkspace.removed`` - a worktree
  may be gone (``orca worktree rm`` drops its meta). Only a hint: the store's identity
  rule decides, as for ptyd's session GC (docs/protocols.md §1). Each id the event may
  have ended is asked with ``identity.resolve`` in the background
  (:meth:`StoreFollower.run_worktree_checks`, retried while the store does not
  answer): *unknown* drops its rows (one clear each, reason ``worktree_removed``) and
  fates, flushed at once; *alias* re-keys; *current* keeps them.

Events missed while hooks was down are recovered once at start:
:meth:`StoreFollower.resolve_restored_worktrees` asks ``identity.resolve`` for each
worktree id the restored rows name, re-keys the aliases and drops the unknown ones
(renamed or removed meanwhile), before the ops answer. A store that does not answer
leaves the rows as they are (no answer is not "unknown"); the ids it did not answer
for are asked again in the background.
Retirements missed while down are replayed from the store's bounded log:
:meth:`StoreFollower.run_catch_up` asks ``session.retired_since`` from the last ``local``
topology revision hooks applied (persisted in ``last-status.json``) and applies each
entry exactly like a live ``session.paneRetired``. It runs in the background at start
(retrying with a short backoff while the store is down, never delaying readiness) and
again whenever a live event's revision shows that earlier ones were lost (a gap).

Both events and both replies are decoded with :mod:`orca.contracts.store`, the same
Structs ``ptyd`` uses: a malformed event (wrong type, missing field, a ``tabId`` with a
``:``) is the publisher's fault and is logged once and dropped by the shared decoder
(:class:`orca.actor.subscriber.Subscriber`); a malformed reply is ``BadFrame``, retried
like a store that did not answer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

import trio

from actors.hooks.retirement_cursor import RetirementCursor
from actors.hooks.service import HooksService
from orca.actor import ActorContext
from orca.actor.subscriber import Subscriber
from orca.contracts import store
from orca.model.hosts import LOCAL_HOST_ID
from orca.model.ids import folder_workspace_id_of_worktree_id, repo_id_of_worktree_id
from orca.wire.envelope import Event
from orca.wire.errors import OrcaError, Timeout

log = logging.getLogger(__name__)

# The store events hooks follows.
FOLLOWED = (
    store.PANE_RETIRED,
    store.WORKTREE_RENAMED,
    store.WORKTREE_META_REMOVED,
    store.REPO_REMOVED,
    store.FOLDER_WORKSPACE_REMOVED,
)
# The clear reason of the rows of a worktree the store no longer knows.
WORKTREE_REMOVED = "worktree_removed"
CONSUMER = "hooks<-store"
# identity.resolve deadline at start; a slow store means "no answer", never "unknown".
RESOLVE_TIMEOUT_S = 2.0
# The whole start-up catch-up delays readiness; bound it so a store that answers
# slowly for hundreds of worktrees cannot hold hooks down (the rest stay as they are).
RESOLVE_BUDGET_S = 3.0
# Catch-up retry while the store is down: it is restarted by the supervisor within a
# second or two; start quick, back off to a few seconds so a long outage costs little.
# (actors/ptyd/retire.py has the same loop and constants.)
CATCH_UP_FIRST_RETRY_S = 0.2
# How long a status that arrives while the start-up catch-up is still asking waits for
# it (a store that answers does in milliseconds).
CATCH_UP_WAIT_S = 2.0
CATCH_UP_MAX_RETRY_S = 5.0
# session.retired_since reads memory only; a store that takes longer is busy or down.
CATCH_UP_TIMEOUT_S = 2.0


def wanted_retirements(
    cursor: RetirementCursor, answer: store.RetiredSince
) -> list[store.RetiredPane]:
    """The replayed retirements of ``answer`` not applied yet, oldest first."""
    return [pane for pane in answer.panes if cursor.wants(pane.revision)]


def removal_candidates(fact: Any, filed: Iterable[str]) -> set[str]:
    """The worktree ids a removal event may have ended: those it names, and of the ids
    rows or fates are ``filed`` under, every one of a removed repo or folder workspace
    (a repo's main checkout and worktrees without meta are named by no meta event)."""
    if isinstance(fact, store.WorktreeMetaRemoved):
        return set(fact.worktree_ids)
    if isinstance(fact, store.RepoRemoved):
        return {*fact.worktree_ids, *(w for w in filed if repo_id_of_worktree_id(w) == fact.id)}
    if isinstance(fact, store.FolderWorkspaceRemoved):
        return {w for w in filed if folder_workspace_id_of_worktree_id(w) == fact.id}
    return set()


def renamed_to(asked: str, answer: store.IdentityResolved) -> str | None:
    """The id to re-key ``asked`` to: only an ``alias`` answer naming another id."""
    current = answer.worktree_id
    if answer.status != "alias" or not current or current == asked:
        return None
    return current


class StoreFollower:
    """Applies the store's facts to the hooks service; ``flush`` makes a fence durable."""

    def __init__(
        self, ctx: ActorContext, service: HooksService, flush: Callable[[], object]
    ) -> None:
        self.ctx = ctx
        self.service = service
        self.flush = flush
        # Local topology revisions applied (persisted by the actor in last-status.json;
        # restored from the file before run/run_catch_up start).
        self.cursor = RetirementCursor()
        self._catch_up_wanted = trio.Event()
        self._catch_up_wanted.set()  # once at start
        self.catch_ups = 0
        # Worktree ids a removal hinted at, not yet asked about (run_worktree_checks).
        self._unchecked: set[str] = set()
        self._check_wanted = trio.Event()
        # Set once the start-up retirement catch-up is done: the removal checks wait
        # for it, so a pane retired while hooks was down is cleared as retired (and
        # fenced) before its worktree's removal could clear it under another reason.
        self._caught_up = trio.Event()
        # Statuses wait for that catch-up until this (trio) time at most, all of them
        # together: a store that is down delays the first seconds, never each request.
        self._statuses_wait_until = trio.current_time() + CATCH_UP_WAIT_S
        self.subscriber = Subscriber(
            ctx.paths.ipc_endpoint(store.CONTRACT.actor, "pub"),
            FOLLOWED,
            self.on_event,
            consumer=CONSUMER,
        )

    def _apply_retirement(self, host_id: str, tab_id: str, leaf_id: str) -> bool:
        effects = self.service.retire_from_store(host_id, tab_id, leaf_id)
        if effects.outcome == "rejected":
            log.warning("store retired an unusable pane key: %s:%s on %s", tab_id, leaf_id, host_id)
            return False
        return True

    def apply_catch_up(self, answer: store.RetiredSince) -> int:
        """Apply the replayed retirements not applied yet, then record the answer's
        revision. Returns how many were applied."""
        applied = 0
        for pane in wanted_retirements(self.cursor, answer):
            applied += self._apply_retirement(answer.host_id, pane.tab_id, pane.leaf_id)
        self.cursor.settle(answer.revision)
        # Seed 02 §9: fences (and the revision they bring) are flushed at once.
        self.flush()
        return applied

    def on_event(self, _envelope: Event, fact: Any) -> None:
        """One decoded store event (``Subscriber`` hands only the ``FOLLOWED`` types)."""
        if isinstance(fact, store.PaneRetired):
            if fact.host_id == LOCAL_HOST_ID and self.cursor.on_live(fact.revision):
                self._catch_up_wanted.set()  # earlier retirements were lost
            if not self._apply_retirement(fact.host_id, fact.tab_id, fact.leaf_id):
                return
            # Seed 02 §9: a retirement is flushed at once, not debounced.
            self.flush()
        elif isinstance(fact, store.WorktreeRenamed):
            self.service.rekey_worktree(fact.old_id, fact.new_id)
            log.info("re-keyed agent status %s -> %s", fact.old_id, fact.new_id)
        else:
            self.check_worktrees(removal_candidates(fact, self._filed_worktree_ids()))

    def _filed_worktree_ids(self) -> list[str]:
        table = self.service.table
        return sorted({*table.worktree_ids(), *table.fate_worktree_ids()})

    def check_worktrees(self, worktree_ids: Iterable[str]) -> None:
        """Have ``run_worktree_checks`` ask the store about these ids (a removal hint)."""
        before = len(self._unchecked)
        self._unchecked.update(worktree_ids)
        if len(self._unchecked) > before:
            self._check_wanted.set()

    async def run_worktree_checks(self) -> None:
        """Drop the rows and fates of every hinted worktree the store calls unknown
        (re-key an alias); forever, retrying while the store does not answer."""
        client = self.ctx.connect(store.CONTRACT.actor)
        while True:
            await self._check_wanted.wait()
            await self._caught_up.wait()
            self._check_wanted = trio.Event()
            delay = CATCH_UP_FIRST_RETRY_S
            while self._unchecked:
                worktree_id = min(self._unchecked)
                try:
                    answer = await client.invoke(
                        store.IDENTITY_RESOLVE,
                        store.WorktreeIdArgs(worktree_id=worktree_id),
                        timeout=CATCH_UP_TIMEOUT_S,
                    )
                except OrcaError as exc:  # down, busy, or a malformed answer (BadFrame)
                    log.info("worktree check: store did not answer (%s); retrying", exc)
                    await trio.sleep(delay)
                    delay = min(delay * 2, CATCH_UP_MAX_RETRY_S)
                    continue
                self._unchecked.discard(worktree_id)
                self.apply_resolution(worktree_id, answer)

    def apply_resolution(self, worktree_id: str, answer: store.IdentityResolved) -> None:
        """The store's answer about a worktree rows or fates are filed under."""
        if answer.status == "unknown":
            if self.service.drop_worktree(worktree_id, WORKTREE_REMOVED).persist:
                self.flush()  # a removed worktree's rows must not come back from disk
            log.info("dropped agent status of removed worktree %s", worktree_id)
            return
        current = renamed_to(worktree_id, answer)
        if current is not None:
            self.service.rekey_worktree(worktree_id, current)
            log.info("re-keyed agent status %s -> %s", worktree_id, current)

    async def retirements_known(self) -> None:
        """Until the start-up catch-up of retirements is done, and at most
        ``CATCH_UP_WAIT_S`` after hooks started: a status for a pane retired while hooks
        was down is then refused, not applied and removed a moment later (test_protocols,
        under load). A store that does not answer delays only those first seconds."""
        if not self._caught_up.is_set():
            with trio.move_on_at(self._statuses_wait_until):
                await self._caught_up.wait()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Apply the store's events until cancelled (subscribed from construction on)."""
        await self.subscriber.run(task_status=task_status)

    async def run_catch_up(self) -> None:
        """Replay missed retirements whenever wanted (at start, after a gap); forever."""
        while True:
            await self._catch_up_wanted.wait()
            self._catch_up_wanted = trio.Event()
            await self._catch_up_once()

    async def _catch_up_once(self) -> None:
        client = self.ctx.connect(store.CONTRACT.actor)
        delay = CATCH_UP_FIRST_RETRY_S
        while True:
            args = store.RetiredSinceArgs(host_id=LOCAL_HOST_ID, revision=self.cursor.revision)
            try:
                answer = await client.invoke(
                    store.SESSION_RETIRED_SINCE, args, timeout=CATCH_UP_TIMEOUT_S
                )
            except OrcaError as exc:  # down, busy, or a malformed answer (BadFrame)
                log.info("retirement catch-up: store did not answer (%s); retrying", exc)
                await trio.sleep(delay)
                delay = min(delay * 2, CATCH_UP_MAX_RETRY_S)
                continue
            if answer.truncated:
                log.warning("store's retirement log no longer reaches revision %d", args.revision)
            applied = self.apply_catch_up(answer)
            self._caught_up.set()
            self.catch_ups += 1
            log.info(
                "retirement catch-up to revision %d: %d panes retired", answer.revision, applied
            )
            return

    async def resolve_restored_worktrees(self) -> None:
        """Catch up on renames and removals missed while down: re-key every id the store
        calls an alias, drop the rows of every id it calls unknown.

        Run once at start, before the ops answer, so the first snapshot is already
        filed under current ids. Bounded by ``RESOLVE_BUDGET_S`` in all; the first
        unanswered call ends it (the store is down: the rows stay as they are, and
        the ids not answered yet are asked again in the background by
        ``run_worktree_checks``, until the store answers).
        """
        pending = self.service.table.worktree_ids()
        if not pending:
            return
        client = self.ctx.connect(store.CONTRACT.actor)
        with trio.move_on_after(RESOLVE_BUDGET_S) as budget:
            while pending:
                worktree_id = pending[0]
                try:
                    answer = await client.invoke(
                        store.IDENTITY_RESOLVE,
                        store.WorktreeIdArgs(worktree_id=worktree_id),
                        timeout=RESOLVE_TIMEOUT_S,
                    )
                except Timeout as exc:
                    log.info("store did not answer (%s); restored rows left as they are", exc)
                    break
                except OrcaError as exc:
                    log.info("store refused to resolve %s: %s", worktree_id, exc)
                    pending.pop(0)
                    continue
                pending.pop(0)
                if answer.status == "unknown":
                    # Strict hydrate (seed 03): a row for a worktree the store does not
                    # know is not restored at all.
                    if self.service.drop_worktree(worktree_id, "unknown_worktree").persist:
                        self.flush()  # gone from disk too before the first snapshot
                    log.info("dropped restored agent status of unknown worktree %s", worktree_id)
                    continue
                current = renamed_to(worktree_id, answer)
                if current is not None:
                    self.service.rekey_worktree(worktree_id, current)
                    log.info("re-keyed restored agent status %s -> %s", worktree_id, current)
        if budget.cancelled_caught:
            log.info("identity.resolve budget spent; the rest are checked in the background")
        self.check_worktrees(pending)
