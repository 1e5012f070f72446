"""ptyd's half of the PTY-binding reconciliation: tell ``store`` what runs (issue 13).

The split and its reasons are in ``actors/store/pty_bindings.py``: after every start
ptyd sends its truth - the session ids it runs (and their aliases from before a
rename), and the ended ones whose history it keeps, with exit codes (-1 unknown:
lost) - as ``session.reconcile_ptys``; ``store`` marks its saved bindings. ptyd never
reads or writes a binding. Sent in the background, retrying with backoff while the
store is down, so it never delays ptyd's start or any terminal.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import trio

from actors.ptyd.archive import EndedSession
from actors.ptyd.retire import CATCH_UP_FIRST_RETRY_S, CATCH_UP_MAX_RETRY_S, CATCH_UP_TIMEOUT_S
from actors.ptyd.session import Session
from orca.actor import RpcClient
from orca.contracts import store
from orca.wire.errors import OrcaError

log = logging.getLogger(__name__)


def ptyd_truth(
    sessions: Iterable[Session], aliases: dict[str, str], archived: Iterable[EndedSession]
) -> tuple[list[str], dict[str, int]]:
    """(running ids, ended id -> exit code) as ``session.reconcile_ptys`` takes them."""
    running: set[str] = set()
    ended: dict[str, int] = {}
    for s in sessions:
        if s.exited.is_set():
            ended[s.session_id] = -1 if s.info.exit_code is None else s.info.exit_code
        else:
            running.add(s.session_id)
    for old, new in aliases.items():
        if new in running:
            running.add(old)
        elif new in ended:
            ended[old] = ended[new]
    for entry in archived:
        code = entry.info.exit_code
        ended.setdefault(entry.info.session_id, -1 if code is None else code)
    return sorted(running), ended


async def reconcile_with_store(
    client: RpcClient, host_id: str, running: list[str], ended: dict[str, int]
) -> store.PtysReconciled:
    """Send ptyd's truth to the store; retries with backoff until it answers."""
    args = store.ReconcilePtysArgs(host_id=host_id, running=running, ended=ended)
    delay = CATCH_UP_FIRST_RETRY_S
    while True:
        try:
            result = await client.invoke(
                store.SESSION_RECONCILE_PTYS, args, timeout=CATCH_UP_TIMEOUT_S
            )
        except OrcaError as exc:
            log.info("binding reconciliation: no answer from store (%s); retrying", exc)
        else:
            if result.exited or result.gone:
                log.info(
                    "saved pane bindings: %d to exited terminals, %d to terminals gone",
                    result.exited,
                    result.gone,
                )
            return result
        await trio.sleep(delay)
        delay = min(delay * 2, CATCH_UP_MAX_RETRY_S)
