"""The vault actor shell: the index file, the scan loop, the mirrors, the ops (thin, trio).

Start-up: open (or create, or migrate) ``data/vault/index.sqlite3``, register the ops,
report ready; then, in the background, follow hooks' session bindings and the store's
repos and worktrees (``orca.actor.Mirror``: either may be down or restart; until a
mirror has loaded, transcripts are simply unbound or unattributed), and scan. An index
that cannot be opened (an SQLite without FTS5) is reported by every op as
``unavailable`` with the reason; the actor keeps running.

Threads: SQLite and JSON parsing never run on the trio loop. One worker hop at a time
uses the writer connection (``write_lock``: the scan, binding writes, a rebuild), one
the reader connection (``read_lock``: searches, usage, status); WAL lets them overlap.

``vault.changed`` is emitted after a group of scan steps committed rows, at most
:data:`CHANGED_EVERY_S` apart, and once more at the end of a pass.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import trio

from actors.vault import queries
from actors.vault.attribution import Workspaces
from actors.vault.config import VaultConfig, load_config
from actors.vault.discovery import bound_source
from actors.vault.indexdb import Binding
from actors.vault.pricing import PRICES_NAME, SHIPPED_PRICES, PriceTable, load_prices
from actors.vault.scanner import PassReport, Scanner
from actors.vault.schema import IndexUnavailable, connect, open_index, remove_index
from actors.vault.status import read_status
from actors.vault.step import Source
from actors.vault.storeview import FOLLOWED, StoreFacts, apply_store_event, load_store_facts
from orca.actor import ActorContext, Dormant, Mirror
from orca.actor.shared_mirrors import HOOKS_BINDINGS
from orca.actor.subscriber import Subscriber
from orca.contracts import hooks, store
from orca.contracts import vault as contract
from orca.contracts.base import NoArgs, Op
from orca.wire.errors import Internal, Unavailable

log = logging.getLogger(__name__)

# How long a usage report waits for this process's first pass over the token fields
# (the vault started by the question: dormant until asked); past it, what is read so far.
CATCH_UP_WAIT_S = 10.0

# Rows whose arrival means a transcript was just written (a turn ended, or it asks).
SETTLED_STATES = frozenset({"done", "waiting", "blocked"})
# Passes that find nothing space out up to this many scan intervals, at most a minute.
IDLE_SCAN_FACTOR = 12
IDLE_SCAN_MAX_S = 60.0


def idle_scan_wait(base: float) -> float:
    """The longest wait between passes that find nothing, for a scan interval ``base``."""
    return max(base, min(IDLE_SCAN_MAX_S, base * IDLE_SCAN_FACTOR))


CHANGED_EVERY_S = 0.25
VAULT_DIR = "vault"
R = TypeVar("R")


class VaultActor:
    def __init__(self, ctx: ActorContext, config: VaultConfig) -> None:
        self.ctx = ctx
        self.config = config
        self.directory = ctx.paths.data_dir / VAULT_DIR
        self.unavailable = ""
        self.write_lock = trio.Lock()
        self.read_lock = trio.Lock()
        self.wake = trio.Event()
        # Set once this process's first pass has read every token field: a vault started
        # by the question itself (dormant until asked) answers usage from all of it.
        self.caught_up = trio.Event()
        self.scanner: Scanner | None = None
        self.reader: sqlite3.Connection | None = None
        self.path: Path | None = None
        self.bindings: dict[hooks.BindingKey, hooks.SessionBinding] = {}
        self.bound: dict[str, Source] = {}
        self.store_facts = StoreFacts()
        self._workspaces: tuple[StoreFacts, Workspaces] | None = None
        self.prices = load_prices(ctx.paths.config_dir)
        self._price_stamp = self._prices_stamp()
        self.scans = 0
        self.last_scan_ms = 0
        self._emitted = (0, 0)
        self._emitted_at = 0.0

    # -- the file ---------------------------------------------------------------------
    def _open(self) -> None:
        path, conn = open_index(self.directory)
        self.path = path
        self.scanner = Scanner(conn, self.config.roots, self.config.step_bytes)
        self.reader = connect(path)

    async def open(self) -> None:
        try:
            await trio.to_thread.run_sync(self._open)
        except (IndexUnavailable, sqlite3.Error, OSError) as exc:
            self.unavailable = f"the transcript index cannot be opened: {exc}"
            log.error("%s", self.unavailable)

    def close(self) -> None:
        if self.scanner is not None:
            self.scanner.writer.conn.close()
        if self.reader is not None:
            self.reader.close()
        self.scanner = None
        self.reader = None

    # -- what queries need --------------------------------------------------------------
    def workspaces(self) -> Workspaces:
        facts = self.store_facts
        if self._workspaces is None or self._workspaces[0] is not facts:
            self._workspaces = (facts, facts.workspaces())
        return self._workspaces[1]

    def _prices_stamp(self) -> tuple[float, ...]:
        stamps = []
        for path in (SHIPPED_PRICES, self.ctx.paths.config_dir / PRICES_NAME):
            try:
                stamps.append(os.stat(path).st_mtime)
            except OSError:
                stamps.append(0.0)
        return tuple(stamps)

    def current_prices(self) -> PriceTable:
        stamp = self._prices_stamp()
        if stamp != self._price_stamp:
            self._price_stamp = stamp
            self.prices = load_prices(self.ctx.paths.config_dir)
            log.info("price table reloaded (%d models)", len(self.prices.models))
        return self.prices

    async def _read(self, work: Callable[[sqlite3.Connection], R]) -> R:
        if self.unavailable or self.reader is None:
            raise Unavailable(self.unavailable or "the transcript index is not open yet")
        reader = self.reader
        async with self.read_lock:
            try:
                return await trio.to_thread.run_sync(work, reader)
            except sqlite3.Error as exc:
                raise Internal(f"the transcript index failed: {exc}") from exc

    # -- ops ----------------------------------------------------------------------------
    async def search(self, args: contract.SearchArgs) -> contract.SearchPage:
        workspaces = self.workspaces()
        return await self._read(lambda conn: queries.search(conn, workspaces, args))

    async def usage(self, args: contract.UsageArgs) -> contract.UsageReport:
        with trio.move_on_after(CATCH_UP_WAIT_S):
            await self.caught_up.wait()
        workspaces = self.workspaces()
        prices = self.current_prices()
        return await self._read(lambda conn: queries.usage(conn, workspaces, prices, args))

    async def status(self, _: NoArgs) -> contract.VaultStatus:
        workspaces = self.workspaces()
        return await self._read(
            lambda conn: read_status(
                conn, self.path, workspaces, self.config, self.scans, self.last_scan_ms
            )
        )

    async def rebuild(self, _: NoArgs) -> contract.Rebuilt:
        if self.unavailable or self.scanner is None:
            raise Unavailable(self.unavailable or "the transcript index is not open yet")
        async with self.write_lock, self.read_lock:
            generation = await trio.to_thread.run_sync(self._rebuild)
        self._emit(force=True)
        self.wake.set()
        return contract.Rebuilt(generation=generation)

    def _rebuild(self) -> int:
        assert self.scanner is not None and self.reader is not None
        old = self.scanner.counters()[0]
        self.scanner.writer.conn.close()
        self.reader.close()
        remove_index(self.directory)
        path, conn = open_index(self.directory)
        conn.execute("UPDATE meta SET value = ? WHERE key = 'generation'", (old + 1,))
        # A new scanner: a pass under way sees it changed and stops (``scan_pass``).
        self.scanner = Scanner(conn, self.config.roots, self.config.step_bytes)
        self.scanner.writer.bind(_binding(b) for b in self.bindings.values())
        self.reader = connect(path)
        log.info("index rebuilt: generation %d", old + 1)
        return old + 1

    def handlers(self) -> list[tuple[Op[Any, Any], Callable[[Any], Awaitable[Any]]]]:
        return [
            (contract.SEARCH, self.search),
            (contract.USAGE, self.usage),
            (contract.STATUS, self.status),
            (contract.REBUILD, self.rebuild),
        ]

    # -- events -------------------------------------------------------------------------
    def _emit(self, *, force: bool = False) -> None:
        if self.scanner is None:
            return
        counters = self.scanner.counters()
        now = time.monotonic()
        if counters == self._emitted or (not force and now - self._emitted_at < CHANGED_EVERY_S):
            return
        self._emitted, self._emitted_at = counters, now
        self.ctx.events.emit(contract.VaultChanged(generation=counters[0], revision=counters[1]))

    # -- the scan -----------------------------------------------------------------------
    async def run_scans(self) -> None:
        """A pass now, then one every ``scan_interval_s`` while passes find something,
        twice as far apart after each pass that found nothing (up to ``idle_scan_wait``:
        issue 36, nothing wakes an idle tree), and at once when woken (a session bound,
        an agent's turn settled, a rebuild)."""
        base = self.config.scan_interval_s
        wait = base
        while True:
            found = True
            if self.scanner is not None:
                try:
                    report = await self.scan_pass()
                    found = bool(report.indexed or report.consumed or report.forgotten)
                except (sqlite3.Error, OSError) as exc:
                    log.exception("scan pass failed (%s); retrying at the next interval", exc)
            # A pass that failed, or none (unavailable): answer from what is there.
            self.caught_up.set()
            wait = base if found else min(wait * 2, idle_scan_wait(base))
            with trio.move_on_after(wait):
                await self.wake.wait()
            if self.wake.is_set():
                wait = base
            self.wake = trio.Event()

    def on_status(self, _envelope: Any, event: Any) -> None:
        """An agent's turn settled (or it asks): its transcript has just been written."""
        if isinstance(event, hooks.StatusSet) and event.row.state in SETTLED_STATES:
            self.wake.set()

    async def scan_pass(self) -> PassReport:
        scanner = self.scanner
        assert scanner is not None
        report = PassReport()
        bound = list(self.bound.values())
        async with self.write_lock:
            queue = await trio.to_thread.run_sync(scanner.sources, bound)
        while queue:
            async with self.write_lock:
                if self.scanner is not scanner:
                    return report  # rebuilt meanwhile: the next pass starts over
                await trio.to_thread.run_sync(scanner.step_group, queue, report)
                self._emit()
        self.caught_up.set()
        async with self.write_lock:
            if self.scanner is scanner:
                await trio.to_thread.run_sync(
                    scanner.enforce_budget, self.config.max_entries, self.config.max_text_bytes
                )
        # Usage is answered from what the steps wrote; the full-text table follows, so a
        # first pass over a large history answers ``orca vault usage`` without waiting
        # for the tokenizing. A pass ends once search finds every row it read.
        while True:
            self._emit()
            async with self.write_lock:
                if self.scanner is not scanner:
                    return report
                if not await trio.to_thread.run_sync(scanner.index_text_group):
                    break
        self.scans += 1
        self.last_scan_ms = time.time_ns() // 1_000_000
        self._emit(force=True)
        return report

    # -- mirrors ------------------------------------------------------------------------
    async def follow_bindings(self) -> None:
        mirror: Mirror[dict[hooks.BindingKey, hooks.SessionBinding]] = self.ctx.mirror(
            HOOKS_BINDINGS, consumer="vault<-hooks"
        )
        await mirror.follow(self.take_bindings)

    async def take_bindings(self, state: dict[hooks.BindingKey, hooks.SessionBinding]) -> None:
        fresh = [b for key, b in state.items() if self.bindings.get(key) != b]
        if not fresh:
            return
        self.bindings = dict(state)
        for b in fresh:
            source = bound_source(b.agent, b.transcript_path)
            if source is not None:
                self.bound[source.path] = source
        scanner = self.scanner
        if scanner is not None:
            async with self.write_lock:
                await trio.to_thread.run_sync(scanner.writer.bind, [_binding(b) for b in fresh])
            self._emit(force=True)
        self.wake.set()  # a bound session is being written now: look at once

    async def follow_store(self) -> None:
        mirror: Mirror[StoreFacts] = Mirror(
            client=self.ctx.connect("store"),
            pub_endpoint=self.ctx.paths.ipc_endpoint("store", "pub"),
            snapshot=store.STATE_SNAPSHOT,
            events=FOLLOWED,
            load=load_store_facts,
            apply=apply_store_event,
            consumer="vault<-store",
        )
        await mirror.follow(self.take_store_facts)

    async def take_store_facts(self, facts: StoreFacts) -> None:
        self.store_facts = facts


def _binding(b: hooks.SessionBinding) -> Binding:
    return Binding(
        b.agent, b.session_id, b.transcript_path, b.pane_key, b.tab_id, b.worktree_id, b.bound_at_ms
    )


async def setup(ctx: ActorContext) -> None:
    if ctx.may_sleep:
        # Nothing reads the index until asked (`orca vault`, a UI, orch, a remote
        # client): started then, the first pass catches up on what was written since.
        raise Dormant("nothing asked for yet")
    actor = VaultActor(ctx, load_config(ctx.paths.config_dir))
    await actor.open()
    for op, handler in actor.handlers():
        ctx.rpc.register(op, handler, concurrent=op is not contract.REBUILD)
    ctx.rpc.extra_stats = lambda: {
        "vault": {
            "scans": actor.scans,
            "lastScanMs": actor.last_scan_ms,
            "unavailable": actor.unavailable,
        }
    }
    ctx.nursery.start_soon(actor.run_scans)
    status = Subscriber(
        ctx.paths.ipc_endpoint(hooks.CONTRACT.actor, "pub"),
        [hooks.STATUS_SET],
        actor.on_status,
        consumer="vault<-hooks status",
    )
    ctx.nursery.start_soon(status.run)
    ctx.nursery.start_soon(actor.follow_bindings)
    ctx.nursery.start_soon(actor.follow_store)

    async def stop() -> None:
        async with actor.write_lock, actor.read_lock:
            actor.close()

    ctx.on_stop(stop)
    if not actor.unavailable:
        log.info("vault: index %s, roots %s", actor.path, actor.config.roots)
