"""After a reboot, agents that were running resume in their panes (issue 34).

A reboot (or ptyd and the keeper killed together) ends every PTY without an exit code:
ptyd's history archive marks those sessions ``lost``. With ``resume_on_start = true``
in ``ptyd.toml``, ptyd, once started, starts each lost agent again in its own pane (its
tab and layout place), worktree and folder, on its own conversation: the resume command
of ``orca.views.resume`` with the session id hooks bound to the pane. It is ptyd's job,
not ``orca up``'s, so a service unit that starts orcad at boot brings the fleet back
with nobody typing anything.

Only the newest session of a pane is considered, and only when it was lost: a pane the
user ended on purpose (an exit code, ``/exit``, ``orca term close``) stays ended, and a
pane already started again (resumed, re-run) is left as it is. A pane whose agent is
unknown, or whose CLI has no resume, is logged and left for ``orca term resume
--rerun``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

import trio

from orca.actor import RpcClient
from orca.contracts import hooks
from orca.contracts import ptyd as contract
from orca.contracts.base import NoArgs
from orca.views.resume import panes_to_resume, plans
from orca.wire.errors import OrcaError

log = logging.getLogger(__name__)

# How long ptyd waits for hooks (started beside it) to name the panes' sessions.
BINDINGS_PATIENCE_S = 60.0
BINDINGS_TIMEOUT_S = 5.0


async def _bindings(client: RpcClient) -> list[hooks.SessionBinding] | None:
    with trio.move_on_after(BINDINGS_PATIENCE_S):
        while True:
            try:
                answer = await client.invoke(
                    hooks.SESSION_BINDINGS, NoArgs(), timeout=BINDINGS_TIMEOUT_S
                )
                return list(answer.bindings)
            except OrcaError:
                await trio.sleep(1.0)
    return None


async def resume_lost_agents(
    live: Sequence[contract.SessionRow],
    archived: Sequence[contract.SessionRow],
    hooks_client: RpcClient,
    spawn: Callable[[contract.SpawnArgs], Awaitable[contract.SpawnResult]],
) -> int:
    """Start every lost agent again in its pane; how many were started."""
    lost = panes_to_resume(live, archived)
    if not lost:
        return 0
    bindings = await _bindings(hooks_client)
    if bindings is None:
        log.error("resume_on_start: hooks did not name the panes' sessions; nothing resumed")
        return 0
    started = 0
    for row, argv, refusal in plans(lost, bindings):
        if refusal:
            log.info("resume_on_start: pane %s not resumed: %s", row.pane_key, refusal)
            continue
        args = contract.SpawnArgs(
            argv=argv,
            cwd=row.cwd,
            worktree_id=row.worktree_id,
            cols=row.cols,
            rows=row.rows,
            pane_key=row.pane_key,
        )
        try:
            await spawn(args)
        except OrcaError as exc:
            log.error("resume_on_start: pane %s: %s", row.pane_key, exc)
            continue
        started += 1
        log.info("resume_on_start: pane %s resumed: %s", row.pane_key, " ".join(argv))
    return started
