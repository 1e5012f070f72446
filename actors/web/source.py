"""The board, kept current: the actors' events say *when*, their snapshots say *what*.

The web actor follows hooks (status rows and permission requests), ptyd (sessions
spawned, exited, closed, re-keyed: never the output flood) and gitwatch (worktrees);
any of their events marks the board stale, and the refresher then reads the same
snapshots ``orca worktree ps`` reads (``agentStatus.snapshot``, ``term.list``) plus
gitwatch's worktree list, hooks' pending permission requests and the store's
automations (issue 38; their events are followed too), all at once, and
projects them (:func:`actors.web.board.project_board`). A burst of events costs one
refresh (``DEBOUNCE_S``). Nothing is folded by hand, so nothing can drift from what the
snapshot says; a lost event costs at most ``REFRESH_S`` (the board is also refreshed
that often, which also moves the display decay along).

An actor that does not answer keeps its part of the last board (and is named in
``down``), as ``orca ui`` keeps showing what it last saw.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import trio

from actors.web.board import project_automations, project_board
from orca.actor import ActorContext
from orca.actor.subscriber import Subscriber
from orca.contracts import gitwatch, hooks, ptyd, store
from orca.contracts.base import EventSpec
from orca.wire.envelope import Event
from orca.wire.errors import OrcaError

log = logging.getLogger(__name__)

DEBOUNCE_S = 0.05
REFRESH_S = 5.0
CALL_TIMEOUT_S = 2.0
FOLLOWED: dict[str, tuple[EventSpec[Any], ...]] = {
    "hooks": (*hooks.EVENTS, *hooks.PERMISSION_EVENTS),
    "ptyd": (ptyd.SPAWNED, ptyd.CLOSED, ptyd.EXIT, ptyd.REKEYED),
    "gitwatch": tuple(gitwatch.CONTRACT.events.values()),
    # Issue 38: automations and their firings, as orch records them in the store.
    "store": (store.AUTOMATION_CHANGED, store.AUTOMATION_RUN_RECORDED),
}


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


class BoardSource:
    """The current board (``board``), its ``version`` and a way to wait for the next."""

    def __init__(self, ctx: ActorContext, clock_ms: Callable[[], int] = wall_ms) -> None:
        self._ctx = ctx
        self._clock_ms = clock_ms
        self._stale = trio.Event()
        self._changed = trio.Event()
        self.version = 0
        self.board: dict[str, Any] = {"worktrees": [], "permissions": [], "needsYou": 0}
        self._parts: dict[str, Any] = {
            "snapshot": hooks.Snapshot(epoch="", seq=0, rev=0, rows=[], fates=[]),
            "sessions": None,
            "worktrees": [],
            "pending": [],
            "automations": None,
        }
        self.down: list[str] = []

    @property
    def worktrees(self) -> list[gitwatch.WorktreeRow]:
        """gitwatch's worktree rows as last read."""
        return list(self._parts["worktrees"])

    def poke(self) -> None:
        """Wake every open page's socket now (a device was revoked: each re-checks its
        own credential, and the one revoked is closed at once)."""
        self.version += 1
        self._changed.set()
        self._changed = trio.Event()

    def mark_stale(self, *_: object) -> None:
        self._stale.set()

    async def wait_changed(self, seen: int) -> int:
        """Wait until the board's version is past ``seen``; the new version."""
        while self.version <= seen:
            await self._changed.wait()
        return self.version

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            for actor, specs in FOLLOWED.items():
                sub = Subscriber(
                    self._ctx.paths.ipc_endpoint(actor, "pub"),
                    specs,
                    self._on_event,
                    consumer=f"web<-{actor}",
                    on_other=self._on_other,
                )
                await nursery.start(sub.run)
            await self.refresh()
            task_status.started()
            while True:
                with trio.move_on_after(REFRESH_S):
                    await self._stale.wait()
                    await trio.sleep(DEBOUNCE_S)
                self._stale = trio.Event()
                await self.refresh()

    def _on_event(self, _envelope: Event, _data: Any) -> None:
        self._stale.set()

    def _on_other(self, event: Event) -> None:
        if event.seq == 0:  # a heartbeat of a publisher that just started
            self._stale.set()

    async def refresh(self) -> None:
        """Read the snapshots at once; project; publish if anything changed."""
        calls = {
            "snapshot": ("hooks", hooks.SNAPSHOT, None),
            "sessions": ("ptyd", ptyd.LIST, ptyd.ListArgs(history=True)),
            "worktrees": ("gitwatch", gitwatch.WORKTREE_LIST, gitwatch.ListArgs()),
            "pending": ("hooks", hooks.PERMISSION_SNAPSHOT, None),
            "automations": ("store", store.AUTOMATION_LIST, None),
        }
        down: set[str] = set()

        async def fetch(part: str, actor: str, op: Any, args: Any) -> None:
            try:
                result = await self._ctx.connect(actor).invoke(op, args, timeout=CALL_TIMEOUT_S)
            except OrcaError as exc:
                log.debug("board: %s did not answer %s: %s", actor, op.name, exc)
                down.add(actor)
                return
            self._parts[part] = {
                "snapshot": lambda r: r,
                "sessions": lambda r: r.sessions,
                "worktrees": lambda r: r.worktrees,
                "pending": lambda r: r.pending,
                "automations": lambda r: r,
            }[part](result)

        async with trio.open_nursery() as nursery:
            for part, (actor, op, args) in calls.items():
                nursery.start_soon(fetch, part, actor, op, args)
        if "ptyd" in down:
            self._parts["sessions"] = None  # no facts: rows are shown as hooks holds them
        board = project_board(
            self._parts["snapshot"],
            self._parts["sessions"],
            self._parts["worktrees"],
            self._parts["pending"],
            self._clock_ms(),
        )
        board["automations"] = project_automations(self._parts["automations"])
        board["down"] = sorted(down)
        if _without_clock(board) != _without_clock(self.board):
            self.board = board
            self.version += 1
            self._changed.set()
            self._changed = trio.Event()
        else:
            self.board = board  # the ages moved on; pages are refreshed on real changes


def _without_clock(board: dict[str, Any]) -> Any:
    """The board minus what changes with the clock alone (ages, generation time)."""
    worktrees = [
        {**w, "agents": [{k: v for k, v in a.items() if k != "ageMs"} for a in w["agents"]]}
        for w in board.get("worktrees", [])
    ]
    return {**board, "worktrees": worktrees, "generatedAtMs": None}
