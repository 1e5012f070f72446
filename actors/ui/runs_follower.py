"""orch's client for ``orca ui``: the run view's calls, and who hears ``run.changed``
(and ``auto.changed``/``auto.fired``: the automations listed beside the runs).

:class:`RunsFollower` runs in the backend (trio side) for the UI's whole life, holding
the orch client and a subscription to ``run.changed``; it reads nothing itself. It
tells its listeners (an open run view) which run moved, and every run after orch
(re)started (a new epoch on its heartbeat). An orch that is not running costs nothing
but a connecting socket; its calls fail with the client's timeout.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from orca.actor import RpcClient, open_rpc_client
from orca.actor.subscriber import Subscriber
from orca.contracts import orch
from orca.paths import OrcaPaths
from orca.wire.envelope import Event
from orca.wire.errors import OrcaError

CALL_TIMEOUT_S = 5.0
# A merge waits on orch, which waits on gitwatch (a preview, the merge, a checkout's
# fast-forward of a big repo).
MERGE_TIMEOUT_S = 120.0
# A check runs the run's command in every worktree (a test suite, say).
CHECK_TIMEOUT_S = 600.0
Listener = Callable[[str], None]  # the run that changed ("" : any, re-read them all)


class RunsFollower:
    def __init__(self, paths: OrcaPaths) -> None:
        self.paths = paths
        self.client: RpcClient | None = None
        self.listeners: set[Listener] = set()
        self._epoch: str | None = None
        self.heard = 0  # run.changed events seen (tests wait on it)

    async def run(self) -> None:
        endpoint = self.paths.ipc_endpoint(orch.CONTRACT.actor, "rpc")
        async with (
            open_rpc_client(endpoint, timeout=CALL_TIMEOUT_S) as client,
            trio.open_nursery() as nursery,
        ):
            self.client = client
            changes = Subscriber(
                self.paths.ipc_endpoint(orch.CONTRACT.actor, "pub"),
                (orch.CHANGED, orch.AUTO_CHANGED, orch.AUTO_FIRED),
                self._heard,
                consumer="ui<-orch",
                on_other=self._first_heartbeat,
            )
            nursery.start_soon(changes.run)
            await trio.sleep_forever()

    def _tell(self, run: str) -> None:
        for listener in list(self.listeners):
            listener(run)

    def _heard(self, _event: Event, data: Any = None) -> None:
        self.heard += 1
        self._tell(data.run if isinstance(data, orch.RunChanged) else "")

    def _first_heartbeat(self, event: Event) -> None:
        """An orch that (re)started: what the screen shows may be stale."""
        if event.epoch != self._epoch:
            self._tell("")
        self._epoch = event.epoch

    def _client(self) -> RpcClient:
        if self.client is None:
            raise OrcaError("orch is not reachable yet")
        return self.client

    async def list(self) -> orch.RunList:
        runs: orch.RunList = await self._client().invoke(orch.LIST)
        return runs

    async def automations(self) -> orch.AutoList:
        listed: orch.AutoList = await self._client().invoke(orch.AUTO_LIST)
        return listed

    async def show(self, run: str) -> orch.RunInfo:
        info: orch.RunInfo = await self._client().invoke(orch.SHOW, orch.RunArgs(run=run))
        return info

    async def merge(self, run: str, variant: str, mode: orch.MergeMode) -> orch.Merged:
        args = orch.MergeArgs(run=run, variant=variant, mode=mode)
        merged: orch.Merged = await self._client().invoke(orch.MERGE, args, timeout=MERGE_TIMEOUT_S)
        return merged

    async def check(self, run: str, variant: str | None) -> orch.RunInfo:
        args = orch.CheckArgs(run=run, variant=variant)
        info: orch.RunInfo = await self._client().invoke(orch.CHECK, args, timeout=CHECK_TIMEOUT_S)
        return info
