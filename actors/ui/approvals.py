"""``orca ui``'s side of phone approvals (issue 27): see and answer a held permission.

hooks holds an agent's PermissionRequest hook until the first answer (docs/web.md);
``orca ui`` is one of the places that may give it, without typing into the agent's
PTY. This module keeps a mirror of the pending requests (hooks' ``permission.snapshot``
and its ``permission.*`` events, ``orca.actor.Mirror``: the Clone pattern every reader
uses), says in the status bar what waits (:meth:`Approvals.status_text`), and offers
a palette command per request that asks approve / deny (:func:`answer_dialog`) and
answers through hooks' ``permission.answer`` (``by: ui``). Whoever answers first wins:
a late answer here is told what the first one was.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import trio

from actors.ui.dialogs import ChoiceScreen
from orca.actor import Mirror, RpcClient
from orca.contracts import hooks
from orca.paths import OrcaPaths

CONSUMER = "ui<-hooks permissions"
ANSWERED_BY = "ui"


class Approvals:
    """The pending permission requests, as hooks holds them."""

    def __init__(self, paths: OrcaPaths, client: RpcClient, on_change: Callable[[], None]) -> None:
        self._client = client
        self._on_change = on_change
        self.mirror: Mirror[dict[str, hooks.PermissionRequest]] = Mirror(
            client=client,
            pub_endpoint=paths.ipc_endpoint("hooks", "pub"),
            snapshot=hooks.PERMISSION_SNAPSHOT,
            events=hooks.PERMISSION_EVENTS,
            load=hooks.load_permissions,
            apply=hooks.apply_permissions,
            consumer=CONSUMER,
            topics=[e.type for e in hooks.PERMISSION_EVENTS],
        )

    @property
    def pending(self) -> list[hooks.PermissionRequest]:
        requests = self.mirror.state or {}
        return sorted(requests.values(), key=lambda r: (r.created_at_ms, r.request_id))

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(self.mirror.run)
                task_status.started()
                while True:
                    self._on_change()
                    seen = (self.mirror.snapshots, self.mirror.applied)
                    await self.mirror.wait_until(partial(_moved_since, seen))
        finally:
            self.mirror.close()  # its SUB socket, before the UI's zmq context goes

    def status_text(self, names: Callable[[str], str]) -> str:
        """The status bar's line: what waits for an answer (``names``: pane → handle)."""
        pending = self.pending
        if not pending:
            return ""
        first = pending[0]
        more = f" (+{len(pending) - 1})" if len(pending) > 1 else ""
        what = f"{first.tool_name} {first.summary}".strip()
        return f"asks: {names(first.pane_key)} {what}{more} · p: answer"

    async def answer(self, request_id: str, behavior: hooks.PermissionBehavior) -> str:
        """Answer; what happened, in words (the first answer may have been another's)."""
        args = hooks.AnswerPermissionArgs(request_id=request_id, behavior=behavior, by=ANSWERED_BY)
        answered = await self._client.invoke(hooks.ANSWER_PERMISSION, args)
        settlement = answered.settlement
        if answered.outcome == "decided":
            return f"{behavior} sent"
        return f"already answered: {settlement.outcome} by {settlement.by}"


def _moved_since(seen: tuple[int, int], mirror: Mirror[Any]) -> bool:
    return (mirror.snapshots, mirror.applied) != seen


def answer_dialog(request: hooks.PermissionRequest, name: str) -> ChoiceScreen[Any]:
    """Approve or deny one request (Esc: leave it; the agent's own prompt stays)."""
    return ChoiceScreen(
        f"{name} wants to run {request.tool_name or 'a tool'}",
        [("a", "approve", "allow"), ("d", "deny", "deny")],
        default=None,
        cancel=None,
        details=request.summary or "(no details)",
    )
